package proc

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startDetached runs a shell that starts `sleep 300` in a session of its own
// (setsid, so the group kill cannot reach it) and prints its pid, then exits.
func startDetached(t *testing.T, prepare func(*exec.Cmd, time.Duration)) (cmd *exec.Cmd, detached int) {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Fatalf("setsid is needed to test a process that leaves its group: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	cmd = exec.CommandContext(ctx, "sh", "-c", `setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	prepare(cmd, 200*time.Millisecond)
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read the detached pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("detached pid %q: %v", line, err)
	}
	t.Cleanup(func() { _ = killPid(pid) })
	// The shell may exit before setsid has run: wait until the process
	// leads a session of its own, so only the spawn mark can find it.
	deadline := time.Now().Add(time.Minute) // a busy machine; only a stuck shell runs it out
	for sessionOf(pid) != pid {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never left its owner's session (session %d)", pid, sessionOf(pid))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd, pid
}

// sessionOf reads the session id of pid from /proc (-1 if unknown).
func sessionOf(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 4 {
		return -1
	}
	sid, err := strconv.Atoi(fields[3])
	if err != nil {
		return -1
	}
	return sid
}

func killPid(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// alive reports whether pid is a live process (not gone, not a zombie).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

func waitGone(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return !alive(pid)
}

func TestWaitKillsADescendantThatLeftTheGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("escaped descendants are found through /proc, which only Linux has; the README says what remains elsewhere")
	}
	cmd, pid := startDetached(t, Prepare)
	if !alive(pid) {
		t.Fatalf("detached sleep %d is not running", pid)
	}
	_ = Wait(cmd)
	if !waitGone(pid, time.Minute) { // it sleeps 300 s: gone within the minute is killed
		t.Fatalf("detached sleep %d outlived its owner's Wait", pid)
	}
}

func TestAllowDaemonsLeavesADetachedProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	t.Setenv(SpawnEnv, "outer-owner") // as inside a night's session
	cmd, pid := startDetached(t, PrepareAllowDaemons)
	_ = Wait(cmd)
	time.Sleep(100 * time.Millisecond)
	if !alive(pid) {
		t.Fatalf("a daemon started by an allow-daemons command (pid %d) was killed", pid)
	}
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if hasMark(environ, "outer-owner") {
		t.Errorf("the daemon inherited its starter's spawn mark: it would die with the session")
	}
}

func TestMarksNest(t *testing.T) {
	t.Setenv(SpawnEnv, "night")
	cmd := exec.Command("true")
	cmd.Env = []string{"PATH=/usr/bin:/bin", SpawnEnv + "=ignored-explicit"}
	mark(cmd)
	id := takeMark(cmd)
	var got string
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, SpawnEnv+"="); ok {
			got = v
		}
	}
	// An explicit environment's own mark wins over this process's: it is
	// what the caller hands down.
	if got != "ignored-explicit,"+id {
		t.Errorf("%s = %q, want the explicit marks then %s", SpawnEnv, got, id)
	}
	env := []byte("A=1\x00" + SpawnEnv + "=night,abc\x00B=2")
	for m, want := range map[string]bool{"night": true, "abc": true, "ab": false, "other": false} {
		if hasMark(env, m) != want {
			t.Errorf("hasMark(%q) = %v, want %v", m, !want, want)
		}
	}
}
