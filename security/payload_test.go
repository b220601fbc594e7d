package security_test

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
)

// What the hook cannot parse it lets through with a note on stderr: exit
// 0, never 2, never a panic. notes is down in every case, so a wrong exit
// 2 would show.
func TestMalformedPayloadsGoAheadWithANote(t *testing.T) {
	tests := []struct {
		name, payload string
		wantInErr     string
	}{
		{"empty stdin", "", "unchecked"},
		{"only blanks", " \n\t ", "unchecked"},
		{"null", "null", "unchecked"},
		{"a JSON array", `[{"hook_event_name":"PreToolUse","tool_name":"mcp__notes__x"}]`, "unchecked"},
		{"a string", `"mcp__notes__x"`, "unchecked"},
		{"truncated in tool_input", `{"hook_event_name":"PreToolUse","tool_name":"mcp__notes__x","tool_input":{"a":[1,2`, "unchecked"},
		{"truncated in tool_name", `{"hook_event_name":"PreToolUse","tool_name":"mcp__no`, "unchecked"},
		{"two commas", `{"hook_event_name":"PreToolUse",,"tool_name":"mcp__notes__x"}`, "unchecked"},
		{"invalid UTF-8 before the object", "\xff\xfe{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"mcp__notes__x\"}", "unchecked"},
		{"unquoted keys", `{hook_event_name:"PreToolUse",tool_name:"mcp__notes__x"}`, "unchecked"},
		{"no hook_event_name, PostToolUse shape", `{"tool_name":"mcp__notes__x","tool_input":{},"tool_response":{"ok":true}}`, "hook_event_name"},
		{"no hook_event_name, PostToolUseFailure shape", `{"tool_name":"mcp__notes__x","tool_input":{},"error":"Tool failed"}`, "hook_event_name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newHookEnv(t)
			seedCache(t, e.State, map[string]*healthcheck.Entry{"notes": unhealthy()})
			r := runHook(t, e, strings.NewReader(tt.payload))
			if r.Code != 0 {
				t.Fatalf("exit %d, want 0; stderr %q", r.Code, r.Stderr)
			}
			if !strings.Contains(r.Stderr, tt.wantInErr) {
				t.Errorf("stderr %q lacks %q", r.Stderr, tt.wantInErr)
			}
			if r.Stdout != "" {
				t.Errorf("stdout %q, want nothing", r.Stdout)
			}
		})
	}
}

// A payload without hook_event_name and without any field that says it is
// a Post event is judged as PreToolUse (the safe reading for a call that
// has not happened yet) and says so.
func TestMissingEventNameIsSaid(t *testing.T) {
	e := newHookEnv(t)
	seedCache(t, e.State, map[string]*healthcheck.Entry{"notes": unhealthy()})
	r := runHook(t, e, strings.NewReader(`{"tool_name":"mcp__notes__x","tool_input":{}}`))
	if !strings.Contains(r.Stderr, "hook_event_name") {
		t.Errorf("no note about the missing event: %q", r.Stderr)
	}
}

// A 50 MiB tool_input is streamed past: decided like a small one (blocked:
// notes is down) with a peak RSS far below the payload's size.
func TestHugeToolInputBoundedMemory(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("peak RSS is read from /proc")
	}
	for _, tt := range []struct {
		name  string
		input func() io.Reader
	}{
		{"50 MiB string", func() io.Reader {
			return io.MultiReader(strings.NewReader(`{"content":"`), repeatReader(`0123456789abcde\"`, 50<<20), strings.NewReader(`"}`))
		}},
		{"50 MiB of small arrays", func() io.Reader {
			return io.MultiReader(strings.NewReader(`[`), repeatReader(`[1,"x"],`, 50<<20), strings.NewReader(`0]`))
		}},
		{"1M nested arrays", str(strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newHookEnv(t)
			seedCache(t, e.State, map[string]*healthcheck.Entry{"notes": unhealthy()})
			rss := filepath.Join(e.Home, "rss")
			payload := io.MultiReader(
				strings.NewReader(`{"session_id":"s1","hook_event_name":"PreToolUse","tool_input":`),
				tt.input(),
				strings.NewReader(`,"tool_name":"mcp__notes__x"}`))
			r := runHook(t, e, payload, "NIGHTWATCH_REPORT_PEAK_RSS="+rss)
			if r.Code != 2 {
				t.Fatalf("exit %d, want 2 (notes is down); stderr %.500q", r.Code, r.Stderr)
			}
			denyReason(t, r.Stdout)
			kib, err := strconv.Atoi(strings.TrimSpace(readFile(t, rss)))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("peak RSS %d KiB", kib)
			if kib >= 64<<10 {
				t.Errorf("peak RSS %d KiB, want < 64 MiB", kib)
			}
		})
	}
}
