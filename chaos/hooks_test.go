package chaos

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// TestSixtyFourHooksAtOnce starts 64 `nightwatch hook` processes at the
// same moment on one cache, each reporting a PostToolUseFailure of its own
// server and of one shared server: no update may be lost silently and the
// cache must parse. A hook that waited for the cache's lock longer than its
// bound (a busy 2-core machine can serialize 64 hooks past it) gives up and
// says so on stderr: that update is missing, out loud. Every other one must
// be there. Two rounds, the second on a cache already full of entries.
func TestSixtyFourHooksAtOnce(t *testing.T) {
	nw := testkit.BuildNightwatch(t)
	home := t.TempDir()
	state := filepath.Join(home, "cache.json")
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "NIGHTWATCH_STATE_PATH=" + state,
		"NIGHTWATCH_MCP_CONFIG=" + filepath.Join(home, "none.json")}
	want := map[string]bool{}
	for round := 0; round < 2; round++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		gate := make(chan struct{})
		errs := make(chan error, 64)
		saved := map[string]bool{}
		gaveUp := 0
		begin := time.Now()
		for i := 0; i < 64; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				server := fmt.Sprintf("r%ds%02d", round, i)
				if i%8 == 0 {
					server = "shared"
				}
				in := fmt.Sprintf(`{"hook_event_name":"PostToolUseFailure","tool_name":"mcp__%s__t","cwd":%q,"error":"MCP error -32000: Connection closed"}`, server, home)
				cmd := exec.Command(nw, "hook")
				cmd.Env = env
				cmd.Stdin = bytes.NewReader([]byte(in))
				<-gate
				out, err := cmd.CombinedOutput()
				if err != nil {
					errs <- fmt.Errorf("hook %s: %v %s", server, err, out)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if bytes.Contains(out, []byte("cannot save the health of "+server)) {
					gaveUp++
					return
				}
				saved[server] = true
			}()
		}
		close(gate)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if len(saved) == 0 {
			t.Fatalf("round %d: no hook saved its update (%d gave up waiting for the lock)", round, gaveUp)
		}
		for s := range saved {
			want[s] = true
		}
		f, err := (&healthcheck.Store{Path: state}).Read()
		if err != nil {
			t.Fatalf("round %d: the cache does not parse: %v", round, err)
		}
		for s := range want {
			if f.Entry(s) == nil {
				t.Errorf("round %d: the update of %s was lost: its hook exited 0 and said nothing", round, s)
			}
		}
		for name, e := range f.Servers {
			if e.Status != healthcheck.StatusUnhealthy {
				t.Errorf("round %d: %s is %s, want unhealthy", round, name, e.Status)
			}
		}
		t.Logf("round %d: 64 hooks in %s, %d entries, %d hooks gave up waiting for the lock (said so)", round,
			time.Since(begin).Round(time.Millisecond), len(f.Servers), gaveUp)
	}
}
