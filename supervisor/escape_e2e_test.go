package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// TestNightKillsAnEscapeWithAnEmptyEnvironment (issue 21): a session's
// Bash call starts a process that leaves the process group (setsid) and
// execs with an empty environment, so neither the group kill nor a spawn
// mark can find it. The night, a subreaper, adopts it and kills it at the
// job's end: the next job (max_parallel 1) finds it gone, not even a
// zombie.
func TestNightKillsAnEscapeWithAnEmptyEnvironment(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the subreaper is Linux's; RELIABILITY.md says what holds elsewhere")
	}
	testkit.ForEachClaude(t, testNightKillsAnEscapeWithAnEmptyEnvironment)
}

// escapeNights runs the two CLI versions' nights of this test one at a
// time. An escape that emptied its environment belongs, as far as the
// night can tell, to every spawn that was running when it started
// (proc.Subreaper): with the other version's night running in this same
// process, it would be killed at the end of whichever ends last, and the
// second job could still see it.
var escapeNights sync.Mutex

func testNightKillsAnEscapeWithAnEmptyEnvironment(t *testing.T, version string) {
	escapeNights.Lock()
	defer escapeNights.Unlock()
	f := newNightFixture(t)
	work := filepath.Join(f.dir, "work") // neither the batch nor its state
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	pidfile := filepath.Join(f.dir, "escaped.pid")
	seen := filepath.Join(f.dir, "seen")
	escape := fmt.Sprintf(`setsid env -i /bin/sleep 300 </dev/null >/dev/null 2>&1 & echo $! > %s`, pidfile)
	look := fmt.Sprintf(`if test -e /proc/$(cat %s)/stat; then echo alive > %s; else echo gone > %s; fi`, pidfile, seen, seen)
	b := f.load(fmt.Sprintf(`version: 1
name: escape
state_dir: ./state
agent: {command: %s}
max_parallel: 1
defaults: {timeout: 2m, retries: 0}
jobs:
  - {name: escapes, cwd: %s, allowed_tools: [Bash], prompt: %s}
  - {name: looks, cwd: %s, allowed_tools: [Bash], prompt: %s}
`, jsonString(testkit.ClaudeBinOf(t, version)), jsonString(work), jsonString(prompt("escapes", "Bash "+jsonArgs(escape))),
		jsonString(work), jsonString(prompt("looks", "Bash "+jsonArgs(look)))))
	s := f.run(b)
	if s.Done != 2 {
		t.Fatalf("want both jobs done, got %+v", s.Jobs)
	}
	data, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatalf("the escaping call did not run: %v", err)
	}
	var pid int
	if _, err := fmt.Sscan(string(data), &pid); err != nil || pid <= 0 {
		t.Fatalf("pid file %q", data)
	}
	t.Cleanup(func() {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
	})
	got, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("the second job's look did not run: %v", err)
	}
	if strings.TrimSpace(string(got)) != "gone" {
		t.Errorf("the escaped process %d was %s when the next job ran", pid, strings.TrimSpace(string(got)))
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		t.Errorf("the escaped process %d is still there (running or a zombie) after the night", pid)
	}
	if t.Failed() {
		for _, spawn := range proc.RunningSpawns() {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", spawn))
			t.Logf("a spawn still running, which may own the escape: pid %d: %q", spawn, strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
}

func jsonArgs(command string) string {
	return `{"command": ` + jsonString(command) + `}`
}
