package healthcheck

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// scripted is a prober that answers from a list, for state-machine tests;
// the probers themselves are tested against real servers in package probe.
type scripted struct {
	mu      sync.Mutex
	answers []probe.Result
	calls   int
	delay   time.Duration
}

func (s *scripted) probe(ctx context.Context, srv *mcpconfig.Server) probe.Result {
	time.Sleep(s.delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if len(s.answers) == 0 {
		return probe.Result{Verdict: probe.Healthy}
	}
	r := s.answers[0]
	if len(s.answers) > 1 {
		s.answers = s.answers[1:]
	}
	return r
}

type fixture struct {
	c          *Checker
	prober     *scripted
	now        time.Time
	reconnects int
	reconnOK   bool
	haveCmd    bool
	srv        *mcpconfig.Server
}

func newFixture(t *testing.T, answers ...probe.Result) *fixture {
	f := &fixture{now: t0, prober: &scripted{answers: answers}, reconnOK: true,
		srv: &mcpconfig.Server{Name: "notes", Transport: mcpconfig.Stdio, Source: "/p/.mcp.json"}}
	f.c = &Checker{
		Store:    &Store{Path: filepath.Join(t.TempDir(), "cache.json")},
		Settings: DefaultSettings(),
		Now:      func() time.Time { return f.now },
		Probe:    f.prober.probe,
		Policy: func(code FailureCode, have bool) Action {
			if code == CodeRateLimited || !have {
				return ActionWait
			}
			return ActionReconnect
		},
		HaveReconnect: func(string) bool { return f.haveCmd },
		Reconnect: func(context.Context, string) ReconnectResult {
			f.reconnects++
			return ReconnectResult{Attempted: true, OK: f.reconnOK, Detail: "pm2 restart notes"}
		},
		StartsTrials: true, // as the hook
	}
	return f
}

func (f *fixture) decide() Decision {
	return f.c.Decide(context.Background(), "notes", func() *mcpconfig.Server { return f.srv })
}

func TestDecideProbesOnlyWhenTheCacheCannotDecide(t *testing.T) {
	f := newFixture(t, probe.Result{Verdict: probe.Healthy})
	if d := f.decide(); !d.Allow || !d.Probed || f.prober.calls != 1 {
		t.Fatalf("first call: %+v, probes %d", d, f.prober.calls)
	}
	f.now = f.now.Add(time.Minute)
	if d := f.decide(); !d.Allow || d.Probed || f.prober.calls != 1 {
		t.Fatalf("within TTL must not probe: %+v, probes %d", d, f.prober.calls)
	}
	f.now = f.now.Add(2 * time.Minute)
	if d := f.decide(); !d.Allow || !d.Probed || f.prober.calls != 2 {
		t.Fatalf("after TTL must probe: %+v, probes %d", d, f.prober.calls)
	}
	e := f.c.read().Entry("notes")
	if e.Source != "/p/.mcp.json" || e.Transport != "stdio" || e.Verdict != "healthy" {
		t.Errorf("entry not stamped: %+v", e)
	}
}

func TestDecideBlocksDuringBackoffThenRetries(t *testing.T) {
	f := newFixture(t,
		probe.Result{Verdict: probe.Transport, Reason: "exited before answering initialize"},
		probe.Result{Verdict: probe.Transport, Reason: "still down"},
		probe.Result{Verdict: probe.Healthy})
	d := f.decide()
	if d.Allow || d.Entry.FailureCount != 1 || d.Entry.NextRetryAt != MillisOf(t0.Add(30*time.Second)) {
		t.Fatalf("first failure: %+v %+v", d, d.Entry)
	}
	f.now = t0.Add(29 * time.Second)
	if d := f.decide(); d.Allow || d.Probed {
		t.Fatalf("within backoff must block without probing: %+v", d)
	}
	f.now = t0.Add(30 * time.Second)
	d = f.decide()
	if d.Allow || d.Entry.FailureCount != 2 || d.Entry.NextRetryAt != MillisOf(f.now.Add(time.Minute)) {
		t.Fatalf("second failure must double the backoff: %+v", d.Entry)
	}
	if d.Entry.UnhealthySince != MillisOf(t0) {
		t.Errorf("outage start moved: %+v", d.Entry)
	}
	f.now = f.now.Add(time.Minute)
	d = f.decide()
	if !d.Allow || d.Entry.RestoredBy != RestoredByProbe || d.Entry.LastRestoredAt != MillisOf(f.now) {
		t.Fatalf("recovery: %+v", d.Entry)
	}
	if f.reconnects != 0 {
		t.Errorf("no reconnect command is configured, yet %d ran", f.reconnects)
	}
}

func TestReconnectPolicy(t *testing.T) {
	tests := []struct {
		name        string
		first       probe.Result
		reprobe     probe.Result
		haveCmd     bool
		reconnOK    bool
		wantAllow   bool
		wantReconn  int
		wantRetryAt time.Duration
	}{
		{"unavailable, reconnect fixes it", probe.Result{Verdict: probe.Unavailable, Status: 503}, probe.Result{Verdict: probe.Healthy}, true, true, true, 1, 0},
		{"unavailable, reconnect works but server still down", probe.Result{Verdict: probe.Unavailable}, probe.Result{Verdict: probe.Unavailable}, true, true, false, 1, 30 * time.Second},
		{"unavailable, reconnect command fails", probe.Result{Verdict: probe.Unavailable}, probe.Result{Verdict: probe.Healthy}, true, false, false, 1, 30 * time.Second},
		{"transport without a command waits", probe.Result{Verdict: probe.Transport}, probe.Result{Verdict: probe.Healthy}, false, true, false, 0, 30 * time.Second},
		{"rate limited never reconnects", probe.Result{Verdict: probe.RateLimited, Status: 429, RetryAfter: 7 * time.Second}, probe.Result{Verdict: probe.Healthy}, true, true, false, 0, 7 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.first, tt.reprobe)
			f.haveCmd, f.reconnOK = tt.haveCmd, tt.reconnOK
			d := f.decide()
			if d.Allow != tt.wantAllow || f.reconnects != tt.wantReconn {
				t.Fatalf("allow %v reconnects %d, want %v %d (%+v)", d.Allow, f.reconnects, tt.wantAllow, tt.wantReconn, d.Entry)
			}
			if !d.Allow && d.Entry.NextRetryAt != MillisOf(t0.Add(tt.wantRetryAt)) {
				t.Errorf("next retry %v, want now+%s", d.Entry.NextRetryAt.Time(), tt.wantRetryAt)
			}
			if d.Allow && tt.wantReconn > 0 && d.Entry.RestoredBy != RestoredByReconnect {
				t.Errorf("restoredBy = %q", d.Entry.RestoredBy)
			}
		})
	}
}

