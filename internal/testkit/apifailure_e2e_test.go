package testkit

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
)

var updateAPIFixtures = flag.Bool("update-api-fixtures", false,
	"rewrite testdata/claude-api-failures from the real CLI's answers")

// APIFailureFixtureDir holds, per CLI version and failure mode, what the
// real CLI printed when the Messages API failed (the table-test inputs of
// session's failure classifier).
const APIFailureFixtureDir = "testdata/claude-api-failures"

// APIFailureFixture is one measured session against a failing fake API.
type APIFailureFixture struct {
	Version string   `json:"version"`
	Mode    string   `json:"mode"`
	Fault   string   `json:"fault"` // what the fake answered
	Knobs   []string `json:"knobs"` // environment the CLI ran with beyond RunClaude's defaults
	// Now and Reset are unix seconds: when the session ran and the reset
	// time the fake announced (0 if none); TZ is the CLI's zone.
	Now        int64  `json:"now"`
	Reset      int64  `json:"reset,omitempty"`
	TZ         string `json:"tz"`
	ExitCode   int    `json:"exit_code"`
	DurationMS int64  `json:"duration_ms"`
	Requests   int    `json:"requests"` // POST /v1/messages the fake received
	// Result is the result event, with the fake's port in texts replaced
	// by PORT; Events are the other stream events that are not
	// assistant/user turns or init (rate_limit_event, api retries, …).
	Result     map[string]any   `json:"result"`
	Events     []map[string]any `json:"events"`
	EventTypes []string         `json:"event_types"`
}

type apiFailureMode struct {
	name    string
	fault   func(now time.Time) (fakeapi.Fault, time.Time) // nil: no fault
	prompt  string
	args    []string
	allowed []string
	knobs   []string
	success bool // the session must succeed (the CLI absorbed the failure)
	// defaultRetries runs without CLAUDE_CODE_MAX_RETRIES=0: for the
	// failures the CLI does not retry for minutes anyway.
	// It must still give up, after no more requests than recorded (the
	// retries are counted, not timed: a busy machine starts the CLI late).
	defaultRetries bool
}

// apiTestKnobs make the CLI give up at once (FastAPIFailureEnv) and print
// reset times in UTC.
var apiTestKnobs = append(slices.Clone(FastAPIFailureEnv), "TZ=UTC")

// subscriberKnobs: see SubscriberEnv.
var subscriberKnobs = SubscriberEnv

