package proc

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Subreaper makes this process a child subreaper (PR_SET_CHILD_SUBREAPER):
// a process that any child of it started and that lost its parent (a
// double fork, setsid then the parent's exit, the group kill of its
// parent) becomes this process's child instead of init's. That is a mark
// the kernel keeps whatever the process does to its environment, process
// group or session, and finding such a process is reading this process's
// own children (/proc/self/task/*/children), not every process of the host.
//
// Which spawn an adopted process belongs to (the rule, also in
// RELIABILITY.md):
//   - its spawn mark, when its environment still carries one of ours: it
//     belongs to that spawn, and is killed once that spawn has ended (at
//     the spawn's Wait), never while it runs;
//   - daemonMark (PrepareAllowDaemons' commands: a reconnect's server): it
//     is nobody's, left running, and reaped when it exits;
//   - no mark of ours (an emptied or rewritten environment): it belongs to
//     one of the spawns that were running when it started (a process is
//     started after its ancestors), and is killed at the first sweep at
//     which none of them is running any more. With one spawn at a time that
//     is its own spawn's end; with several it may be a later end, never one
//     that kills a process of a spawn still running;
//   - a process that started while none of our spawns ran is not one of
//     their descendants (a child this program started without proc: only
//     tests do): left alone, and not reaped either, its starter waits for
//     it.
//
// Zombies of adopted processes are reaped: at every Wait, and on SIGCHLD
// while a Subreaper is held. The last holder's release sweeps once more
// and ends the setting (a process that is no night adopts nothing). Only Linux has it; elsewhere Subreaper does nothing (Windows'
// Job Objects already hold every descendant; macOS has no such mark, see
// RELIABILITY.md).
func Subreaper() (release func(), err error) {
	reaper.Lock()
	defer reaper.Unlock()
	if reaper.holders == 0 {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return func() {}, fmt.Errorf("become a child subreaper: %w", err)
		}
		subreaping.Store(true)
		reaper.stop, reaper.done = make(chan struct{}), make(chan struct{})
		go watchChildren(reaper.stop, reaper.done)
	}
	reaper.holders++
	var once sync.Once
	return func() {
		once.Do(func() {
			reaper.Lock()
			defer reaper.Unlock()
			reaper.holders--
			if reaper.holders > 0 {
				return
			}
			close(reaper.stop)
			<-reaper.done
			sweep(0)
			// Adopted daemons stay this process's children; a later
			// holder's sweeps reap them.
			_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
			subreaping.Store(false)
		})
	}, nil
}

var (
	// subreaping: this process is a child subreaper (a Subreaper is held).
	subreaping atomic.Bool
	reaper     struct {
		sync.Mutex
		holders    int
		stop, done chan struct{}
	}
)

// watchChildren sweeps on every SIGCHLD until stop: an adopted process
// that exits between two Waits is reaped at once, not left a zombie.
func watchChildren(stop, done chan struct{}) {
	defer close(done)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	defer signal.Stop(ch)
	for {
		select {
		case <-stop:
			return
		case <-ch:
			sweep(0)
		}
	}
}

// spawn is one command started by Start, for attributing the processes
// it left behind: its leader's pid, its mark ("" for a command allowed to
// leave daemons) and when it ran, in clock ticks since boot (the unit of
// a process's start time in /proc/<pid>/stat); end is 0 while it runs.
type spawn struct {
	pid        int
	mark       string
	start, end uint64
	// leavesNothing: the command starts nothing that could outlive it
	// (LeavesNothing), so it is never taken as an adopted process's owner.
	leavesNothing bool
}

// keepEnded bounds the ended spawns remembered for attribution: an
// adopted process is normally swept at its own spawn's end, so only the
// last few are ever needed.
const keepEnded = 1024

var spawns struct {
	// forks is held for reading around each fork and its registration,
	// and for writing by a sweep: a child forked but not yet registered
	// would otherwise look like an adopted one.
	forks sync.RWMutex
	mu    sync.Mutex
	live  map[int]*spawn // by leader pid: os/exec waits for these
	byCmd map[*exec.Cmd]*spawn
	ended []*spawn // oldest first
	mark  map[string]*spawn
}

func beforeStart() (after func()) {
	spawns.forks.RLock()
	return spawns.forks.RUnlock
}