func TestAuthRequiredProbe(t *testing.T) {
	f := newFixture(t, probe.Result{Verdict: probe.AuthRequired, Status: 401})
	if d := f.decide(); !d.Allow || d.Entry.Status != StatusHealthy || d.Entry.Verdict != "auth-required" {
		t.Fatalf("an auth-guarded endpoint is reachable: %+v", d.Entry)
	}
	// A real call then fails authentication.
	f.srv.Transport = mcpconfig.HTTP
	cl, e := f.c.RecordFailure(context.Background(), "notes", f.srv, "Command failed with no output")
	if cl.Code != CodeAuth || e.Status != StatusUnhealthy {
		t.Fatalf("auth failure not recorded: %+v %+v", cl, e)
	}
	// After the backoff the probe still sees only 401: one trial call goes
	// through, the server stays blocked for the others.
	f.now = f.now.Add(31 * time.Second)
	d := f.decide()
	if !d.Allow || !d.Trial || d.Entry.Status != StatusUnhealthy || d.Entry.FailureCount != 1 {
		t.Fatalf("trial: %+v %+v", d, d.Entry)
	}
	if d2 := f.decide(); d2.Allow {
		t.Fatalf("a second call during the trial must be blocked: %+v", d2)
	}
}

func TestNoDefinitionIsSaidNotBlocked(t *testing.T) {
	f := newFixture(t)
	d := f.c.Decide(context.Background(), "ghost", func() *mcpconfig.Server { return nil })
	if !d.Allow || !d.Unchecked || !strings.Contains(d.Note, "passive health only") || f.prober.calls != 0 {
		t.Fatalf("%+v", d)
	}
}

// TestOneProbeForConcurrentHooks: when the backoff runs out, eight hooks
// ask at once; one probes, the others wait for its verdict.
func TestOneProbeForConcurrentHooks(t *testing.T) {
	f := newFixture(t, probe.Result{Verdict: probe.Healthy})
	f.prober.delay = 200 * time.Millisecond
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each hook is its own process in life: its own Store and lock.
			c := *f.c
			c.Store = &Store{Path: f.c.Store.Path}
			if c.Decide(context.Background(), "notes", func() *mcpconfig.Server { return f.srv }).Allow {
				allowed.Add(1)
			}
		}()
	}
	wg.Wait()
	if f.prober.calls != 1 || allowed.Load() != 8 {
		t.Fatalf("probes %d (want 1), allowed %d (want 8)", f.prober.calls, allowed.Load())
	}
}

