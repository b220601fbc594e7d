package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/hookexe"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// hookRun is what one hook process did: its exit code, its output, and
// what it changed.
type hookRun struct {
	code           int
	stdout, stderr string
	cacheChanged   bool
	events         []string // the events file's kinds, in order
}

func runHook(t *testing.T, argv []string, home, payload string, extraEnv []string) hookRun {
	t.Helper()
	state := filepath.Join(home, "cache.json")
	events := filepath.Join(home, "events.jsonl")
	before, _ := os.ReadFile(state)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "NIGHTWATCH_STATE_PATH=" + state,
		"NIGHTWATCH_EVENTS=" + events, "NIGHTWATCH_MCP_CONFIG=" + filepath.Join(home, "none.json")}, extraEnv...)
	cmd.Stdin = strings.NewReader(payload)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := hookRun{stdout: stdout.String(), stderr: strings.ReplaceAll(stderr.String(), home, "$HOME")}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(state)
	r.cacheChanged = !bytes.Equal(before, after)
	data, _ := os.ReadFile(events)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev struct{ Kind string }
		if line != "" && json.Unmarshal([]byte(line), &ev) == nil {
			r.events = append(r.events, ev.Kind)
		}
	}
	return r
}

// parityCache writes the cache every case starts from: "up" healthy for
// its TTL, "auth" blocked by a 401 only a call can see end, "down" blocked
// by a 503 for longer than a hold, "stale" healthy with under half its TTL
// left.
func parityCache(t *testing.T, home string, now time.Time) {
	t.Helper()
	err := (&healthcheck.Store{Path: filepath.Join(home, "cache.json")}).Update(func(f *healthcheck.File) error {
		f.Servers["up"] = &healthcheck.Entry{Status: healthcheck.StatusHealthy, CheckedAt: healthcheck.MillisOf(now),
			ExpiresAt: healthcheck.MillisOf(now.Add(2 * time.Minute))}
		f.Servers["stale"] = &healthcheck.Entry{Status: healthcheck.StatusHealthy, CheckedAt: healthcheck.MillisOf(now.Add(-100 * time.Second)),
			ExpiresAt: healthcheck.MillisOf(now.Add(20 * time.Second))}
		f.Servers["auth"] = &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, CheckedAt: healthcheck.MillisOf(now),
			NextRetryAt: healthcheck.MillisOf(now.Add(5 * time.Minute)), LastFailureCode: healthcheck.CodeAuth,
			LastError: "HTTP 401", Witness: healthcheck.WitnessCalls, FailureCount: 1}
		f.Servers["down"] = &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, CheckedAt: healthcheck.MillisOf(now),
			NextRetryAt: healthcheck.MillisOf(now.Add(8 * time.Minute)), LastFailureCode: healthcheck.CodeUnavailable,
			LastError: "HTTP 503", FailureCount: 4}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

var fromNow = regexp.MustCompile(`[0-9hms.]+ from now`)

// TestHotPathParity: nightwatch-hook answers every call as `nightwatch
// hook` does (exit code, stdout, stderr, what it writes to the cache and
// the events file), and answers the hot cases alone: a copy of it with
// no nightwatch beside it still answers those, and hands every other case
// on (which, with no whole hook to run, lets the call through, said).
func TestHotPathParity(t *testing.T) {
	nw := testkit.BuildNightwatch(t)
	hookBin := testkit.BuildHook(t)
	alone := filepath.Join(t.TempDir(), filepath.Base(hookBin))
	data, err := os.ReadFile(hookBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o700); err != nil {
		t.Fatal(err)
	}
	pre := func(tool string) string {
		return fmt.Sprintf(`{"session_id":"s","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":%q,"tool_input":{"q":1}}`, tool)
	}
	cases := []struct {
		name, payload string
		env           []string
		hot           bool // answered without the whole hook
		code          int
	}{
		{name: "non-MCP tool", payload: pre("Bash"), hot: true},
		{name: "hit, 2.1.197 payload", payload: pre("mcp__up__search"), hot: true},
		{name: "hit, 2.1.332 payload", payload: `{"hook_event_name":"PreToolUse","tool_name":"mcp__up__search","mcp_server":{"name":"up","source":"user"}}`, hot: true},
		{name: "cached block, calls witness", payload: pre("mcp__auth__search"), hot: true, code: 2},
		{name: "cached block, past any hold", payload: pre("mcp__down__search"), hot: true, code: 2},
		{name: "PostToolUse, known healthy", payload: `{"hook_event_name":"PostToolUse","tool_name":"mcp__up__search","tool_response":{}}`, hot: true},
		{name: "miss", payload: pre("mcp__new__search")},
		{name: "name with __", payload: pre("mcp__a__b__search")},
		{name: "PostToolUse, stale entry", payload: `{"hook_event_name":"PostToolUse","tool_name":"mcp__stale__search","tool_response":{}}`},
		{name: "PostToolUseFailure", payload: `{"hook_event_name":"PostToolUseFailure","tool_name":"mcp__up__search","error":"MCP error -32000: Connection closed"}`},
		{name: "no event name", payload: `{"tool_name":"mcp__up__search"}`},
		{name: "log file", payload: pre("mcp__up__search"), env: []string{"NIGHTWATCH_LOG=/dev/null"}},
		{name: "bad setting", payload: pre("mcp__up__search"), env: []string{"NIGHTWATCH_TTL=soon"}},
		{name: "not JSON", payload: `[1,2]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs := map[string]hookRun{}
			now := time.Now() // one cache for the three runs
			for name, argv := range map[string][]string{"nightwatch-hook": {hookBin}, "nightwatch hook": {nw, "hook"}, "alone": {alone}} {
				home := t.TempDir()
				parityCache(t, home, now)
				r := runHook(t, argv, home, c.payload, c.env)
				// The runs are apart by their own time: "5m0s from now"
				// may read 4m59s in the next.
				r.stdout, r.stderr = fromNow.ReplaceAllString(r.stdout, "… from now"), fromNow.ReplaceAllString(r.stderr, "… from now")
				runs[name] = r
			}
			dedicated, whole, lone := runs["nightwatch-hook"], runs["nightwatch hook"], runs["alone"]
			if fmt.Sprint(dedicated) != fmt.Sprint(whole) {
				t.Errorf("nightwatch-hook and nightwatch hook differ:\n%+v\n%+v", dedicated, whole)
			}
			if dedicated.code != c.code {
				t.Errorf("exit %d, want %d", dedicated.code, c.code)
			}
			handedOn := strings.Contains(lone.stderr, "the call goes ahead unchecked") && strings.Contains(lone.stderr, "whole hook")
			if c.hot && (handedOn || fmt.Sprint(lone) != fmt.Sprint(whole)) {
				t.Errorf("a hot case was not answered alone: %+v", lone)
			}
			if !c.hot && !handedOn {
				t.Errorf("a case for the whole hook was answered alone: %+v", lone)
			}
		})
	}
}

// A payload larger than the hot path keeps (a PostToolUse with a tool's
// 24 MiB response) is handed to the whole hook as it streams: the whole
// hook gets it all and answers as it does when called directly, and the
// hot hook's own peak memory stays far below the payload's size (it held
// the whole payload before).
func TestLargePayloadIsStreamedToTheWholeHook(t *testing.T) {
	nw := testkit.BuildNightwatch(t)
	hookBin := testkit.BuildHook(t)
	big := strings.Repeat("x", 24<<20)
	// A response at a server known healthy: the hot path would answer it
	// alone, were it small. The whole hook reads all of it: a response
	// cut short would not parse, and the call would be said unjudged.
	payload := `{"hook_event_name":"PostToolUse","tool_name":"mcp__up__search","tool_response":{"text":"` + big + `"}}`
	now := time.Now()
	runs := map[string]hookRun{}
	var peakKiB int
	for name, argv := range map[string][]string{"nightwatch-hook": {hookBin}, "nightwatch hook": {nw, "hook"}} {
		home := t.TempDir()
		parityCache(t, home, now)
		report := filepath.Join(home, "peak-rss")
		r := runHook(t, argv, home, payload, []string{"NIGHTWATCH_REPORT_PEAK_RSS=" + report})
		r.stdout, r.stderr = fromNow.ReplaceAllString(r.stdout, "… from now"), fromNow.ReplaceAllString(r.stderr, "… from now")
		runs[name] = r
		if name == "nightwatch-hook" && runtime.GOOS == "linux" {
			// Each process appends its own on exit: the whole hook it
			// ran first, nightwatch-hook last.
			data, err := os.ReadFile(report)
			lines := strings.Fields(string(data))
			if err != nil || len(lines) != 2 {
				t.Fatalf("peak RSS report: %q, %v (want the whole hook's, then nightwatch-hook's)", data, err)
			}
			if _, err := fmt.Sscan(lines[1], &peakKiB); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fmt.Sprint(runs["nightwatch-hook"]) != fmt.Sprint(runs["nightwatch hook"]) {
		t.Errorf("nightwatch-hook and nightwatch hook differ:\n%+v\n%+v", runs["nightwatch-hook"], runs["nightwatch hook"])
	}
	if r := runs["nightwatch hook"]; r.code != 0 || strings.Contains(r.stderr, "unchecked") {
		t.Errorf("the whole hook did not judge the call: %+v", r)
	}
	if runtime.GOOS == "linux" && peakKiB > 16<<10 {
		t.Errorf("nightwatch-hook's peak RSS was %d KiB for a %d MiB payload; it holds no more than %d KiB of it", peakKiB, len(payload)>>20, hookexe.MaxKept>>10)
	}
	t.Logf("nightwatch-hook peak RSS %d KiB", peakKiB)
}
