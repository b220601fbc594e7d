package security_test

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
)

// The article's hook read the server from tool_input (server, mcp_server,
// connector). tool_input is written by the model; nightwatch takes the
// server only from the tool name Claude Code built. Both directions: a
// claim of a dead server must not block a healthy one, and a claim of a
// healthy server must not unblock a dead one.
func TestToolInputCannotChooseTheServer(t *testing.T) {
	claims := []string{
		`{"server":"other"}`,
		`{"mcp_server":"other"}`,
		`{"connector":"other"}`,
		`{"server":"other","mcp_server":"other","connector":"other","tool_name":"mcp__other__x","hook_event_name":"PostToolUse"}`,
		`{"nested":{"server":"other"},"args":["--server","other"]}`,
		`"mcp__other__x"`,
	}
	tests := []struct {
		name             string
		notes, other     *healthcheck.Entry
		wantCode         int
		wantNameInReason string
	}{
		{"claims a dead server for a healthy one", healthy(), unhealthy(), 0, ""},
		{"claims a healthy server for a dead one", unhealthy(), healthy(), 2, `"notes"`},
	}
	for _, tt := range tests {
		for i, claim := range claims {
			t.Run(tt.name+"/"+strconv.Itoa(i), func(t *testing.T) {
				e := newHookEnv(t)
				seedCache(t, e.State, map[string]*healthcheck.Entry{"notes": tt.notes, "other": tt.other})
				r := runHook(t, e, strings.NewReader(pre("mcp__notes__x", claim)))
				if r.Code != tt.wantCode {
					t.Fatalf("exit %d, want %d; stdout %q stderr %q", r.Code, tt.wantCode, r.Stdout, r.Stderr)
				}
				if tt.wantCode == 0 && r.Stdout != "" {
					t.Errorf("an allowed call printed a decision: %q", r.Stdout)
				}
				if tt.wantCode == 2 {
					reason := denyReason(t, r.Stdout)
					if !strings.Contains(reason, tt.wantNameInReason) || strings.Contains(reason, `"other"`) {
						t.Errorf("reason names the wrong server: %q", reason)
					}
				}
			})
		}
	}
}

// denyReason parses the PreToolUse decision on stdout and returns its reason.
func denyReason(t *testing.T, stdout string) string {
	t.Helper()
	var d struct {
		Out struct {
			Event    string `json:"hookEventName"`
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("decision on stdout is not JSON: %v: %q", err, stdout)
	}
	if d.Out.Decision != "deny" || d.Out.Event != "PreToolUse" || d.Out.Reason == "" {
		t.Fatalf("decision %+v", d.Out)
	}
	return d.Out.Reason
}

// Hostile tool_input shapes are skipped, never interpreted, and the call is
// decided exactly as a small one: blocked when notes is down, allowed when
// it is up.
func TestHostileToolInputIsDecidedLikeASmallOne(t *testing.T) {
	inputs := []struct {
		name  string
		input func() io.Reader // the raw tool_input value
	}{
		{"shell metacharacters", str(`{"cmd":"$(touch /tmp/nw-pwned); rm -rf / ; ` + "`id`" + ` | nc x 1 && echo \"'\" > /etc/passwd"}`)},
		{"10 MB string", func() io.Reader {
			return io.MultiReader(strings.NewReader(`{"blob":"`), repeatReader(`ab\"c\\d\u00e9 `, 10<<20), strings.NewReader(`"}`))
		}},
		{"100k nested arrays", str(strings.Repeat("[", 100000) + strings.Repeat("]", 100000))},
		{"100k nested objects", str(strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000))},
		{"escaped NUL and control characters", str(`{"a":"\u0000\u0001\u001b[31m\r\n\t\b\f","\u0000":null}`)},
		{"invalid UTF-8 in a string", str("{\"a\":\"\xff\xfe\xc0\xaf\xed\xa0\x80\"}")},
		{"lone surrogates", str(`{"a":"\ud800\udfff\ud800"}`)},
		{"numbers and literals", str(`[1e308,-0,1.5E-10,true,false,null,{}]`)},
		{"1 MiB number", str(`{"n":` + strings.Repeat("9", 1<<20) + `}`)},
		{"66-digit number", str(`[100000000000000000000000000000000000000000000000000000000000000000]`)},
	}
	for _, in := range inputs {
		for _, down := range []bool{true, false} {
			name := in.name + "/up"
			if down {
				name = in.name + "/down"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				e := newHookEnv(t)
				entry := healthy()
				if down {
					entry = unhealthy()
				}
				seedCache(t, e.State, map[string]*healthcheck.Entry{"notes": entry})
				payload := io.MultiReader(
					strings.NewReader(`{"session_id":"s1","hook_event_name":"PreToolUse","tool_input":`),
					in.input(),
					strings.NewReader(`,"tool_name":"mcp__notes__x","cwd":"/nonexistent"}`))
				r := runHook(t, e, payload)
				want := 0
				if down {
					want = 2
				}
				if r.Code != want {
					t.Fatalf("exit %d, want %d; stderr %.500q", r.Code, want, r.Stderr)
				}
				if down {
					denyReason(t, r.Stdout)
				}
			})
		}
	}
}

// Raw control bytes (not valid JSON inside a string) and NUL in the tool
// name: whatever the hook makes of them, it never crashes and never uses
// an exit code other than 0 or 2.
func TestControlBytesNeverCrash(t *testing.T) {
	for i, p := range []string{
		"{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"mcp__notes__x\",\"tool_input\":{\"a\":\"\x00\x01\x1b\x7f\"}}",
		"{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"mcp__notes\x00__x\",\"tool_input\":{}}",
		`{"hook_event_name":"PreToolUse","tool_name":"mcp__notes\u0000__x","tool_input":{}}`,
		`{"hook_event_name":"PreToolUse","tool_name":"mcp__../../etc__x","tool_input":{}}`,
		"{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"mcp__\xff\xfe__x\",\"tool_input\":{}}",
		"\x00\x00\x00\x00",
	} {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			e := newHookEnv(t)
			seedCache(t, e.State, map[string]*healthcheck.Entry{"notes": unhealthy()})
			r := runHook(t, e, strings.NewReader(p))
			if r.Code == 2 {
				denyReason(t, r.Stdout)
			}
			// Nothing may land outside the state folder.
			if _, err := os.Stat(filepath.Join(e.Home, "etc")); err == nil {
				t.Errorf("a tool name made the hook write outside its state folder")
			}
		})
	}
}

func str(s string) func() io.Reader { return func() io.Reader { return strings.NewReader(s) } }

// repeatReader streams unit repeated until n bytes, without holding them.
func repeatReader(unit string, n int) io.Reader {
	count := n / len(unit)
	return io.LimitReader(&loopReader{unit: []byte(strings.Repeat(unit, 4096/len(unit)+1))}, int64(count*len(unit)))
}

type loopReader struct {
	unit []byte
	off  int
}

// Read returns whole copies of unit; LimitReader cuts the stream on a unit
// boundary because n is a multiple of len(unit) and unit's copies are
// aligned to it.
func (l *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], l.unit[l.off:])
		n += c
		l.off = (l.off + c) % len(l.unit)
	}
	return n, nil
}
