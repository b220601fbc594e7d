package modelapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// apiFixture is the part of internal/testkit's APIFailureFixture the
// classifier reads (testdata/claude-api-failures/<version>/<mode>.json,
// recorded from the real CLIs by TestAPIFailures).
type apiFixture struct {
	Version string           `json:"version"`
	Mode    string           `json:"mode"`
	Now     int64            `json:"now"`
	Reset   int64            `json:"reset"`
	TZ      string           `json:"tz"`
	Result  map[string]any   `json:"result"`
	Events  []map[string]any `json:"events"`
}

// wantByMode is the class every recorded mode must get, on every version.
var wantByMode = map[string]Class{
	"refused":                  Unavailable,
	"500":                      Unavailable,
	"502":                      Unavailable,
	"503":                      Unavailable,
	"529":                      Unavailable,
	"401":                      InvalidCredentials,
	"usage-5h":                 RateLimit, // an API key sees the bare 429
	"usage-7d":                 RateLimit,
	"usage-5h-subscriber":      UsageLimit,
	"usage-7d-subscriber":      UsageLimit,
	"account-429":              RateLimit,
	"prompt-too-long":          ContextTooLong,
	"max-turns":                MaxTurns,
	"529-once-absorbed":        NoFailure,
	"refused-briefly-absorbed": NoFailure,
	// Without CLAUDE_CODE_MAX_RETRIES the CLI's own texts differ: 2.1.197
	// reports repeated 529s with no api_error_status at all.
	"529-default-retries":                 Unavailable,
	"usage-5h-subscriber-default-retries": UsageLimit,
}

func TestClassifyRecordedCLIFailures(t *testing.T) {
	files, err := filepath.Glob("../testdata/claude-api-failures/*/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2*len(wantByMode) {
		t.Fatalf("%d fixtures, want %d modes on both pinned versions", len(files), len(wantByMode))
	}
	seen := map[string]int{}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var fx apiFixture
		if err := json.Unmarshal(b, &fx); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		t.Run(fx.Version+"/"+fx.Mode, func(t *testing.T) {
			want, ok := wantByMode[fx.Mode]
			if !ok {
				t.Fatalf("mode %q has no expected class: add it to wantByMode", fx.Mode)
			}
			seen[fx.Mode]++
			now := time.Unix(fx.Now, 0)
			loc, _ := time.LoadLocation(fx.TZ)
			got := Classify(fx.Result, fx.Events, now, loc)
			if got.Class != want {
				t.Fatalf("class %q (%s), want %q; result %q", got.Class, got.Reason, want, fx.Result["result"])
			}
			if want != NoFailure && (got.Reason == "" || strings.Contains(got.Reason, "\n")) {
				t.Errorf("reason %q, want one non-empty line", got.Reason)
			}
			if want == UsageLimit {
				if !got.ResetAt.Equal(time.Unix(fx.Reset, 0)) {
					t.Errorf("reset %s, want %s", got.ResetAt, time.Unix(fx.Reset, 0))
				}
				// The text alone says the same (to the minute): a CLI that
				// streams no event still gives the reset time.
				text := Classify(fx.Result, nil, now, time.Local)
				if text.Class != UsageLimit || !text.ResetAt.Equal(time.Unix(fx.Reset, 0)) {
					t.Errorf("from the text only: %q reset %s, want usage-limit reset %s", text.Class, text.ResetAt, time.Unix(fx.Reset, 0))
				}
			}
		})
	}
	for mode := range wantByMode {
		if seen[mode] < 2 {
			t.Errorf("mode %s recorded on %d versions, want both", mode, seen[mode])
		}
	}
}