func TestRecordFailure(t *testing.T) {
	tests := []struct {
		name       string
		text       string
		transport  mcpconfig.Transport
		probe      probe.Result
		haveCmd    bool
		wantStatus Status // "" when nothing was recorded
		wantCode   FailureCode
		wantCount  int // consecutive upstream failures after it
		wantProbes int
		wantRecon  int
	}{
		{"tool error leaves the server alone", "ENOENT: no such file or directory, open '/x'", mcpconfig.Stdio, probe.Result{}, true, "", CodeToolError, 0, 0, 0},
		{"a text that tells nothing is not a verdict", "STUB isError text", mcpconfig.Stdio, probe.Result{}, true, "", CodeUnknown, 0, 0, 0},
		{"crash marks transport (2.1.197)", "MCP error -32000: Connection closed", mcpconfig.Stdio, probe.Result{}, false, StatusUnhealthy, CodeTransport, 0, 0, 0},
		{"crash marks transport (2.1.332)", "Connection closed", mcpconfig.Stdio, probe.Result{}, false, StatusUnhealthy, CodeTransport, 0, 0, 0},
		{"crash with reconnect and healthy re-probe", "Connection closed", mcpconfig.Stdio, probe.Result{Verdict: probe.Healthy}, true, StatusHealthy, "", 0, 1, 1},
		{"refused HTTP (2.1.332)", "ECONNREFUSED: Unable to connect. Is the computer able to access the url?", mcpconfig.HTTP, probe.Result{}, false, StatusUnhealthy, CodeTransport, 0, 0, 0},
		{"status-less HTTP error asks the server", "Streamable HTTP error: Error POSTing to endpoint: ", mcpconfig.HTTP, probe.Result{Verdict: probe.Unavailable, Status: 503}, false, StatusUnhealthy, CodeUnavailable, 0, 1, 0},
		{"status-less HTTP error (2.1.332) asks the server", "Error POSTing to endpoint:", mcpconfig.HTTP, probe.Result{Verdict: probe.Unavailable, Status: 503}, false, StatusUnhealthy, CodeUnavailable, 0, 1, 0},
		{"status-less HTTP error, handshake fine: counted", "Error POSTing to endpoint: oops", mcpconfig.HTTP, probe.Result{Verdict: probe.Healthy}, false, StatusHealthy, CodeUnavailable, 1, 1, 0},
		{"status-less HTTP error is a 429", "Streamable HTTP error: Error POSTing to endpoint: ", mcpconfig.HTTP, probe.Result{Verdict: probe.RateLimited, RetryAfter: time.Minute}, true, StatusUnhealthy, CodeRateLimited, 0, 1, 0},
		{"an HTTP server's own \"Connection closed\", handshake fine: counted, not opened", "Connection closed", mcpconfig.HTTP, probe.Result{Verdict: probe.Healthy}, false, StatusHealthy, CodeTransport, 1, 1, 0},
		{"an HTTP server's \"Connection closed\", and it refuses: opened by the probe", "MCP error -32000: Connection closed", mcpconfig.HTTP, probe.Result{Verdict: probe.Transport, Reason: "connect: connection refused"}, false, StatusUnhealthy, CodeTransport, 0, 1, 0},
		{"upstream 503 as a bare JSON-RPC message counts", "upstream returned 503 Service Unavailable", mcpconfig.Stdio, probe.Result{}, true, StatusHealthy, CodeUnavailable, 1, 0, 0},
		{"upstream 503 with 2.1.197's prefix counts", "MCP error -32000: upstream returned 503 Service Unavailable", mcpconfig.Stdio, probe.Result{}, true, StatusHealthy, CodeUnavailable, 1, 0, 0},
		{"2.1.332's 401 opens at once", `MCP server "notes" needs you to sign in again (run /mcp to re-authenticate)`, mcpconfig.HTTP, probe.Result{}, false, StatusUnhealthy, CodeAuth, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.probe)
			f.haveCmd = tt.haveCmd
			f.srv.Transport = tt.transport
			cl, e := f.c.RecordFailure(context.Background(), "notes", f.srv, tt.text)
			got := Status("")
			if e != nil {
				got = e.Status
			}
			if got != tt.wantStatus || f.prober.calls != tt.wantProbes || f.reconnects != tt.wantRecon {
				t.Fatalf("status %q probes %d reconnects %d, want %q %d %d (%+v)", got, f.prober.calls, f.reconnects,
					tt.wantStatus, tt.wantProbes, tt.wantRecon, e)
			}
			// The code column is checked on every row: the class of the
			// text, and the entry's class when the server was opened.
			if cl.Code != tt.wantCode && !(tt.wantStatus == StatusHealthy && tt.wantRecon > 0) {
				t.Errorf("class %q, want %q", cl.Code, tt.wantCode)
			}
			if e != nil && e.Status == StatusUnhealthy && e.LastFailureCode != tt.wantCode {
				t.Errorf("entry code %q, want %q", e.LastFailureCode, tt.wantCode)
			}
			if e != nil && e.Status == StatusHealthy && e.LastFailureCode != "" {
				t.Errorf("a healthy entry holds code %q", e.LastFailureCode)
			}
			if c := 0; e != nil {
				c = e.ConsecutiveFailures
				if c != tt.wantCount {
					t.Errorf("consecutive failures %d, want %d", c, tt.wantCount)
				}
			}
		})
	}
}

