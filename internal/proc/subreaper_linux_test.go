package proc

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// holdSubreaper makes the test process a subreaper for the test's life.
func holdSubreaper(t *testing.T) {
	t.Helper()
	release, err := Subreaper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
}

// startTree runs script (sh -c) through proc, prepared as prepare does,
// and reads the pids it prints, one a line, before it ends: the
// processes it leaves behind. The leader may go on running after
// (a spawn still running); cancel ends it.
func startTree(t *testing.T, prepare func(*exec.Cmd, time.Duration), script string, pids int) (cmd *exec.Cmd, left []int, cancel func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd = exec.CommandContext(ctx, "sh", "-c", script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	prepare(cmd, 200*time.Millisecond)
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	for i := 0; i < pids; i++ {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read pid %d of %q: %v", i+1, script, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			t.Fatalf("pid %q: %v", line, err)
		}
		left = append(left, pid)
		t.Cleanup(func() { _ = killPid(pid) })
	}
	return cmd, left, cancel
}

// waitLeftSession waits until pid leads a session of its own (setsid has
// run): from then on only the subreaper's adoption or a mark finds it.
func waitLeftSession(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // only a stuck shell runs it out
	for sessionOf(pid) != pid {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never left its owner's session (session %d)", pid, sessionOf(pid))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// reaped waits (a minute at most: only a survivor or a zombie nobody
// reaps runs it out) until pid is no process at all, not even a zombie.
func reaped(pid int) bool {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if statFields(pid) == nil {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return statFields(pid) == nil
}

// waitSleeping waits until pid runs sleep (the exec is done: its
// environment is the one sleep was given).
func waitSleeping(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // only a stuck exec runs it out
	for {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if strings.TrimSpace(string(comm)) == "sleep" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never ran sleep (%q)", pid, comm)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readEnviron(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sleepPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Fatalf("setsid is needed to leave the process group: %v", err)
	}
	return p
}

// TestSubreaperKillsEscapedDescendants: in a subreaper, what a spawn left
// outside its group, even with an empty environment (issue 21), is killed
// and reaped when the spawn's Wait returns; a descendant of an escaped
// process (adopted only once its parent is killed) too.
func TestSubreaperKillsEscapedDescendants(t *testing.T) {
	sleep := sleepPath(t)
	holdSubreaper(t)
	tests := []struct {
		name, script string
		pids         int
		emptyEnv     bool
	}{
		{"setsid, environment kept", `setsid ` + sleep + ` 300 </dev/null >/dev/null 2>&1 & echo $!`, 1, false},
		{"setsid and an empty environment", `setsid env -i ` + sleep + ` 300 </dev/null >/dev/null 2>&1 & echo $!`, 1, true},
		{"an escaped shell's child with an empty environment, its parent alive",
			`setsid sh -c 'env -i ` + sleep + ` 300 </dev/null >/dev/null 2>&1 & echo $$; echo $!; exec ` + sleep + ` 300 >/dev/null' &`, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, left, _ := startTree(t, Prepare, tt.script, tt.pids)
			waitLeftSession(t, left[0])
			for _, pid := range left {
				waitSleeping(t, pid)
			}
			if tt.emptyEnv && strings.Contains(readEnviron(t, left[len(left)-1]), SpawnEnv) {
				t.Fatalf("pid %d still carries a spawn mark: the test would prove nothing", left[len(left)-1])
			}
			_ = Wait(cmd)
			for _, pid := range left {
				if !reaped(pid) {
					t.Errorf("pid %d outlived its spawn's Wait (or is a zombie nobody reaped): %v", pid, statFields(pid))
				}
			}
		})
	}
}

// TestSubreaperAttribution: with two spawns running at once, what one
// leaves behind is never killed while the other it may belong to runs.
// A marked process is its own spawn's (killed at that spawn's end); an
// unmarked one belongs to every spawn running when it started, and is
// killed once the last of them has ended.
func TestSubreaperAttribution(t *testing.T) {
	sleep := sleepPath(t)
	holdSubreaper(t)
	// B runs on, having left an unmarked process outside its group.
	b, bLeft, cancelB := startTree(t, Prepare,
		`setsid env -i `+sleep+` 300 </dev/null >/dev/null 2>&1 & echo $!; exec `+sleep+` 300 >/dev/null`, 1)
	waitLeftSession(t, bLeft[0])
	waitSleeping(t, bLeft[0])
	// A, started while B runs, leaves a marked process and an unmarked one.
	a, aLeft, _ := startTree(t, Prepare,
		`setsid `+sleep+` 300 </dev/null >/dev/null 2>&1 & echo $!; setsid env -i `+sleep+` 300 </dev/null >/dev/null 2>&1 & echo $!`, 2)
	aMarked, aUnmarked := aLeft[0], aLeft[1]
	waitLeftSession(t, aMarked)
	waitLeftSession(t, aUnmarked)
	waitSleeping(t, aUnmarked)
	_ = Wait(a)
	if !reaped(aMarked) {
		t.Errorf("A's marked process %d outlived A", aMarked)
	}
	if !alive(bLeft[0]) {
		t.Fatalf("B's process %d was killed at A's end while B runs", bLeft[0])
	}
	if !alive(aUnmarked) {
		t.Errorf("A's unmarked process %d was killed while B, which may own it, runs", aUnmarked)
	}
	cancelB()
	_ = Wait(b)
	for _, pid := range []int{bLeft[0], aUnmarked} {
		if !reaped(pid) {
			t.Errorf("pid %d outlived the last spawn that may own it", pid)
		}
	}
}

// TestSubreaperLeavesWhatIsNotASpawns: a reconnect's daemon (allowed to
// outlive its command) and a child this process started without proc
// (tests do) are left running; the daemon, adopted, is reaped when it
// exits.
func TestSubreaperLeavesWhatIsNotASpawns(t *testing.T) {
	sleep := sleepPath(t)
	holdSubreaper(t)
	// Started while no spawn runs: nobody's descendant. Ticks are 10 ms;
	// a spawn that ended within the last one might still claim it.
	time.Sleep(30 * time.Millisecond)
	foreign := exec.Command(sleep, "300")
	if err := foreign.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = foreign.Process.Kill(); _ = foreign.Wait() })
	// And the next spawn starts a tick later, or the foreign child might
	// be its descendant as far as start times can tell.
	time.Sleep(30 * time.Millisecond)

	d, dLeft, _ := startTree(t, PrepareAllowDaemons, `setsid `+sleep+` 300 </dev/null >/dev/null 2>&1 & echo $!`, 1)
	waitLeftSession(t, dLeft[0])
	_ = Wait(d)
	// Another spawn's end sweeps again.
	other, _, _ := startTree(t, Prepare, `echo $$`, 1)
	_ = Wait(other)
	if !alive(dLeft[0]) {
		t.Errorf("the daemon %d of an allow-daemons command was killed", dLeft[0])
	}
	if !alive(foreign.Process.Pid) {
		t.Fatalf("a child started without proc (%d) was killed", foreign.Process.Pid)
	}
	// The daemon is now this process's child: when it exits, it is reaped.
	if err := killPid(dLeft[0]); err != nil {
		t.Fatal(err)
	}
	if !reaped(dLeft[0]) {
		t.Errorf("the adopted daemon %d was left a zombie", dLeft[0])
	}
	// The foreign child is its starter's to wait for: still there to wait.
	_ = foreign.Process.Kill()
	if err := foreign.Wait(); err != nil && !strings.Contains(err.Error(), "killed") {
		t.Errorf("waiting for the foreign child: %v (reaped by the subreaper?)", err)
	}
}