func TestClassify(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 10, 0, 0, time.UTC)
	res := func(kv ...any) map[string]any {
		m := map[string]any{"type": "result", "subtype": "success", "is_error": true}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	rle := func(status string, reset float64) map[string]any {
		return map[string]any{"type": "rate_limit_event", "rate_limit_info": map[string]any{
			"status": status, "rateLimitType": "five_hour", "resetsAt": reset}}
	}
	cases := []struct {
		name   string
		result map[string]any
		stream []map[string]any
		want   Class
		reset  time.Time
	}{
		{"no result: killed", nil, nil, NoFailure, time.Time{}},
		{"success", res("is_error", false, "result", "done", "terminal_reason", "completed"), nil, NoFailure, time.Time{}},
		{"job's own failure", res("subtype", "error_during_execution", "terminal_reason", "aborted_tools", "result", ""), nil, NoFailure, time.Time{}},
		{"success text mentions a limit", res("is_error", false, "result", "You've hit your weekly limit · resets Dec 3, 1:55pm (UTC)"), nil, NoFailure, time.Time{}},
		{"the issue's refused text (332)", res("terminal_reason", "api_error",
			"result", "API Error: Connection refused … (ECONNREFUSED)"), nil, Unavailable, time.Time{}},
		{"api_error without a known text", res("terminal_reason", "api_error", "result", "API Error: something new"), nil, Unavailable, time.Time{}},
		{"timeout text (197)", res("terminal_reason", "completed", "result", "API Error: Request timed out."), nil, Unavailable, time.Time{}},
		{"overloaded by type", res("api_error_status", 529.0, "api_error_type", "overloaded_error", "result", "API Error: 529"), nil, Unavailable, time.Time{}},
		{"status only in api_retry events (197, repeated 529)", res("terminal_reason", "completed", "result", "API Error: Repeated 529s, new wording"),
			[]map[string]any{{"type": "system", "subtype": "api_retry", "error_status": 529.0, "error": "overloaded"}}, Unavailable, time.Time{}},
		{"a retry that recovered does not make the job's failure the API's", res("subtype", "error_during_execution", "result", "the tests failed"),
			[]map[string]any{{"type": "system", "subtype": "api_retry", "error_status": 529.0}}, NoFailure, time.Time{}},
		{"403", res("api_error_status", 403.0, "result", "API Error: 403 forbidden"), nil, InvalidCredentials, time.Time{}},
		{"not logged in, no status", res("result", "Not logged in · Please run /login"), nil, InvalidCredentials, time.Time{}},
		{"expired OAuth token", res("result", "API Error: 401 {\"error\":{\"message\":\"OAuth token has expired.\"}}"), nil, InvalidCredentials, time.Time{}},
		{"event decides over text", res("api_error_status", 429.0, "result", "API Error: Request rejected (429) · Rate limit exceeded"),
			[]map[string]any{rle("allowed_warning", 1), rle("rejected", float64(now.Add(time.Hour).Unix()))}, UsageLimit, now.Add(time.Hour)},
		{"warning event only is no limit", res("api_error_status", 429.0, "result", "API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later."),
			[]map[string]any{rle("allowed_warning", 1)}, RateLimit, time.Time{}},
		// An hour ago: the limit just lifted; not a 23-hour pause.
		{"usage text without status (just passed)", res("result", "You've hit your 5-hour limit · resets 1:05am (UTC)"), nil, UsageLimit,
			time.Date(2026, 12, 1, 1, 5, 0, 0, time.UTC)},
		{"usage text without status (next morning)", res("result", "You've hit your 5-hour limit · resets 1:05pm (UTC)"), nil, UsageLimit,
			time.Date(2026, 12, 1, 13, 5, 0, 0, time.UTC)},
		// A reset further ahead than any limit lifts is no reset time: the
		// night waits its default, never years.
		{"reset 463 days ahead", res("api_error_status", 429.0, "result", "API Error: Request rejected (429)"),
			[]map[string]any{rle("rejected", float64(now.Add(463*24*time.Hour).Unix()))}, UsageLimit, time.Time{}},
		{"reset 9999999999", res("api_error_status", 429.0, "result", "API Error: Request rejected (429)"),
			[]map[string]any{rle("rejected", 9999999999)}, UsageLimit, time.Time{}},
		{"reset 7 days ahead is kept", res("api_error_status", 429.0, "result", "API Error: Request rejected (429)"),
			[]map[string]any{rle("rejected", float64(now.Add(7*24*time.Hour).Unix()))}, UsageLimit, now.Add(7 * 24 * time.Hour)},
		{"usage text without a time", res("api_error_status", 429.0, "result", "You've hit your weekly limit"), nil, UsageLimit, time.Time{}},
		{"prompt too long by text", res("api_error_status", 400.0, "result", "Prompt is too long"), nil, ContextTooLong, time.Time{}},
		{"other 400 is the job's", res("api_error_status", 400.0, "result", "API Error: 400 messages: text content blocks must be non-empty"), nil, NoFailure, time.Time{}},
		{"max turns by terminal_reason", res("subtype", "error_max_turns", "terminal_reason", "max_turns",
			"errors", []any{"Reached maximum number of turns (3)"}), nil, MaxTurns, time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Classify(c.result, c.stream, now, time.UTC)
			if got.Class != c.want || !got.ResetAt.Equal(c.reset) {
				t.Errorf("got %q reset %s (%s), want %q reset %s", got.Class, got.ResetAt, got.Reason, c.want, c.reset)
			}
			if (got.Class == NoFailure) != (got.Reason == "") {
				t.Errorf("reason %q for class %q", got.Reason, got.Class)
			}
		})
	}
}

