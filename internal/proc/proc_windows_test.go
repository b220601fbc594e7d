//go:build windows

package proc

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary play the processes of the tests: with
// NW_PROC_ROLE=parent it starts itself as a sleeping grandchild (a plain
// exec: the grandchild is in whatever Job Object the parent is), prints the
// grandchild's pid and sleeps; with NW_PROC_ROLE=sleep it sleeps. Ten
// minutes, far past any wait of the tests: a process gone within them was
// killed, it did not end by itself.
func TestMain(m *testing.M) {
	switch os.Getenv("NW_PROC_ROLE") {
	case "parent":
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), "NW_PROC_ROLE=sleep")
		if err := gc.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		fmt.Println(gc.Process.Pid)
		time.Sleep(10 * time.Minute)
		os.Exit(0)
	case "sleep":
		time.Sleep(10 * time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestJobKillsTheTree: cancelling a prepared command ends it and the
// grandchild it started, through the Job Object, within the grace.
func TestJobKillsTheTree(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), "NW_PROC_ROLE=parent")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	Prepare(cmd, 500*time.Millisecond)
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	if _, ok := jobs.Load(cmd); !ok {
		t.Fatal("the child is in no Job Object")
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read the grandchild's pid: %v", err)
	}
	gc, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("grandchild pid %q", line)
	}
	if !Alive(gc) {
		t.Fatal("the grandchild is not running")
	}
	// The cancel, not the child's own end (ten minutes away), must end
	// Wait; two minutes of waiting is a hang, not a slow machine.
	cancel()
	waited := make(chan struct{})
	go func() { _ = Wait(cmd); close(waited) }()
	select {
	case <-waited:
	case <-time.After(2 * time.Minute):
		_ = KillGroupID(gc)
		_ = cmd.Process.Kill()
		t.Fatal("Wait hung after the cancel: the Job Object did not end the child")
	}
	deadline := time.Now().Add(time.Minute) // only a survivor runs it out
	for Alive(gc) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if Alive(gc) {
		_ = KillGroupID(gc)
		t.Error("the grandchild outlived its group")
	}
}