func apiFailureModes() []apiFailureMode {
	fixed := func(f fakeapi.Fault) func(time.Time) (fakeapi.Fault, time.Time) {
		return func(time.Time) (fakeapi.Fault, time.Time) { return f, time.Time{} }
	}
	return []apiFailureMode{
		{name: "refused", fault: fixed(fakeapi.Refused())},
		{name: "500", fault: fixed(fakeapi.ServerError(500))},
		{name: "502", fault: fixed(fakeapi.ServerError(502))},
		{name: "503", fault: fixed(fakeapi.ServerError(503))},
		{name: "529", fault: fixed(fakeapi.Overloaded())},
		{name: "401", fault: fixed(fakeapi.InvalidAPIKey())},
		{name: "usage-5h", fault: func(now time.Time) (fakeapi.Fault, time.Time) {
			reset := now.Add(2 * time.Hour).Truncate(time.Minute).Add(time.Minute)
			return fakeapi.UsageLimit(fakeapi.FiveHour, reset), reset
		}},
		{name: "usage-7d", fault: func(now time.Time) (fakeapi.Fault, time.Time) {
			d := now.UTC().AddDate(0, 0, 2)
			reset := time.Date(d.Year(), d.Month(), d.Day(), 13, 55, 0, 0, time.UTC)
			return fakeapi.UsageLimit(fakeapi.SevenDay, reset), reset
		}},
		// The same limits seen by a subscriber (an OAuth login): the CLI
		// prints "You've hit your … limit · resets …" and streams a
		// rate_limit_event. With an API key it prints the bare 429.
		{name: "usage-5h-subscriber", knobs: subscriberKnobs, fault: func(now time.Time) (fakeapi.Fault, time.Time) {
			reset := now.Add(2 * time.Hour).Truncate(time.Minute).Add(time.Minute)
			return fakeapi.UsageLimit(fakeapi.FiveHour, reset), reset
		}},
		{name: "usage-7d-subscriber", knobs: subscriberKnobs, fault: func(now time.Time) (fakeapi.Fault, time.Time) {
			d := now.UTC().AddDate(0, 0, 2)
			reset := time.Date(d.Year(), d.Month(), d.Day(), 13, 55, 0, 0, time.UTC)
			return fakeapi.UsageLimit(fakeapi.SevenDay, reset), reset
		}},
		{name: "account-429", fault: fixed(fakeapi.AccountRateLimit())},
		{name: "prompt-too-long", fault: fixed(fakeapi.PromptTooLong())},
		{name: "max-turns", prompt: `CALL Bash {"command":"echo hi"}`, args: []string{"--max-turns", "1"},
			allowed: []string{"Bash"}},
		// Without the knob: a subscriber's usage limit ends the session at
		// once (no retries), a 529 after 3 attempts (a few seconds).
		{name: "usage-5h-subscriber-default-retries", knobs: subscriberKnobs, defaultRetries: true,
			fault: func(now time.Time) (fakeapi.Fault, time.Time) {
				reset := now.Add(2 * time.Hour).Truncate(time.Minute).Add(time.Minute)
				return fakeapi.UsageLimit(fakeapi.FiveHour, reset), reset
			}},
		{name: "529-default-retries", defaultRetries: true, fault: fixed(fakeapi.Overloaded())},
		// A refusal shorter than the CLI's retries is absorbed. 2.1.332
		// reports a refused connection as "overloaded" (529) in its
		// api_retry events and gives up after three of them (about 2 s):
		// the window stays well inside that.
		{name: "refused-briefly-absorbed", success: true, knobs: []string{"CLAUDE_CODE_MAX_RETRIES=6"},
			fault: func(time.Time) (fakeapi.Fault, time.Time) {
				f := fakeapi.Refused()
				f.For = 800 * time.Millisecond
				return f, time.Time{}
			}},
		// A short outage: the CLI's own retry absorbs it.
		{name: "529-once-absorbed", success: true, knobs: []string{"CLAUDE_CODE_MAX_RETRIES=2"},
			fault: func(time.Time) (fakeapi.Fault, time.Time) {
				f := fakeapi.Overloaded()
				f.Requests = 1
				return f, time.Time{}
			}},
	}
}

// TestAPIFailures measures the real CLI against each failure of the
// Messages API and holds it to the recorded fixtures (run with
// -update-api-fixtures to record them anew).
func TestAPIFailures(t *testing.T) {
	ForEachClaude(t, func(t *testing.T, version string) {
		for _, m := range apiFailureModes() {
			t.Run(m.name, func(t *testing.T) {
				t.Parallel()
				testAPIFailure(t, version, m)
			})
		}
	})
}

var portRE = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// normalizePort replaces the fake's address in every string of v.
func normalizePort(v any) any {
	switch x := v.(type) {
	case string:
		return portRE.ReplaceAllString(x, "127.0.0.1:PORT")
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normalizePort(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizePort(e)
		}
		return out
	}
	return v
}