// TestUpstreamFailuresOpenAtTheThreshold: the server's handshake works but
// its upstream fails. Three failures in a row open it (the first two leave
// it callable), a healthy probe does not clear it, one trial call goes
// through after the backoff; its failure reopens with the next backoff,
// its success closes the server. A tool's own errors never count.
func TestUpstreamFailuresOpenAtTheThreshold(t *testing.T) {
	f := newFixture(t, probe.Result{Verdict: probe.Healthy})
	ctx := context.Background()
	fail := func(text string) *Entry {
		t.Helper()
		_, e := f.c.RecordFailure(ctx, "notes", f.srv, text)
		return e
	}
	for i := 0; i < 4; i++ {
		fail("ENOENT: no such file or directory")
	}
	if d := f.decide(); !d.Allow {
		t.Fatalf("tool errors blocked the server: %+v", d.Entry)
	}
	fail("upstream returned 503 Service Unavailable")
	e := fail("GitHub API rate limit exceeded")
	if e.Status != StatusHealthy || e.ConsecutiveFailures != 2 {
		t.Fatalf("two failures must not open it: %+v", e)
	}
	f.c.RecordSuccess("notes", f.srv) // a call in between works: the count starts over
	fail("upstream returned 503 Service Unavailable")
	fail("upstream returned 503 Service Unavailable")
	if d := f.decide(); !d.Allow {
		t.Fatalf("two failures after a success must not open it: %+v", d.Entry)
	}
	e = fail("upstream returned 503 Service Unavailable")
	if e.Status != StatusUnhealthy || e.Witness != WitnessCalls || e.LastFailureCode != CodeUnavailable || e.FailureCount != 1 {
		t.Fatalf("the third failure must open it: %+v", e)
	}
	if d := f.decide(); d.Allow {
		t.Fatalf("open: a call went through: %+v", d)
	}
	// After the backoff: no probe (the handshake cannot see it), one trial.
	f.now = f.now.Add(31 * time.Second)
	probes := f.prober.calls
	d := f.decide()
	if !d.Allow || !d.Trial || f.prober.calls != probes {
		t.Fatalf("trial: %+v (probes %d → %d)", d, probes, f.prober.calls)
	}
	if d2 := f.decide(); d2.Allow {
		t.Fatalf("a second call during the trial went through: %+v", d2)
	}
	e = fail("upstream returned 503 Service Unavailable")
	if e.Status != StatusUnhealthy || e.FailureCount != 2 || e.NextRetryAt != MillisOf(f.now.Add(time.Minute)) {
		t.Fatalf("a failed trial reopens with the next backoff: %+v", e)
	}
	f.now = f.now.Add(61 * time.Second)
	if d := f.decide(); !d.Trial {
		t.Fatalf("second trial: %+v", d)
	}
	f.c.RecordSuccess("notes", f.srv)
	if d := f.decide(); !d.Allow || d.Entry.Status != StatusHealthy || d.Entry.RestoredBy != RestoredByPassive {
		t.Fatalf("a working trial closes the server: %+v", d.Entry)
	}
}

// TestPassiveHealthWithoutDefinition: a server nightwatch cannot read a
// definition of gets its failures recorded, counted and blocked; its
// client-side failures open it at once; a trial call ends the outage.
func TestPassiveHealthWithoutDefinition(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	none := func() *mcpconfig.Server { return nil }
	for i := 0; i < 3; i++ {
		f.c.RecordFailure(ctx, "dyn", nil, "upstream returned 503 Service Unavailable")
	}
	if d := f.c.Decide(ctx, "dyn", none); d.Allow {
		t.Fatalf("three upstream failures of a server without a definition: %+v", d.Entry)
	}
	_, e := f.c.RecordFailure(ctx, "gone", nil, "ECONNREFUSED: Unable to connect. Is the computer able to access the url?")
	if e.Status != StatusUnhealthy || e.Witness != WitnessCalls {
		t.Fatalf("refused: %+v", e)
	}
	f.now = f.now.Add(31 * time.Second)
	if d := f.c.Decide(ctx, "gone", none); !d.Allow || !d.Trial {
		t.Fatalf("after the backoff one trial: %+v", d)
	}
	if d := f.c.Decide(ctx, "gone", none); d.Allow {
		t.Fatalf("only one trial: %+v", d)
	}
	f.c.RecordSuccess("gone", nil)
	if d := f.c.Decide(ctx, "gone", none); !d.Allow || d.Unchecked {
		t.Fatalf("closed by its trial, decided from the cache: %+v", d)
	}
	if f.prober.calls != 0 {
		t.Errorf("a server without a definition was probed %d times", f.prober.calls)
	}
}

