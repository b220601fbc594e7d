package session

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// TestPrepareSessionHTTPHook: with HTTPHook set, every event's hook is the
// night's URL with the token header and the batch's timeout, PreToolUse's
// with onFailure "block"; no command is written. checkSettings refuses a
// file whose URL or token is not the one meant, or a command form.
func TestPrepareSessionHTTPHook(t *testing.T) {
	b := sessionTestBatch(t)
	b.FailOpen = true
	spec := sessionTestSpec(b, sessionTestJob("j", "x"))
	spec.HTTPHook = &HTTPHook{URL: "http://127.0.0.1:4321/hook/abc", TokenHeader: "X-Nightwatch-Token", Token: "t0ken-Zq81xx"}
	f, err := Prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(f.Settings)
	if err != nil {
		t.Fatal(err)
	}
	var s settings
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	for _, ev := range hookEvents {
		h := s.Hooks[ev][0].Hooks[0]
		wantFail := ""
		if ev == "PreToolUse" {
			wantFail = "block"
		}
		if h.Type != "http" || h.URL != spec.HTTPHook.URL || h.Headers["X-Nightwatch-Token"] != "t0ken-Zq81xx" ||
			h.Command != "" || h.Timeout != b.HookTimeout(spec.Job) || h.OnFailure != wantFail {
			t.Errorf("%s: %+v", ev, h)
		}
	}
	if strings.Contains(string(data), "--fail-open") || strings.Contains(string(data), `"command"`) {
		t.Errorf("the http form carries a command:\n%s", data)
	}
	want := hookHandler{Type: "http", URL: spec.HTTPHook.URL, Headers: map[string]string{"X-Nightwatch-Token": "t0ken-Zq81xx"}, Timeout: b.HookTimeout(spec.Job)}
	if err := checkSettings(f.Settings, data, want, denyRules(spec)); err != nil {
		t.Fatalf("checkSettings refused what Prepare wrote: %v", err)
	}
	for name, other := range map[string]hookHandler{
		"another token": {Type: "http", URL: want.URL, Headers: map[string]string{"X-Nightwatch-Token": "other"}, Timeout: want.Timeout},
		"another URL":   {Type: "http", URL: "http://127.0.0.1:1/hook/abc", Headers: want.Headers, Timeout: want.Timeout},
		"the command":   {Type: "command", Command: hookCommand(spec, f), Timeout: want.Timeout},
	} {
		if err := checkSettings(f.Settings, data, other, denyRules(spec)); err == nil {
			t.Errorf("%s: checkSettings accepted the file", name)
		}
	}
}

// TestServedSessionKnobs: the served hook's knobs are the command hook's
// flags laid over the session's environment.
func TestServedSessionKnobs(t *testing.T) {
	b := sessionTestBatch(t)
	b.FailOpen = true
	b.Health.ProbeTimeout = 7 * time.Second
	spec := sessionTestSpec(b, sessionTestJob("j", "x"), "NIGHTWATCH_TTL=9m")
	f, err := Prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := ServedSession(spec, f)
	if err != nil {
		t.Fatal(err)
	}
	k := ss.Knobs
	hs := b.Health.Settings()
	if k.StatePath.V != f.Cache || k.EventsPath.V != f.Events || k.MCPConfig.V != f.MCPConfig || !k.FailOpen.V ||
		k.ProbeTimeout.V != 7*time.Second || k.TTL.V != hs.TTL || len(k.Problems) > 0 {
		t.Errorf("knobs: %+v", k)
	}
	if v, _ := ss.Getenv("CLAUDECODE"); v != "1" {
		t.Errorf("CLAUDECODE = %q: the served hook's environment is not a hook's", v)
	}
}
