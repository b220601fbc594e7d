//go:build unix

package awake

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCommand(t *testing.T) {
	cases := []struct {
		goos string
		want []string
	}{
		{"darwin", []string{"caffeinate", "-i", "-w", "42"}},
		{"linux", []string{"systemd-inhibit", "--what=sleep:idle", "--who=nightwatch", "--why=night batch x",
			"--mode=block", "sleep", "infinity"}},
		{"windows", nil},
		{"freebsd", nil},
	}
	for _, c := range cases {
		if got := Command(c.goos, "night batch\nx", 42); !slices.Equal(got, c.want) {
			t.Errorf("Command(%s) = %q, want %q", c.goos, got, c.want)
		}
	}
}

// alive reports whether pid runs (a zombie no one reaped counts as gone).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) || runtime.GOOS != "linux"
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) == 0 || f[0] != "Z"
}

func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d still runs", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// standIn puts a fake inhibitor named name in a temp dir: it records its
// argv, starts a child (as systemd-inhibit starts its command) and waits.
// It returns the platform that finds it and the files it writes.
func standIn(t *testing.T, goos, name, body string) (platform, string) {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, name)
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	p := platform{goos: goos, pid: os.Getpid(), lookPath: func(n string) (string, error) {
		if n == name {
			return script, nil
		}
		return "", exec.ErrNotFound
	}}
	return p, dir
}

const recordAndWait = `d=$(dirname "$0")
printf '%s\n' "$@" > "$d/args"
echo $$ > "$d/pid"
sleep 300 &
echo $! > "$d/child"
wait
`

func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if n, e := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && e == nil {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHoldLifecycle(t *testing.T) {
	for _, goos := range []string{"linux", "darwin"} {
		name := Command(goos, "", 0)[0]
		for _, end := range []string{"release", "context"} {
			t.Run(goos+"/"+end, func(t *testing.T) {
				p, dir := standIn(t, goos, name, recordAndWait)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				release, how, err := hold(ctx, "night batch demo", p)
				if err != nil {
					t.Fatalf("hold: %v (%s)", err, how)
				}
				pid, child := readPid(t, filepath.Join(dir, "pid")), readPid(t, filepath.Join(dir, "child"))
				if !strings.Contains(how, "kept awake by "+strings.Join(Command(goos, "night batch demo", p.pid), " ")) ||
					!strings.Contains(how, "pid "+strconv.Itoa(pid)) {
					t.Errorf("how = %q", how)
				}
				args, _ := os.ReadFile(filepath.Join(dir, "args"))
				if got, want := strings.Split(strings.TrimSpace(string(args)), "\n"), Command(goos, "night batch demo", p.pid)[1:]; !slices.Equal(got, want) {
					t.Errorf("argv %q, want %q", got, want)
				}
				time.Sleep(100 * time.Millisecond)
				if !alive(pid) || !alive(child) {
					t.Fatalf("the inhibitor is not running while held")
				}
				if end == "release" {
					release()
					release() // twice is fine
				} else {
					cancel()
				}
				waitGone(t, pid, child)
				release()
			})
		}
	}
}

func TestHoldFailsAtOnce(t *testing.T) {
	p, _ := standIn(t, "linux", "systemd-inhibit", "echo 'Failed to connect to bus: No such file or directory' >&2\nexit 1\n")
	release, how, err := hold(context.Background(), "x", p)
	defer release()
	if err == nil || !strings.Contains(err.Error(), "Failed to connect to bus") || !strings.HasPrefix(how, "not kept awake: systemd-inhibit exited at once") {
		t.Errorf("err %v, how %q", err, how)
	}
}

func TestHoldWithoutInhibitor(t *testing.T) {
	cases := []struct {
		p    platform
		want string
	}{
		{platform{goos: "windows", lookPath: exec.LookPath}, "no sleep inhibitor on windows"},
		{platform{goos: "linux", lookPath: func(string) (string, error) { return "", exec.ErrNotFound }}, "systemd-inhibit not found"},
	}
	for _, c := range cases {
		release, how, err := hold(context.Background(), "x", c.p)
		if err != nil || !strings.Contains(how, c.want) || !strings.HasPrefix(how, "not kept awake") {
			t.Errorf("%s: how %q err %v, want %q", c.p.goos, how, err, c.want)
		}
		release()
	}
}

// TestHoldThisMachine holds the real inhibitor of this machine. In a
// container without a system bus systemd-inhibit exits at once: Hold must
// then say so with the tool's own message, not claim the machine is kept
// awake.
func TestHoldThisMachine(t *testing.T) {
	release, how, err := Hold(context.Background(), "nightwatch awake test")
	defer release()
	t.Logf("how: %s (err %v)", how, err)
	argv := Command(runtime.GOOS, "", 0)
	if argv == nil {
		if err != nil || !strings.Contains(how, "no sleep inhibitor") {
			t.Errorf("how %q err %v", how, err)
		}
		return
	}
	if _, lerr := exec.LookPath(argv[0]); lerr != nil {
		if !strings.Contains(how, argv[0]+" not found") {
			t.Errorf("how %q, want %s not found", how, argv[0])
		}
		return
	}
	if err != nil {
		// Real failure of the real tool: it must be named.
		if !strings.Contains(how, argv[0]+" exited at once") {
			t.Errorf("how %q", how)
		}
		return
	}
	if !strings.HasPrefix(how, "kept awake by "+argv[0]) {
		t.Errorf("how %q", how)
	}
}
