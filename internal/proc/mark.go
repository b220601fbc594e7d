package proc

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// SpawnEnv is the variable that carries the spawn marks of every nightwatch
// spawn a process descends from, comma-separated, outermost first. A
// process that leaves its process group keeps its environment, so the mark
// is how its owner still finds it.
const SpawnEnv = "NIGHTWATCH_SPAWN"

var marks sync.Map // *exec.Cmd → its mark

// mark gives cmd a fresh spawn mark, appended to the marks it inherits from
// this process, so a nested spawn (a hook's probe inside a night's session)
// is found by both owners.
func mark(cmd *exec.Cmd) {
	id := newMark()
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	inherited := os.Getenv(SpawnEnv)
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == SpawnEnv {
			inherited = v
			continue
		}
		out = append(out, kv)
	}
	value := id
	if inherited != "" {
		value = inherited + "," + id
	}
	cmd.Env = append(out, SpawnEnv+"="+value)
	marks.Store(cmd, id)
}

// daemonMark is the whole spawn mark of a command allowed to leave
// daemons (PrepareAllowDaemons) and of everything it starts: nobody's
// descendant to kill. A night that adopts such a process as its subreaper
// leaves it running (subreaper_linux.go).
const daemonMark = "daemon"

// unmark replaces every spawn mark in cmd's environment with daemonMark.
func unmark(cmd *exec.Cmd) {
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != SpawnEnv {
			out = append(out, kv)
		}
	}
	cmd.Env = append(out, SpawnEnv+"="+daemonMark)
}

// newMark is 64 random bits, as 16 hex digits. A mark only has to differ
// from every other spawn's, not to be secret (any process of the user can
// put any mark in its environment, and kill the user's processes anyway):
// math/rand/v2's generator (ChaCha8, seeded by the runtime from the
// system's entropy) is enough, and spares every process that links proc,
// such as the hook's hot path, crypto/rand and math/big.
func newMark() string {
	return fmt.Sprintf("%016x", rand.Uint64())
}

// takeMark returns cmd's mark and forgets it ("" if cmd was not marked).
func takeMark(cmd *exec.Cmd) string {
	v, ok := marks.LoadAndDelete(cmd)
	if !ok {
		return ""
	}
	return v.(string)
}

// hasMark reports whether an environment block (NUL-separated, as in
// /proc/<pid>/environ) carries id among its spawn marks.
func hasMark(environ []byte, id string) bool {
	for _, m := range marksOf(environ) {
		if m == id {
			return true
		}
	}
	return false
}

// marksOf is the spawn marks an environment block (NUL-separated, as in
// /proc/<pid>/environ) carries, outermost first; nil when it has none.
func marksOf(environ []byte) []string {
	prefix := SpawnEnv + "="
	for _, kv := range strings.Split(string(environ), "\x00") {
		if v, ok := strings.CutPrefix(kv, prefix); ok {
			return strings.Split(v, ",")
		}
	}
	return nil
}