// TestChecksDoNotUseUpTheTrial: the night's check before a launch (a
// Checker without StartsTrials) says a half-open server may be called but
// leaves the trial to the session's first real call.
func TestChecksDoNotUseUpTheTrial(t *testing.T) {
	f := newFixture(t)
	for i := 0; i < 3; i++ {
		f.c.RecordFailure(context.Background(), "notes", f.srv, "upstream returned 503 Service Unavailable")
	}
	f.now = f.now.Add(31 * time.Second)
	night := *f.c
	night.StartsTrials = false
	for i := 0; i < 3; i++ {
		if d := night.Decide(context.Background(), "notes", func() *mcpconfig.Server { return f.srv }); !d.Allow || d.Trial {
			t.Fatalf("check %d: %+v", i, d)
		}
	}
	if d := f.decide(); !d.Allow || !d.Trial {
		t.Fatalf("the session's call must still be the trial: %+v", d)
	}
}

// TestOneTrialAcrossProcesses: when the backoff of an outage only calls
// can see runs out, 16 hooks (each its own Store, as processes are) ask at
// once; exactly one call goes through.
func TestOneTrialAcrossProcesses(t *testing.T) {
	f := newFixture(t)
	for i := 0; i < 3; i++ {
		f.c.RecordFailure(context.Background(), "notes", f.srv, "upstream returned 503 Service Unavailable")
	}
	f.now = f.now.Add(31 * time.Second)
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := *f.c
			c.Store = &Store{Path: f.c.Store.Path}
			if c.Decide(context.Background(), "notes", func() *mcpconfig.Server { return f.srv }).Allow {
				allowed.Add(1)
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 1 {
		t.Fatalf("%d trial calls went through, want exactly 1", allowed.Load())
	}
}

// TestConcurrentCountsAreNotLost: 64 hooks record an upstream failure at
// once (threshold high enough not to trip); the count is 64.
func TestConcurrentCountsAreNotLost(t *testing.T) {
	f := newFixture(t)
	f.c.Settings.FailureThreshold = 1000
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := *f.c
			c.Store = &Store{Path: f.c.Store.Path}
			c.RecordFailure(context.Background(), "notes", f.srv, "upstream returned 503 Service Unavailable")
		}()
	}
	wg.Wait()
	e, _ := f.c.Store.Read()
	if got := e.Entry("notes").ConsecutiveFailures; got != 64 {
		t.Fatalf("count %d after 64 concurrent failures, want 64", got)
	}
}

// TestNewResolvesDefaults: the one constructor gives every field its
// default, and a Checker built by hand (the supervisor's, until it calls
// New) still decides with the default threshold.
func TestNewResolvesDefaults(t *testing.T) {
	c := New(&Store{Path: filepath.Join(t.TempDir(), "c.json")}, Settings{}, Options{})
	if c.Settings != DefaultSettings() || c.Policy == nil || c.Now == nil || c.ProbeWait != DefaultProbeWait || c.Events == nil {
		t.Fatalf("defaults not resolved: %+v", c)
	}
	d := c.Decide(context.Background(), "x", func() *mcpconfig.Server {
		return &mcpconfig.Server{Name: "x", Transport: mcpconfig.Stdio}
	})
	if !d.Allow || !d.Unchecked {
		t.Fatalf("without a prober a server is watched, not probed: %+v", d)
	}
	hand := &Checker{Store: &Store{Path: filepath.Join(t.TempDir(), "c.json")}}
	for i := 0; i < 2; i++ {
		hand.RecordFailure(context.Background(), "x", nil, "503 Service Unavailable")
	}
	if g, _ := hand.Gate("x"); g == GateBlock {
		t.Fatal("a zero-value Checker opened at the second failure")
	}
	hand.RecordFailure(context.Background(), "x", nil, "503 Service Unavailable")
	if g, _ := hand.Gate("x"); g != GateBlock {
		t.Fatalf("a zero-value Checker did not open at the third failure: %s", g)
	}
}

func TestEventsFileRecordsChangesAndResets(t *testing.T) {
	f := newFixture(t, probe.Result{Verdict: probe.Transport, Reason: "refused"}, probe.Result{Verdict: probe.Healthy})
	path := filepath.Join(t.TempDir(), "events.jsonl")
	f.c.Events = &EventLog{Path: path}
	f.decide()
	f.now = f.now.Add(time.Minute)
	f.decide()
	f.decide() // within TTL: no change, no line
	if _, err := f.c.Reset([]string{"notes"}, false, false); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 3 {
		t.Fatalf("want 3 events (down, up, reset), got %d:\n%v", len(lines), lines)
	}
}

