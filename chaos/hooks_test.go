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
// server and of one shared server: no update may be lost and the cache
// must parse. Two rounds, the second on a cache already full of entries.
func TestSixtyFourHooksAtOnce(t *testing.T) {
	nw := testkit.BuildNightwatch(t)
	home := t.TempDir()
	state := filepath.Join(home, "cache.json")
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "NIGHTWATCH_STATE_PATH=" + state,
		"NIGHTWATCH_MCP_CONFIG=" + filepath.Join(home, "none.json")}
	for round := 0; round < 2; round++ {
		var wg sync.WaitGroup
		gate := make(chan struct{})
		errs := make(chan error, 64)
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
				if out, err := cmd.CombinedOutput(); err != nil {
					errs <- fmt.Errorf("hook %s: %v %s", server, err, out)
				}
			}()
		}
		close(gate)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		f, err := (&healthcheck.Store{Path: state}).Read()
		if err != nil {
			t.Fatalf("round %d: the cache does not parse: %v", round, err)
		}
		want := 1 + 56*(round+1) // shared + 56 own servers per round
		if len(f.Servers) != want {
			t.Errorf("round %d: %d entries, want %d: %d updates lost", round, len(f.Servers), want, want-len(f.Servers))
		}
		for name, e := range f.Servers {
			if e.Status != healthcheck.StatusUnhealthy {
				t.Errorf("round %d: %s is %s, want unhealthy", round, name, e.Status)
			}
		}
		t.Logf("round %d: 64 hooks in %s, %d entries, 0 lost", round, time.Since(begin).Round(time.Millisecond), len(f.Servers))
	}
}