func testAPIFailure(t *testing.T, version string, m apiFailureMode) {
	api := fakeapi.Start(t)
	now := time.Now()
	var reset time.Time
	faultName := ""
	if m.fault != nil {
		var f fakeapi.Fault
		f, reset = m.fault(now)
		faultName = f.Name
		api.Inject(f)
	}
	knobs := append(slices.Clone(apiTestKnobs), m.knobs...)
	if m.defaultRetries {
		knobs = slices.DeleteFunc(knobs, func(k string) bool { return strings.HasPrefix(k, "CLAUDE_CODE_MAX_RETRIES=") })
	}
	prompt := m.prompt
	if prompt == "" {
		prompt = "SESSION " + m.name
	}
	res := RunClaude(t, api, ClaudeRun{Version: version, Prompt: prompt, Env: knobs,
		ExtraArgs: m.args, AllowedTools: m.allowed, Timeout: 90 * time.Second})
	got := APIFailureFixture{Version: version, Mode: m.name, Fault: faultName, Knobs: knobs,
		Now: now.Unix(), TZ: "UTC", ExitCode: res.ExitCode, DurationMS: res.Duration.Milliseconds(),
		Requests: api.Requests()}
	if !reset.IsZero() {
		got.Reset = reset.Unix()
	}
	if res.Result != nil {
		got.Result = normalizePort(res.Result).(map[string]any)
	}
	for _, ev := range res.Stream {
		typ, _ := ev["type"].(string)
		sub, _ := ev["subtype"].(string)
		if typ == "assistant" || typ == "user" || typ == "result" || (typ == "system" && (sub == "init" || strings.HasPrefix(sub, "hook_"))) {
			continue
		}
		got.Events = append(got.Events, normalizePort(ev).(map[string]any))
		name := typ
		if sub != "" {
			name += "/" + sub
		}
		if !slices.Contains(got.EventTypes, name) {
			got.EventTypes = append(got.EventTypes, name)
		}
	}
	t.Logf("%s %s: exit %d in %s, %d requests, subtype %q terminal_reason %v api_error_status %v, events %v, result %q",
		version, m.name, got.ExitCode, res.Duration.Round(time.Millisecond), got.Requests, res.Subtype(),
		got.Result["terminal_reason"], got.Result["api_error_status"], got.EventTypes, res.ResultText())

	if res.Result == nil {
		t.Fatalf("no result event")
	}
	if m.success {
		res.RequireSuccess(t)
	} else if !res.IsError() || res.ExitCode == 0 {
		t.Errorf("exit %d is_error %v, want a failed session", res.ExitCode, res.IsError())
	}

	path := filepath.Join(ModuleRoot(t), APIFailureFixtureDir, version, m.name+".json")
	if *updateAPIFixtures {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := ReadAPIFailureFixture(path)
	if err != nil {
		t.Fatalf("%v (record it with -update-api-fixtures)", err)
	}
	for _, k := range []string{"subtype", "is_error", "terminal_reason", "api_error_status", "api_error_type", "stop_reason"} {
		if fmt.Sprint(got.Result[k]) != fmt.Sprint(want.Result[k]) {
			t.Errorf("result %s = %v, recorded %v", k, got.Result[k], want.Result[k])
		}
	}
	if got.ExitCode != want.ExitCode {
		t.Errorf("exit %d, recorded %d", got.ExitCode, want.ExitCode)
	}
	if m.defaultRetries && got.Requests > want.Requests {
		t.Errorf("the CLI sent %d requests, recorded %d: with its default retries it must still give up", got.Requests, want.Requests)
	}
	if g, w := resetFree(got.Result["result"]), resetFree(want.Result["result"]); g != w {
		t.Errorf("result text (reset time aside)\n got %q\nwant %q", g, w)
	}
	// An absorbed outage shows api_retry events or not depending on when
	// the CLI's first request fell in the window: only its success counts.
	if !m.success && !slices.Equal(got.EventTypes, want.EventTypes) {
		t.Errorf("event types %v, recorded %v", got.EventTypes, want.EventTypes)
	}
}

var resetRE = regexp.MustCompile(`resets [^(·]*`)

// resetFree is a result text with its reset time blanked: it moves with the
// clock of the run.
func resetFree(v any) string {
	s, _ := v.(string)
	// The CLI's estimate of the conversation's size depends on the
	// session's temp paths and varies by a token between runs.
	return conversationTokensRE.ReplaceAllString(resetRE.ReplaceAllString(s, "resets TIME "), "conversation is only ~N tokens")
}

var conversationTokensRE = regexp.MustCompile(`conversation is only ~\d+ tokens`)

// ReadAPIFailureFixture reads one recorded fixture.
func ReadAPIFailureFixture(path string) (APIFailureFixture, error) {
	var f APIFailureFixture
	b, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}