// TestSubreaperInhibitorHoldsNoEscape: an escape that emptied its
// environment is killed at its own spawn's end although a spawn started
// before it runs on: a sleep inhibitor marked LeavesNothing (the night's
// keep-awake runs all night).
func TestSubreaperInhibitorHoldsNoEscape(t *testing.T) {
	sleep := sleepPath(t)
	holdSubreaper(t)
	inhibitorCtx, stopInhibitor := context.WithCancel(context.Background())
	inhibitor := exec.CommandContext(inhibitorCtx, sleep, "300")
	Prepare(inhibitor, 200*time.Millisecond)
	LeavesNothing(inhibitor)
	if err := Start(inhibitor); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopInhibitor(); _ = Wait(inhibitor) })

	a, aLeft, _ := startTree(t, Prepare,
		`setsid env -i `+sleep+` 300 </dev/null >/dev/null 2>&1 & echo $!`, 1)
	waitLeftSession(t, aLeft[0])
	waitSleeping(t, aLeft[0])
	_ = Wait(a)
	if !reaped(aLeft[0]) {
		t.Errorf("the unmarked escape %d outlived its spawn while the inhibitor ran", aLeft[0])
	}
	if !alive(inhibitor.Process.Pid) {
		t.Errorf("the inhibitor was killed")
	}
}

// TestEnvironOfWaitsOutAnExec: a process caught inside an execve reads
// with no environment and no arguments for a moment; its environment is
// the one it has once the execve is done, never the empty one (the sweep
// then killed a reconnect's daemon as an escape). An environment that is
// really empty is believed once the arguments are there.
func TestEnvironOfWaitsOutAnExec(t *testing.T) {
	gone := errors.New("no such process")
	cases := []struct {
		name string
		// reads are what successive reads of each file return, in order;
		// the last one repeats.
		environ, cmdline []string
		errEnviron       error
		want             string
		wantPauses       int
	}{
		{name: "a settled process", environ: []string{"A=1\x00"}, cmdline: []string{"sleep\x00"}, want: "A=1\x00"},
		{name: "caught inside an execve", environ: []string{"", "", "", "NIGHTWATCH=x\x00"}, cmdline: []string{"", "", "sleep\x00"},
			want: "NIGHTWATCH=x\x00", wantPauses: 2},
		{name: "an emptied environment", environ: []string{""}, cmdline: []string{"sleep\x00300\x00"}, want: ""},
		{name: "no arguments ever", environ: []string{""}, cmdline: []string{""}, want: "", wantPauses: execTries - 1},
		{name: "gone", errEnviron: gone, want: ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			next := map[string]int{}
			read := func(path string) ([]byte, error) {
				var seq []string
				switch {
				case strings.HasSuffix(path, "/environ"):
					if c.errEnviron != nil {
						return nil, c.errEnviron
					}
					seq = c.environ
				case strings.HasSuffix(path, "/cmdline"):
					seq = c.cmdline
				default:
					t.Fatalf("read %s", path)
				}
				i := min(next[path], len(seq)-1)
				next[path]++
				return []byte(seq[i]), nil
			}
			pauses := 0
			got := environOf(42, read, func() { pauses++ })
			if string(got) != c.want {
				t.Errorf("environment %q, want %q", got, c.want)
			}
			if pauses != c.wantPauses {
				t.Errorf("%d pauses, want %d", pauses, c.wantPauses)
			}
		})
	}
}