func TestParseResetTime(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 8, 30, 0, 0, time.UTC)
	cases := []struct {
		text string
		loc  *time.Location
		want time.Time // zero: not found
	}{
		// 9 minutes ago: the limit just lifted, not tomorrow's (JustPassed).
		{"You've hit your 5-hour limit · resets 8:21am (UTC)", time.UTC, time.Date(2026, 12, 1, 8, 21, 0, 0, time.UTC)},
		{"You've hit your 5-hour limit · resets 2:29am (UTC)", time.UTC, time.Date(2026, 12, 2, 2, 29, 0, 0, time.UTC)},
		{"You've hit your session limit · resets 10:47am (UTC)", time.UTC, time.Date(2026, 12, 1, 10, 47, 0, 0, time.UTC)},
		{"You've hit your 5-hour limit · resets 10am (UTC)", time.UTC, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)},
		{"You've hit your 5-hour limit · resets 12pm (UTC)", time.UTC, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)},
		{"You've hit your 5-hour limit · resets 12:30am (UTC)", time.UTC, time.Date(2026, 12, 2, 0, 30, 0, 0, time.UTC)},
		{"You've hit your weekly limit · resets Dec 3, 1:55pm (UTC)", time.UTC, time.Date(2026, 12, 3, 13, 55, 0, 0, time.UTC)},
		// Further ahead than any limit lifts (MaxResetAhead): no reset time.
		{"You've hit your weekly limit · resets Nov 3, 1:55pm (UTC)", time.UTC, time.Time{}},
		{"You've hit your weekly limit · resets Jan 5, 2027, 9am (UTC)", time.UTC, time.Time{}},
		{"You've hit your weekly limit · resets Dec 8, 9am (UTC)", time.UTC, time.Date(2026, 12, 8, 9, 0, 0, 0, time.UTC)},
		{"You've hit your weekly limit · resets Dec 3 (UTC)", time.UTC, time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)},
		// The zone the text names wins over the machine's.
		{"resets 10:15am (Europe/Berlin)", time.UTC, time.Date(2026, 12, 1, 10, 15, 0, 0, berlin)},
		{"resets 9:15am (Europe/Berlin)", time.UTC, time.Date(2026, 12, 1, 9, 15, 0, 0, berlin)}, // 09:30 there now: just passed
		{"resets 3:15am (Europe/Berlin)", time.UTC, time.Date(2026, 12, 2, 3, 15, 0, 0, berlin)}, // 6 h 15 ago: tomorrow's
		// No zone, or one this machine does not know: the machine's zone.
		{"resets 10:15am", berlin, time.Date(2026, 12, 1, 10, 15, 0, 0, berlin)},
		{"resets 11pm (Mars/Olympus)", berlin, time.Date(2026, 12, 1, 23, 0, 0, 0, berlin)},
		{"You've hit your weekly limit · resets Dec 3, 1:55pm (UTC) · /upgrade to keep using Claude Code", time.UTC, time.Date(2026, 12, 3, 13, 55, 0, 0, time.UTC)},
		{"You've hit your weekly limit", time.UTC, time.Time{}},
		{"resets 13pm (UTC)", time.UTC, time.Time{}},
		{"resets Feb 30, 1pm (UTC)", time.UTC, time.Time{}},
		{"resets soon", time.UTC, time.Time{}},
		// A year the CLI would not name for a reset.
		{"resets Jan 1,0000", time.UTC, time.Time{}},
		{"resets Jan 1, 2031, 9am (UTC)", time.UTC, time.Time{}},
	}
	for _, c := range cases {
		got, ok := ParseResetTime(c.text, now, c.loc)
		if ok != !c.want.IsZero() || !got.Equal(c.want) {
			t.Errorf("ParseResetTime(%q) = %s, %v; want %s", c.text, got, ok, c.want)
		}
	}
}

func FuzzParseResetTime(f *testing.F) {
	for _, s := range []string{
		"You've hit your 5-hour limit · resets 8:21am (UTC)",
		"You've hit your weekly limit · resets Dec 3, 1:55pm (UTC)",
		"resets Jan 5, 2027, 9am (Europe/Berlin)", "resets Dec 3 (UTC)", "resets 99:99pm", "resets Feb 31, 2027,",
		"resets Jan 1,0000", // once read as a reset in year 0 (found by this fuzzer)
	} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 1, 8, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text string) {
		got, ok := ParseResetTime(text, now, time.UTC)
		if !ok {
			if !got.IsZero() {
				t.Fatalf("not ok but a time %s", got)
			}
			return
		}
		if m := resetRE.FindStringSubmatch(text); got.Before(now.Add(-JustPassed)) && (m == nil || m[3] == "") {
			// Only a text naming its year may lie further in the past than
			// a reset that just passed.
			t.Fatalf("%q: reset %s long before now", text, got)
		}
		if got.After(now.Add(MaxResetAhead)) {
			t.Fatalf("%q: reset %s beyond MaxResetAhead", text, got)
		}
		if y := got.Year(); y < now.Year()-1 || y > now.Year()+2 {
			t.Fatalf("%q: reset %s is no reset the CLI would name", text, got)
		}
		if got.Minute() > 59 || got.Second() != 0 {
			t.Fatalf("%q: odd time %s", text, got)
		}
	})
}
