package sessionstop

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

func getenv(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestWhy(t *testing.T) {
	dir := t.TempDir()
	vars := Vars(dir)
	if Why(getenv(vars)) != "" {
		t.Fatalf("a running session of a live owner is ending: %q", Why(getenv(vars)))
	}
	if Why(getenv(nil)) != "" {
		t.Errorf("outside a night's session the hook thinks it is ending")
	}
	if err := Announce(dir); err != nil {
		t.Fatal(err)
	}
	if why := Why(getenv(vars)); !strings.Contains(why, "stopping") {
		t.Errorf("after Announce: %q, want the session said to be stopping", why)
	}
	if fi, err := os.Stat(dir + "/stopping"); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0) {
		t.Errorf("the marker: %v, %v; want an owner-only file", fi, err)
	}

	// An owner that has exited (a worker SIGKILLed).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	proc.Prepare(cmd, time.Second)
	if err := proc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start := proc.StartID(pid)
	_ = proc.Wait(cmd)
	gone := map[string]string{OwnerEnv: strconv.Itoa(pid) + ":" + start}
	if why := Why(getenv(gone)); !strings.Contains(why, "gone") {
		t.Errorf("owner %d exited: %q, want it said gone", pid, why)
	}
	// A live pid that started at another time is another process.
	other := map[string]string{OwnerEnv: strconv.Itoa(os.Getpid()) + ":1"}
	if why := Why(getenv(other)); !strings.Contains(why, "gone") {
		t.Errorf("a reused pid: %q, want the owner said gone", why)
	}
	for _, bad := range []string{"", "x", "-3:1", "0"} {
		if why := Why(getenv(map[string]string{OwnerEnv: bad})); why != "" {
			t.Errorf("owner %q: %q, want nothing said", bad, why)
		}
	}
}