func TestRecordPreflightWritesAllInOneUpdate(t *testing.T) {
	f := newFixture(t)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	f.c.Events = &EventLog{Path: events}
	up := &mcpconfig.Server{Name: "up", Transport: mcpconfig.Stdio}
	down := &mcpconfig.Server{Name: "down", Transport: mcpconfig.HTTP}
	ws := &mcpconfig.Server{Name: "ws", Transport: mcpconfig.WS}
	f.c.RecordPreflight([]ProbeRecord{
		{up, probe.Result{Verdict: probe.Healthy}},
		{down, probe.Result{Verdict: probe.RateLimited, RetryAfter: 9 * time.Second, Reason: "HTTP 429"}},
		{ws, probe.Result{Verdict: probe.Unsupported}},
	})
	file := f.c.read()
	if e := file.Entry("up"); e == nil || e.Status != StatusHealthy {
		t.Errorf("up: %+v", e)
	}
	if e := file.Entry("down"); e == nil || e.LastFailureCode != CodeRateLimited || e.NextRetryAt != MillisOf(t0.Add(9*time.Second)) {
		t.Errorf("down: %+v", e)
	}
	if file.Entry("ws") != nil {
		t.Error("an unsupported transport must not be recorded")
	}
	lines := readLines(t, events)
	if len(lines) != 2 {
		t.Fatalf("want 2 state events, got %v", lines)
	}
	for _, l := range lines {
		if !strings.Contains(l, `"by":"preflight"`) {
			t.Errorf("a preflight verdict not announced by the preflight: %s", l)
		}
	}
	// A server already down before the night is the night's outage too:
	// the next preflight announces it again, unchanged as it is.
	f.c.RecordPreflight([]ProbeRecord{{down, probe.Result{Verdict: probe.RateLimited, Reason: "HTTP 429"}}})
	if lines := readLines(t, events); len(lines) != 3 || !strings.Contains(lines[2], `"from":"unhealthy","to":"unhealthy"`) {
		t.Errorf("the second preflight's verdict was not announced: %v", lines)
	}
}

// The one reachability rule, whoever observes: a 401/403 to a probe that
// carried the server's own credentials (its configured Authorization) is
// those credentials failing, an auth outage; to a probe without them it
// proves a live endpoint guarding itself. The hook (Decide), preflight
// (RecordPreflight) and the night's maintenance (RecordProbe) agree, and
// each announces the verdict with its own name.
func TestOneReachabilityRuleForEveryObserver(t *testing.T) {
	withToken := map[string]string{"authorization": "Bearer revoked"}
	observers := []struct {
		by      By
		observe func(f *fixture, res probe.Result) *Entry
	}{
		{ByProbe, func(f *fixture, res probe.Result) *Entry {
			f.prober.answers = []probe.Result{res}
			return f.decide().Entry
		}},
		{ByPreflight, func(f *fixture, res probe.Result) *Entry {
			f.c.RecordPreflight([]ProbeRecord{{f.srv, res}})
			return f.c.read().Entry(f.srv.Name)
		}},
		{ByMaintenance, func(f *fixture, res probe.Result) *Entry { return f.c.RecordProbe(f.srv, res, ByMaintenance) }},
	}
	for _, tc := range []struct {
		name        string
		headers     map[string]string
		status      int
		wantHealthy bool
	}{
		{"401 to the server's own token", withToken, 401, false},
		{"403 to the server's own token", withToken, 403, false},
		{"401 without credentials", nil, 401, true},
		{"401 with other headers only", map[string]string{"X-Team": "night"}, 401, true},
		{"403 without credentials", nil, 403, true},
	} {
		for _, o := range observers {
			t.Run(tc.name+"/"+string(o.by), func(t *testing.T) {
				f := newFixture(t)
				events := filepath.Join(t.TempDir(), "events.jsonl")
				f.c.Events = &EventLog{Path: events}
				f.srv.Transport, f.srv.Headers = mcpconfig.HTTP, tc.headers
				e := o.observe(f, probe.Result{Verdict: probe.AuthRequired, Status: tc.status, Reason: "HTTP 401"})
				if e == nil || (e.Status == StatusHealthy) != tc.wantHealthy {
					t.Fatalf("entry %+v, want healthy %v", e, tc.wantHealthy)
				}
				if !tc.wantHealthy && e.LastFailureCode != CodeAuth {
					t.Errorf("code %q, want auth", e.LastFailureCode)
				}
				lines := readLines(t, events)
				if len(lines) != 1 || !strings.Contains(lines[0], `"by":"`+string(o.by)+`"`) {
					t.Fatalf("events %v, want one by %s", lines, o.by)
				}
				if !tc.wantHealthy && (!strings.Contains(lines[0], `"to":"unhealthy"`) || !strings.Contains(lines[0], `"code":"auth"`)) {
					t.Errorf("event %s, want an auth outage", lines[0])
				}
			})
		}
	}
}