// registerSpawn records a started cmd (Start calls it under forks).
func registerSpawn(cmd *exec.Cmd) {
	pid := cmd.Process.Pid
	start, ok := startTicks(pid)
	if !ok { // gone already: its descendants started after this moment's tick minus one
		start = nowTicks() - 1
	}
	s := &spawn{pid: pid, start: start}
	if v, ok := marks.Load(cmd); ok {
		s.mark = v.(string)
	}
	if _, ok := leavesNothing.LoadAndDelete(cmd); ok {
		s.leavesNothing = true
	}
	spawns.mu.Lock()
	defer spawns.mu.Unlock()
	if spawns.live == nil {
		spawns.live, spawns.byCmd, spawns.mark = map[int]*spawn{}, map[*exec.Cmd]*spawn{}, map[string]*spawn{}
	}
	spawns.live[pid], spawns.byCmd[cmd] = s, s
	if s.mark != "" {
		spawns.mark[s.mark] = s
	}
}

// leavesNothing holds the commands marked by LeavesNothing until Start
// registers them.
var leavesNothing sync.Map // *exec.Cmd → struct{}

// LeavesNothing says that cmd, not yet started, starts no process that
// could outlive it (a sleep inhibitor that runs all night): the night,
// a subreaper, never takes it as the owner of a process it adopts, so an
// escape whose mark is gone is still killed at its own job's end while
// the inhibitor runs on.
func LeavesNothing(cmd *exec.Cmd) { leavesNothing.Store(cmd, struct{}{}) }

// forgetSpawn drops cmd's record without a sweep (not a subreaper).
func forgetSpawn(cmd *exec.Cmd) {
	spawns.mu.Lock()
	defer spawns.mu.Unlock()
	if s, ok := spawns.byCmd[cmd]; ok {
		delete(spawns.byCmd, cmd)
		delete(spawns.live, s.pid)
		delete(spawns.mark, s.mark)
	}
}

// endSpawn records that cmd has ended (its leader reaped, its group
// killed) and sweeps until its group is gone and nothing adopted that
// belongs to it is left.
func endSpawn(cmd *exec.Cmd) {
	takeMark(cmd)
	spawns.mu.Lock()
	s, ok := spawns.byCmd[cmd]
	if ok {
		delete(spawns.byCmd, cmd)
		delete(spawns.live, s.pid)
		// The tick after now: a process started within this tick may
		// still be this spawn's.
		s.end = nowTicks() + 1
		spawns.ended = append(spawns.ended, s)
		if len(spawns.ended) > keepEnded {
			old := spawns.ended[0]
			spawns.ended = spawns.ended[1:]
			if spawns.mark[old.mark] == old {
				delete(spawns.mark, old.mark)
			}
		}
	}
	spawns.mu.Unlock()
	if ok {
		sweep(s.pid)
	}
}

// sweepBound is the longest a sweep waits for a killed group to be gone
// and for killed processes to be reaped; what is left then (a process in
// uninterruptible sleep) is taken by a later sweep.
const sweepBound = 2 * time.Second

// sweep kills the adopted processes whose spawns have all ended and reaps
// the adopted zombies, round after round (a killed process's children are
// adopted next), until none is left and the process group pgid (0: none)
// is gone.
func sweep(pgid int) {
	spawns.forks.Lock()
	defer spawns.forks.Unlock()
	deadline := time.Now().Add(sweepBound)
	for {
		killed := sweepOnce()
		for _, pid := range killed {
			reapBy(pid, deadline)
		}
		if len(killed) == 0 && (pgid <= 0 || !GroupAlive(pgid)) || time.Now().After(deadline) {
			return
		}
		if len(killed) == 0 {
			// The group's last processes are dying; their zombies come
			// to this process (or to their dying parents) shortly.
			time.Sleep(time.Millisecond)
		}
	}
}

// sweepOnce looks at this process's children once: reaps the adopted
// zombies, kills (SIGKILL) the adopted processes no running spawn may own,
// and returns those it killed.
func sweepOnce() (killed []int) {
	kids := children()
	spawns.mu.Lock()
	defer spawns.mu.Unlock()
	for _, pid := range kids {
		if _, ours := spawns.live[pid]; ours {
			continue // a leader its Wait reaps
		}
		zombie, start, ok := statOf(pid)
		if !ok {
			continue
		}
		if zombie {
			if ran, _ := spawnsAt(start); ran {
				var ws unix.WaitStatus
				_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			}
			continue
		}
		if ownerEnded(pid, start) {
			if unix.Kill(pid, unix.SIGKILL) == nil {
				killed = append(killed, pid)
			}
		}
	}
	return killed
}

