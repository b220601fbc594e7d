package served_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/hook/served"
	"github.com/nightwatch-dev/nightwatch/internal/clirange"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
)

// TestClaudeServedHookRefusal: the real CLI against the served hook, the
// PreToolUse hook registered as the night registers it (onFailure
// "block"), on a server the cache knows healthy. With the right token and
// a registered session the call goes ahead (the record tool writes its
// file). A wrong token, or a session the handler does not know, is
// refused with 403 and nothing decided: 2.1.332 then blocks the call
// (nothing written, the model reads a hook error), while 2.1.197 lets it
// through unchecked, which is why the night serves the hook only to
// 2.1.332 and later.
func TestClaudeServedHookRefusal(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		api := fakeapi.Start(t)
		dir := t.TempDir()
		state := filepath.Join(dir, "cache.json")
		err := (&healthcheck.Store{Path: state}).Update(func(f *healthcheck.File) error {
			f.Servers["notes"] = &healthcheck.Entry{Status: healthcheck.StatusHealthy, CheckedAt: healthcheck.MillisOf(time.Now()),
				ExpiresAt: healthcheck.MillisOf(time.Now().Add(24 * time.Hour))}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var logs logLines
		srv := startServer(t, &logs)
		env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
		w := world{env: env, args: []string{"--state", state}}
		key, err := srv.Register(w.session(t))
		if err != nil {
			t.Fatal(err)
		}
		mcp := testkit.WriteMCPConfig(t, map[string]any{"notes": map[string]any{"command": testkit.BuildTestServer(t)}})
		blocks := clirange.Compare(version, "2.1.332") >= 0
		tests := []struct {
			name, url, token string
			refused          bool
		}{
			{"registered", srv.URL(key), srv.Token(), false},
			{"wrong token", srv.URL(key), strings.Repeat("0", len(srv.Token())), true},
			{"unknown session", srv.URL("00000000000000000000000000000000"), srv.Token(), true},
		}
		for i, tt := range tests {
			side := filepath.Join(dir, "side-"+string(rune('a'+i)))
			args, _ := json.Marshal(map[string]string{"file": side, "text": "ran"})
			settings := testkit.WriteSettings(t, map[string]any{"hooks": map[string]any{"PreToolUse": []any{
				map[string]any{"matcher": "mcp__.*", "hooks": []any{map[string]any{"type": "http", "url": tt.url, "timeout": 30,
					"headers": map[string]any{served.TokenHeader: tt.token}, "onFailure": "block"}}}}}})
			name := "served-" + string(rune('a'+i))
			r := testkit.RunClaude(t, api, testkit.ClaudeRun{Version: version, Prompt: "SESSION " + name + "\nCALL mcp__notes__record " + string(args) + "\n",
				MCPConfig: mcp, Settings: settings, AllowedTools: []string{"mcp__notes"}})
			r.RequireSuccess(t)
			got := api.SessionToolResults(name)
			_, statErr := os.Stat(side)
			ran := statErr == nil
			wantRan := !tt.refused || !blocks
			if len(got) != 1 || ran != wantRan || got[0].IsError == wantRan {
				t.Errorf("%s on %s: the call ran %v (want %v); results %+v", tt.name, version, ran, wantRan, got)
			}
		}
	})
}