// A probe that finds a server down and a reconnect that repairs it at once
// is still an outage: the Checker announces it down before the command
// runs, and back by the reconnect after (the night journals both).
func TestAnOutageRepairedByAReconnectIsAnnounced(t *testing.T) {
	f := newFixture(t, probe.Result{Verdict: probe.Healthy})
	events := filepath.Join(t.TempDir(), "events.jsonl")
	f.c.Events = &EventLog{Path: events}
	f.haveCmd = true
	if d := f.decide(); !d.Allow {
		t.Fatal("a healthy server was blocked")
	}
	f.now = f.now.Add(f.c.Settings.TTL + time.Second) // the verdict expired
	f.prober.answers = []probe.Result{{Verdict: probe.Transport, Reason: "connection refused"}, {Verdict: probe.Healthy}}
	if d := f.decide(); !d.Allow || f.reconnects != 1 {
		t.Fatalf("allow %v after %d reconnects, want allowed after one", d.Allow, f.reconnects)
	}
	lines := readLines(t, events)
	if len(lines) != 3 {
		t.Fatalf("want 3 events (up, down, back by reconnect), got %v", lines)
	}
	if !strings.Contains(lines[1], `"to":"unhealthy"`) || !strings.Contains(lines[1], `"by":"probe"`) || !strings.Contains(lines[1], "reconnecting") {
		t.Errorf("no outage announced before the reconnect: %s", lines[1])
	}
	if !strings.Contains(lines[2], `"from":"unhealthy","to":"healthy"`) || !strings.Contains(lines[2], `"by":"reconnect"`) {
		t.Errorf("not announced back by the reconnect: %s", lines[2])
	}
	// A reconnect that does not repair it: one outage, not two.
	f.now = f.now.Add(f.c.Settings.TTL + time.Second)
	f.reconnOK = false
	f.prober.answers = []probe.Result{{Verdict: probe.Transport, Reason: "connection refused"}}
	if d := f.decide(); d.Allow {
		t.Fatal("a server down after its failed reconnect was allowed")
	}
	if lines := readLines(t, events); len(lines) != 4 {
		t.Errorf("want one more event (down), got %v", lines[3:])
	}
}

// A 401 to a probe that sent the configured Authorization header is the
// client's own credentials failing: an auth failure, reconnected (re-auth),
// never "reachable". Without a configured header (OAuth held by Claude
// Code) the same 401 proves only a live endpoint.
func TestAuthRequiredWithTheClientsCredentials(t *testing.T) {
	tests := []struct {
		name       string
		headers    map[string]string
		wantAllow  bool
		wantRecons int
	}{
		{"token in the config", map[string]string{"Authorization": "Bearer expired"}, false, 1},
		{"no credentials configured", nil, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, probe.Result{Verdict: probe.AuthRequired, Status: 401}, probe.Result{Verdict: probe.AuthRequired, Status: 401})
			f.srv.Transport, f.srv.Headers = mcpconfig.HTTP, tt.headers
			f.haveCmd = true
			d := f.decide()
			if d.Allow != tt.wantAllow || f.reconnects != tt.wantRecons {
				t.Fatalf("allow %v reconnects %d, want %v %d (%+v)", d.Allow, f.reconnects, tt.wantAllow, tt.wantRecons, d.Entry)
			}
			if !tt.wantAllow && d.Entry.LastFailureCode != CodeAuth {
				t.Errorf("code %q, want auth", d.Entry.LastFailureCode)
			}
			// Preflight records verdicts the same way.
			e := f.c.RecordProbe(f.srv, probe.Result{Verdict: probe.AuthRequired, Status: 401}, ByProbe)
			if (e.Status == StatusHealthy) != tt.wantAllow {
				t.Errorf("RecordProbe: %+v", e)
			}
		})
	}
}

// TestRecordClientStatus: a server the session's init reports failed or
// needing auth is opened and announced; other statuses change nothing.
func TestRecordClientStatus(t *testing.T) {
	f := newFixture(t)
	path := filepath.Join(t.TempDir(), "events.jsonl")
	f.c.Events = &EventLog{Path: path}
	if e := f.c.RecordClientStatus("notes", f.srv, "connected", ""); e != nil {
		t.Fatalf("connected recorded: %+v", e)
	}
	e := f.c.RecordClientStatus("notes", f.srv, "failed", "Claude Code reported the server failed")
	if e.Status != StatusUnhealthy || e.LastFailureCode != CodeTransport || e.Witness != WitnessProbe {
		t.Fatalf("failed: %+v", e)
	}
	e = f.c.RecordClientStatus("web", &mcpconfig.Server{Name: "web", Transport: mcpconfig.HTTP}, "needs-auth", "needs auth")
	if e.LastFailureCode != CodeAuth || e.Witness != WitnessCalls || e.ArticleCode() != Article401 {
		t.Fatalf("needs-auth: %+v", e)
	}
	if lines := readLines(t, path); len(lines) != 2 || !strings.Contains(lines[0], `"by":"session-init"`) {
		t.Fatalf("events: %v", lines)
	}
}