// ownerEnded applies the attribution rule (Subreaper's comment) to an
// adopted, running process: true when every spawn it may belong to has
// ended. Callers hold spawns.mu.
func ownerEnded(pid int, start uint64) bool {
	environ := environOf(pid, os.ReadFile, func() { time.Sleep(execPause) })
	known := false
	for _, m := range marksOf(environ) {
		if m == daemonMark {
			return false
		}
		if s, ok := spawns.mark[m]; ok {
			if s.end == 0 {
				return false
			}
			known = true
		}
	}
	if known {
		return true
	}
	ran, running := spawnsAt(start)
	return ran && !running
}

// execPause and execTries bound how long environOf waits for an execve
// to set up the new program's environment: microseconds in practice.
const (
	execPause = 200 * time.Microsecond
	execTries = 50
)

// environOf reads pid's environment (/proc/<pid>/environ) for ownerEnded.
// A process in the middle of an execve has, for a moment, its new memory
// map without its arguments and environment: /proc reads both empty, and
// a daemon caught there (setsid exec'ing its server) would look like an
// escape that emptied its environment and be killed. A process whose
// environment really is empty still has its arguments, so an empty
// environment is believed once the arguments are there, or after
// execTries reads (a program started with no arguments at all). A process
// that is gone reads as nil at once.
func environOf(pid int, read func(string) ([]byte, error), pause func()) []byte {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	for try := 1; ; try++ {
		environ, err := read(dir + "environ")
		if err != nil || len(environ) > 0 {
			return environ
		}
		args, err := read(dir + "cmdline")
		if err != nil {
			return nil
		}
		if len(args) > 0 || try >= execTries {
			// The execve has set both, or there is no execve: read again,
			// as the environment may have been set since the first read.
			environ, _ = read(dir + "environ")
			return environ
		}
		pause()
	}
}

// spawnsAt reports whether any spawn was running at tick t, and whether
// one of those is still running. Callers hold spawns.mu.
func spawnsAt(t uint64) (ran, running bool) {
	for _, s := range spawns.live {
		if !s.leavesNothing && s.start <= t {
			return true, true
		}
	}
	for _, s := range spawns.ended {
		if s.start <= t && t <= s.end {
			ran = true
		}
	}
	return ran, false
}

// reapBy waits for the killed child pid until deadline.
func reapBy(pid int, deadline time.Time) {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if got == pid || err != nil && err != unix.EINTR || time.Now().After(deadline) {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// children lists the children of this process's main thread: one small
// read. A child is listed under the thread that forked it, and an adopted
// one under the first live thread of its subreaper (the kernel's
// find_alive_thread), which is the main thread: a Go program's main
// thread lives as long as the process. Children this process forked on
// other threads are not listed, and need not be: they are proc's spawns,
// which their Wait handles. A kernel built without the children file is
// answered from every process's stat: the cost that grows with the
// host, kept only as a fallback.
func children() []int {
	data, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children")
	if err != nil {
		return childrenByStat()
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

func childrenByStat() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if fields := statFields(pid); len(fields) > 1 && fields[1] == strconv.Itoa(self) {
			out = append(out, pid)
		}
	}
	return out
}

// statFields are the fields of /proc/<pid>/stat after the command name
// (state first), nil when the process is gone.
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// statOf reads whether pid is a zombie and its start tick.
func statOf(pid int) (zombie bool, start uint64, ok bool) {
	fields := statFields(pid)
	if len(fields) < 20 {
		return false, 0, false
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return false, 0, false
	}
	return fields[0] == "Z" || fields[0] == "X", start, true
}

func startTicks(pid int) (uint64, bool) {
	_, start, ok := statOf(pid)
	return start, ok
}

// ticksPerSecond is USER_HZ, the unit of /proc/<pid>/stat's start time:
// 100 on every Linux architecture nightwatch builds for (amd64, arm64).
const ticksPerSecond = 100

// nowTicks is the time since boot in the unit and on the clock of a
// process's start time (CLOCK_BOOTTIME; kernels before 5.5 used the
// monotonic clock, which is never ahead of it, so an end read here is
// never too early).
func nowTicks() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return uint64(ts.Sec)*ticksPerSecond + uint64(ts.Nsec)/(1e9/ticksPerSecond)
}

// RunningSpawns are the leader pids of the commands Start started that
// have not ended yet: what keeps an unmarked escape alive (Subreaper's
// rule). For diagnostics: a test that finds an escape alive says which.
func RunningSpawns() []int {
	spawns.mu.Lock()
	defer spawns.mu.Unlock()
	var pids []int
	for pid, s := range spawns.live {
		if !s.leavesNothing {
			pids = append(pids, pid)
		}
	}
	return pids
}
