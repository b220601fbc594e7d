package batchlock

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Environment of the lock helper process.
const (
	lockHelperEnvDir  = "NW_LOCK_HELPER_DIR"
	lockHelperEnvMode = "NW_LOCK_HELPER_MODE" // hold | try
)

// TestLockHelperProcess is not a test: it is the other process of the
// lock tests, the test binary started again with an environment switch.
// (A named helper test rather than TestMain, so that the other files of
// the package stay free to have their own process switches.)
//
//	hold: take the lock, print "locked", keep it until stdin closes
//	try:  try the lock, print "locked" or "refused pid=N"
func TestLockHelperProcess(t *testing.T) {
	dir := os.Getenv(lockHelperEnvDir)
	if dir == "" {
		return
	}
	unlock, err := Take(dir, "nightly")
	var le *LockedError
	switch {
	case errors.As(err, &le):
		fmt.Printf("refused pid=%d\n", le.PID)
		os.Exit(0)
	case err != nil:
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	if os.Getenv(lockHelperEnvMode) == "hold" {
		_, _ = io.Copy(io.Discard, os.Stdin)
	}
	unlock()
	os.Exit(0)
}

// lockTestStart runs the helper in mode and returns it with its first
// output line.
func lockTestStart(t *testing.T, dir, mode string) (*exec.Cmd, io.WriteCloser, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
	cmd.Env = append(os.Environ(), lockHelperEnvDir+"="+dir, lockHelperEnvMode+"="+mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("helper (%s) said nothing: %v", mode, err)
	}
	// Keep draining, so the helper never blocks on a full pipe.
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return cmd, stdin, strings.TrimSpace(line)
}

func TestLockBatchSecondProcessIsRefusedWithPID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	holder, release, line := lockTestStart(t, dir, "hold")
	if line != "locked" {
		t.Fatalf("holder: %q", line)
	}
	holderPID := holder.Process.Pid

	// Another process is refused and told who holds the lock.
	_, _, line = lockTestStart(t, dir, "try")
	if want := fmt.Sprintf("refused pid=%d", holderPID); line != want {
		t.Errorf("second process: %q, want %q", line, want)
	}
	// So is this one.
	unlock, err := Take(dir, "nightly")
	if err == nil {
		unlock()
		t.Fatal("Take succeeded while another process holds the lock")
	}
	var le *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &le) || le.PID != holderPID {
		t.Fatalf("err = %v, want ErrLocked naming pid %d", err, holderPID)
	}
	if !strings.Contains(err.Error(), strconv.Itoa(holderPID)) {
		t.Errorf("message %q does not name the pid", err)
	}

	// The holder lets go; the lock is free and records the new holder.
	release.Close()
	if err := holder.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	unlock, err = Take(dir, "nightly")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	pidFile := filepath.Join(dir, "nightly.lock.pid")
	if b, err := os.ReadFile(pidFile); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("pid file = %q, %v; want %d", b, err, os.Getpid())
	}
	fi, err := os.Stat(filepath.Join(dir, "nightly.lock"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	unlock()
	unlock() // idempotent
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("pid file left after unlock: %v", err)
	}
}

// TestLockBatchFreeAfterSIGKILL: a supervisor killed outright must not
// leave a lock behind, or the next night would never start.
func TestLockBatchFreeAfterSIGKILL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	holder, _, line := lockTestStart(t, dir, "hold")
	if line != "locked" {
		t.Fatalf("holder: %q", line)
	}
	if err := holder.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = holder.Wait()
	// Take never waits for a lock (it tries once), so its success is
	// the proof that the kernel freed the lock with its holder.
	unlock, err := Take(dir, "nightly")
	if err != nil {
		t.Fatalf("lock still held after its holder was SIGKILLed: %v", err)
	}
	defer unlock()
	pidFile := filepath.Join(dir, "nightly.lock.pid")
	if b, err := os.ReadFile(pidFile); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("pid file = %q, %v; want the new holder %d", b, err, os.Getpid())
	}
}

func TestLockBatchSameProcessTwice(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	unlock, err := Take(dir, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	// flock(2) locks belong to an open file, so a second start inside
	// this process (a daemon tick while a run is going) is refused too.
	var le *LockedError
	if _, err := Take(dir, "nightly"); !errors.As(err, &le) || le.PID != os.Getpid() {
		t.Errorf("second lock in the same process: %v", err)
	}
	// Another batch has its own lock.
	other, err := Take(dir, "weekly")
	if err != nil {
		t.Errorf("another batch: %v", err)
	} else {
		other()
	}
	unlock()
	again, err := Take(dir, "nightly")
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	again()

	for _, bad := range []string{"", "..", "a/b"} {
		if _, err := Take(dir, bad); err == nil || errors.Is(err, ErrLocked) {
			t.Errorf("Take(%q) = %v, want an invalid-name error", bad, err)
		}
	}
}

// The batch's lock file planted as a symlink is refused: flock's O_CREATE
// would create (or open) the link's target.
func TestLockBatchRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "not-yet")
	if err := os.Symlink(target, filepath.Join(dir, "nightly.lock")); err != nil {
		t.Fatal(err)
	}
	if unlock, err := Take(dir, "nightly"); err == nil {
		unlock()
		t.Fatal("Take locked through a symlink")
	}
	if _, err := os.Lstat(target); err == nil {
		t.Error("Take created the link's target")
	}
}