// A stdio probe that ran out of a budget shorter than Claude Code's own
// start-up wait (MCP_TIMEOUT) does not call the server down: it may only be
// slow to start, and the session's client would have waited. The call goes
// ahead, said out loud, and nothing is recorded. A budget as long as the
// client's wait, or an HTTP timeout, is a real verdict.
func TestSlowStdioStartIsNotDown(t *testing.T) {
	for _, tc := range []struct {
		name          string
		transport     mcpconfig.Transport
		timedOutAfter time.Duration
		clientStartup time.Duration
		wantAllow     bool
		wantRecorded  bool
	}{
		{"5s probe, client waits 30s", mcpconfig.Stdio, 5 * time.Second, 30 * time.Second, true, false},
		{"probe as long as the client's wait", mcpconfig.Stdio, 30 * time.Second, 30 * time.Second, false, true},
		{"client waits less (MCP_TIMEOUT=3000)", mcpconfig.Stdio, 5 * time.Second, 3 * time.Second, false, true},
		{"an HTTP timeout is a verdict", mcpconfig.HTTP, 5 * time.Second, 30 * time.Second, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, probe.Result{Verdict: probe.Transport, Reason: "no answer to initialize within 5s (hang)", TimedOutAfter: tc.timedOutAfter})
			f.srv.Transport = tc.transport
			f.c.Settings.ClientStartup = tc.clientStartup
			d := f.decide()
			if d.Allow != tc.wantAllow {
				t.Fatalf("Allow = %v, want %v: %+v", d.Allow, tc.wantAllow, d)
			}
			if tc.wantAllow && (!d.Unchecked || !strings.Contains(d.Note, "MCP_TIMEOUT")) {
				t.Errorf("a call let through unchecked must say so: %+v", d)
			}
			if got := f.c.read().Entry("notes") != nil; got != tc.wantRecorded {
				t.Errorf("recorded = %v, want %v", got, tc.wantRecorded)
			}
		})
	}
}

// TestTaskOnlySuccessIsNoHealth: a call that succeeded in the client
// because its server only accepted it as an MCP task (exec-server recorded
// the task; 2.1.197 shows PostToolUse an empty success) is no proof that
// the server is healthy: it ends no outage, closes no half-open trial and
// starts no failure count over. The same success without a task does all
// three. A server known healthy is not written either way, and its ledger
// is never asked.
func TestTaskOnlySuccessIsNoHealth(t *testing.T) {
	ctx := context.Background()
	upstream := "upstream returned 503 Service Unavailable"
	for _, tt := range []struct {
		name  string
		setup func(f *fixture)
		// status and count are the entry's state, kept by a task-only
		// success; asked: whether TaskOnly is asked at all.
		status Status
		count  int
		asked  bool
	}{
		{"an outage within its backoff", func(f *fixture) {
			f.c.RecordFailure(ctx, "notes", f.srv, "Connection closed")
		}, StatusUnhealthy, 0, true},
		{"half-open: its one trial call", func(f *fixture) {
			for range 3 {
				f.c.RecordFailure(ctx, "notes", f.srv, upstream)
			}
			f.now = f.now.Add(31 * time.Second)
			if d := f.decide(); !d.Trial {
				t.Fatalf("no trial: %+v", d)
			}
		}, StatusUnhealthy, 0, true},
		{"two upstream failures counted", func(f *fixture) {
			f.c.RecordFailure(ctx, "notes", f.srv, upstream)
			f.c.RecordFailure(ctx, "notes", f.srv, upstream)
		}, StatusHealthy, 2, true},
		{"known healthy", func(f *fixture) {
			f.c.RecordSuccess("notes", f.srv)
		}, StatusHealthy, 0, false},
	} {
		for _, task := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/task %v", tt.name, task), func(t *testing.T) {
				f := newFixture(t, probe.Result{Verdict: probe.Healthy})
				tt.setup(f)
				asked := false
				recorded := f.c.RecordCallSuccessIn(nil, "notes", func() *mcpconfig.Server { return f.srv },
					CallSuccess{TaskOnly: func() bool { asked = true; return task }})
				if asked != tt.asked {
					t.Errorf("TaskOnly asked %v, want %v", asked, tt.asked)
				}
				sn := f.c.Snapshot()
				e := sn.Entry("notes")
				sn.Close()
				if e == nil {
					t.Fatal("no entry")
				}
				switch {
				case task || !tt.asked:
					if recorded || e.Status != tt.status || e.ConsecutiveFailures != tt.count {
						t.Errorf("recorded %v, entry %s with %d counted; want %s with %d, unchanged", recorded, e.Status, e.ConsecutiveFailures, tt.status, tt.count)
					}
				default:
					if !recorded || e.Status != StatusHealthy || e.ConsecutiveFailures != 0 || e.RestoredBy != RestoredByPassive && tt.status == StatusUnhealthy {
						t.Errorf("recorded %v, entry %+v; want healthy, restored by the call", recorded, e)
					}
				}
			})
		}
	}
}
