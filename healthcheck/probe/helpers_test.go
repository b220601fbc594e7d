package probe

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// serverEverythingBin locates @modelcontextprotocol/server-everything: the
// one place to change if the reference server moves.
func serverEverythingBin(t testing.TB) string {
	t.Helper()
	return testkit.ServerEverythingBin(t)
}

// requireNotHung fails when a probe returned minutes after its timeout:
// only a probe that does not honour its timeout (a hang) gets there. How
// long a busy machine needs for the teardown is not asserted; the verdict
// and reason say whether the timeout cut the probe.
func requireNotHung(t *testing.T, start time.Time, timeout time.Duration) {
	t.Helper()
	const hang = 2 * time.Minute
	if elapsed := time.Since(start); elapsed > timeout+hang {
		t.Errorf("the probe hung: it returned %s after its %s timeout", (elapsed - timeout).Round(time.Second), timeout)
	}
}

// readPids reads the pids nwtestserver --pidfile wrote (the server, and a
// spawned child).
func readPids(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("server wrote no pidfile: %v", err)
	}
	var pids []int
	for _, field := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(field)
		if err != nil {
			t.Fatalf("pidfile %q: %v", data, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// requireGone fails unless every pid is gone: the probe already sent
// SIGKILL to the group, delivery is all that may still be pending. The
// minute is for a busy machine; only a survivor runs it out.
func requireGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for _, pid := range pids {
		for processAlive(pid) {
			if time.Now().After(deadline) {
				t.Errorf("process %d of the server's group survived the probe", pid)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func assertNoSecret(t *testing.T, reason string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(reason, s) {
			t.Errorf("reason leaks secret %q: %s", s, reason)
		}
	}
}
