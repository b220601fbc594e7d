package healthsync

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/cluster/peers"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// Hosts A and B each have three hooks that find notes' verdict expired at
// the same moment: one probe runs across both hosts (not one per host),
// and every hook decides from its verdict. The server is a real HTTP MCP
// server; the probe is the hook's own.
func TestOneProbeAcrossHosts(t *testing.T) {
	dsn := newDB(t)
	var handshakes atomic.Int64
	srv := httptest.NewServer(mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{}))
	defer srv.Close()
	def := &mcpconfig.Server{Name: "notes", Transport: mcpconfig.HTTP, URL: srv.URL + mcpserver.StreamablePath}
	probeOnce := func(ctx context.Context, s *mcpconfig.Server) probe.Result {
		handshakes.Add(1)
		res := probe.Probe(ctx, s, probe.Options{Timeout: 5 * time.Second})
		// A slow server widens the window in which the others wait.
		time.Sleep(300 * time.Millisecond)
		return res
	}
	expired := &healthcheck.Entry{Status: healthcheck.StatusHealthy, CheckedAt: healthcheck.MillisOf(time.Now().Add(-3 * time.Minute)),
		ExpiresAt: healthcheck.MillisOf(time.Now().Add(-time.Minute))}
	hosts := []*host{newHost(t, dsn, "host-a"), newHost(t, dsn, "host-b")}
	for _, h := range hosts {
		seedEntry(t, h, "notes", expired)
		h.start(t)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	decisions := make(chan healthcheck.Decision, 6)
	for _, h := range hosts {
		for range 3 {
			c := h.checker(healthcheck.Options{Probe: probeOnce, ProbeWait: 10 * time.Second, Warn: h.warns.add,
				Peers: peers.New(h.relay.SocketPath(), 2*time.Second)})
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				decisions <- c.Decide(context.Background(), "notes", func() *mcpconfig.Server { return def })
			}()
		}
	}
	close(start)
	wg.Wait()
	close(decisions)
	probed := 0
	for d := range decisions {
		if !d.Allow {
			t.Errorf("a hook blocked a healthy server: %+v", d)
		}
		if d.Probed {
			probed++
		}
	}
	if n := handshakes.Load(); n != 1 || probed != 1 {
		t.Fatalf("%d probes (%d decisions said so) across two hosts of three hooks each, want 1\nA: %s\nB: %s",
			n, probed, hosts[0].warns, hosts[1].warns)
	}
}

// Hosts A and B each have four hooks at a half-open server whose outage
// only calls can see: exactly one call is let through as the trial across
// both hosts; every other is blocked.
func TestOneTrialAcrossHosts(t *testing.T) {
	dsn := newDB(t)
	now := time.Now()
	half := &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, CheckedAt: healthcheck.MillisOf(now.Add(-time.Minute)),
		ExpiresAt: healthcheck.MillisOf(now.Add(-time.Minute)), NextRetryAt: healthcheck.MillisOf(now.Add(-time.Second)),
		FailureCount: 1, LastFailureCode: healthcheck.CodeUnavailable, Witness: healthcheck.WitnessCalls,
		UnhealthySince: healthcheck.MillisOf(now.Add(-time.Minute))}
	hosts := []*host{newHost(t, dsn, "host-a"), newHost(t, dsn, "host-b")}
	for _, h := range hosts {
		seedEntry(t, h, "notes", half)
		h.start(t)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	var trials, allowed atomic.Int64
	for _, h := range hosts {
		for range 4 {
			c := h.checker(healthcheck.Options{StartsTrials: true, Warn: h.warns.add,
				Peers: peers.New(h.relay.SocketPath(), 2*time.Second)})
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				d := c.Decide(context.Background(), "notes", nil)
				if d.Trial {
					trials.Add(1)
				}
				if d.Allow {
					allowed.Add(1)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	if trials.Load() != 1 || allowed.Load() != 1 {
		t.Fatalf("%d trials, %d calls allowed across two hosts, want 1 and 1\nA: %s\nB: %s", trials.Load(), allowed.Load(), hosts[0].warns, hosts[1].warns)
	}
	// The trial's window reaches the other host: its next call is blocked
	// by the cache alone.
	for _, h := range hosts {
		waitFor(t, h.name+" blocks by its cache", func() bool {
			g, _ := h.checker(healthcheck.Options{}).Gate("notes")
			return g == healthcheck.GateBlock
		})
	}
}

// A relay that cannot be reached is said out loud, and the hook decides as
// a single host (the call is not lost, and not blocked for it).
func TestUnreachableRelayDecidesAsSingleHost(t *testing.T) {
	dir := t.TempDir()
	store := &healthcheck.Store{Path: filepath.Join(dir, "cache.json")}
	seedEntry(t, &host{store: store}, "notes", &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, CheckedAt: 1,
		NextRetryAt: healthcheck.MillisOf(time.Now().Add(-time.Second)), FailureCount: 1, Witness: healthcheck.WitnessCalls})
	var w warnings
	c := healthcheck.New(store, healthcheck.DefaultSettings(), healthcheck.Options{StartsTrials: true, Warn: w.add,
		Peers: peers.New(filepath.Join(dir, "no.sock"), time.Second)})
	d := c.Decide(context.Background(), "notes", nil)
	if !d.Allow || !d.Trial || !strings.Contains(w.String(), "deciding as a single host") {
		t.Fatalf("decision %+v, warnings %q", d, w.String())
	}
}

// The relay reads what any local process sends: garbage, a line over the
// limit and a silent client cost only their own connection, and the next
// hook is answered.
func TestSocketSurvivesGarbage(t *testing.T) {
	dsn := newDB(t)
	h := startHost(t, dsn, "host-a")
	path := h.relay.SocketPath()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for _, line := range []string{"garbage", `{"op":"claim"}`, "\x00\xff{", `{"op":"claim","server":"notes","kind":"probe","ttl_ms":-5}`} {
		if _, err := c.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
		resp, err := br.ReadString('\n')
		if err != nil || !strings.Contains(resp, `"ok":false`) {
			t.Fatalf("%q answered %q (%v), want an error line", line, resp, err)
		}
	}
	if _, err := c.Write([]byte(strings.Repeat("x", 3*peers.MaxLine) + "\n")); err != nil {
		t.Fatal(err)
	}
	if resp, _ := br.ReadString('\n'); !strings.Contains(resp, "limit") {
		t.Fatalf("an over-long line answered %q", resp)
	}
	c.Close()
	silent, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	cl := peers.New(path, 2*time.Second)
	if err := cl.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	rel, ok, holder, err := cl.Claim(context.Background(), "notes", healthcheck.ClaimProbe, time.Minute)
	if err != nil || !ok || holder != "host-a" {
		t.Fatalf("claim after garbage: %v %v %q", ok, holder, err)
	}
	if _, ok2, holder2, _ := cl.Claim(context.Background(), "notes", healthcheck.ClaimProbe, time.Minute); ok2 || holder2 != "host-a" {
		t.Fatalf("a second claim was granted (%v) or its holder unnamed (%q)", ok2, holder2)
	}
	rel()
	if rel2, ok, _, err := cl.Claim(context.Background(), "notes", healthcheck.ClaimProbe, time.Minute); err != nil || !ok {
		t.Fatalf("claim after release: %v %v", ok, err)
	} else {
		rel2()
	}
	// A server that is not the batch's is granted at once, untouched by
	// the table.
	if _, ok, _, err := cl.Claim(context.Background(), "elsewhere", healthcheck.ClaimTrial, time.Minute); err != nil || !ok {
		t.Fatalf("claim of an unshared server: %v %v", ok, err)
	}
}

// A claim whose holder died ends with its TTL.
func TestClaimExpires(t *testing.T) {
	dsn := newDB(t)
	a, b := startHost(t, dsn, "host-a"), startHost(t, dsn, "host-b")
	ca, cb := peers.New(a.relay.SocketPath(), 0), peers.New(b.relay.SocketPath(), 0)
	if _, ok, _, err := ca.Claim(context.Background(), "notes", healthcheck.ClaimTrial, 300*time.Millisecond); err != nil || !ok {
		t.Fatalf("A's claim: %v %v", ok, err)
	}
	if _, ok, holder, err := cb.Claim(context.Background(), "notes", healthcheck.ClaimTrial, time.Second); err != nil || ok || holder != "host-a" {
		t.Fatalf("B's claim while A holds it: granted %v, holder %q, %v", ok, holder, err)
	}
	waitFor(t, "A's claim to run out", func() bool {
		_, ok, _, err := cb.Claim(context.Background(), "notes", healthcheck.ClaimTrial, time.Second)
		return err == nil && ok
	})
}

// The socket's folder must be ours and closed to others.
func TestSocketFolderMustBePrivate(t *testing.T) {
	if os.PathSeparator == '\\' {
		t.Skip("permissions are ACLs on Windows")
	}
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := listenSocket(open, "/x/cache.json", "h"); err == nil || !strings.Contains(err.Error(), "0700") {
		t.Fatalf("a 0755 folder: %v", err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := listenSocket(link, "/x/cache.json", "h"); err == nil {
		t.Fatal("a symlinked folder was accepted")
	}
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 90))
	if _, _, err := listenSocket(long, "/x/cache.json", "h"); err == nil || !strings.Contains(err.Error(), "shorter") {
		t.Fatalf("a path over the limit: %v", err)
	}
	ln, path, err := listenSocket("", "/x/cache.json", "h")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the default folder %s: %v %v", filepath.Dir(path), fi.Mode(), err)
	}
}

func seedEntry(t testing.TB, h *host, server string, e *healthcheck.Entry) {
	t.Helper()
	if err := h.store.Update(func(f *healthcheck.File) error {
		c := *e
		f.Servers[server] = &c
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// The same through the real hook binary, as Claude Code runs it: hooks of
// two hosts at a half-open server at once, each its own process with the
// relay's socket in its environment; exactly one exits 0 (the trial):
// the others are denied at once, as their hold is off here
// (TestTrialLosersHoldAcrossHosts holds them). Without the relay (a
// socket that is gone), the hook says so and decides as a single host.
func TestOneTrialAcrossHostsHooks(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	dsn := newDB(t)
	now := time.Now()
	half := &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, CheckedAt: healthcheck.MillisOf(now.Add(-time.Minute)),
		NextRetryAt: healthcheck.MillisOf(now.Add(-time.Second)), FailureCount: 1,
		LastFailureCode: healthcheck.CodeUnavailable, Witness: healthcheck.WitnessCalls}
	hosts := []*host{newHost(t, dsn, "host-a"), newHost(t, dsn, "host-b")}
	for _, h := range hosts {
		seedEntry(t, h, "notes", half)
		h.start(t)
	}
	var wg sync.WaitGroup
	var let atomic.Int64
	in := hookPayload("PreToolUse", "mcp__notes__search", "")
	for _, h := range hosts {
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, _, stderr := runHookEnv(t, bin, h, in, true, "NIGHTWATCH_MAX_HOLD=0")
				if code == 0 {
					let.Add(1)
				}
				if strings.Contains(stderr, "single host") {
					t.Errorf("%s's hook could not ask its relay: %s", h.name, stderr)
				}
			}()
		}
	}
	wg.Wait()
	if let.Load() != 1 {
		t.Fatalf("%d hooks of two hosts let a call through a half-open server, want exactly 1", let.Load())
	}

	lone := newHost(t, dsn, "host-c")
	seedEntry(t, lone, "notes", half)
	lone.relay = &Relay{sockPath: filepath.Join(lone.dir, "gone.sock")}
	code, _, stderr := runHook(t, bin, lone, in, true)
	if code != 0 || !strings.Contains(stderr, "deciding as a single host") || !strings.Contains(stderr, "gone.sock") {
		t.Fatalf("a hook whose relay is gone: exit %d, stderr %s", code, stderr)
	}
}

// The cluster's database gone: the relay answers with the error, the hook
// says so and decides as a single host (the trial goes ahead here), and
// the relay still closes cleanly.
func TestDatabaseGoneDecidesAsSingleHost(t *testing.T) {
	dsn := newDB(t)
	h := startHost(t, dsn, "host-a")
	seedEntry(t, h, "notes", &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, CheckedAt: 1,
		NextRetryAt: healthcheck.MillisOf(time.Now().Add(-time.Second)), FailureCount: 1, Witness: healthcheck.WitnessCalls})
	h.db.Pool.Close()
	c := h.checker(healthcheck.Options{StartsTrials: true, Warn: h.warns.add, Peers: peers.New(h.relay.SocketPath(), 2*time.Second)})
	d := c.Decide(context.Background(), "notes", nil)
	if !d.Allow || !d.Trial || !strings.Contains(h.warns.String(), "deciding as a single host") ||
		!strings.Contains(h.warns.String(), "the cluster's database") {
		t.Fatalf("decision %+v, warnings %q", d, h.warns.String())
	}
	h.relay.Close()
}

// Hold, don't deny, across hosts: hooks of two hosts meet a half-open
// server at once; one runs the trial, and the others (on its host and on
// the other, which learns of the trial through its claim and the shared
// health) hold their calls for its result instead of being denied. The
// trial's result, recorded by the winner's host's PostToolUse hook and
// shared, ends every hold: a success lets every held call through; a
// failure denies them, as the trial's verdict ("denied", not a hold that
// ran out and counted another failure).
func TestTrialLosersHoldAcrossHosts(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	for _, c := range []struct {
		name   string
		result string // the winner's PostToolUse payload
		held   int    // exit code of every held call
	}{
		{"the trial succeeds", hookPayload("PostToolUse", "mcp__notes__search", `,"tool_response":[{"type":"text","text":"ok"}]`), 0},
		{"the trial fails", hookPayload("PostToolUseFailure", "mcp__notes__search", `,"error":"MCP error -32000: Connection closed"`), 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn := newDB(t)
			now := time.Now()
			half := &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, CheckedAt: healthcheck.MillisOf(now.Add(-time.Minute)),
				NextRetryAt: healthcheck.MillisOf(now.Add(-time.Second)), FailureCount: 1,
				LastFailureCode: healthcheck.CodeTransport, Witness: healthcheck.WitnessCalls,
				UnhealthySince: healthcheck.MillisOf(now.Add(-time.Minute))}
			hosts := []*host{newHost(t, dsn, "host-a"), newHost(t, dsn, "host-b")}
			for _, h := range hosts {
				seedEntry(t, h, "notes", half)
				h.start(t)
			}
			type result struct {
				h           *host
				code        int
				stderr      string
				afterResult bool
			}
			var mu sync.Mutex
			resultSent := false
			results := make(chan result, 6)
			in := hookPayload("PreToolUse", "mcp__notes__search", "")
			for _, h := range hosts {
				for range 3 {
					go func() {
						code, _, stderr := runHook(t, bin, h, in, true)
						mu.Lock()
						sent := resultSent
						mu.Unlock()
						results <- result{h, code, stderr, sent}
					}()
				}
			}
			// The first to finish is the trial: the others hold.
			first := <-results
			if first.code != 0 || !strings.Contains(first.stderr, "letting one trial call through") {
				for _, h := range hosts {
					b, _ := os.ReadFile(h.store.Path)
					t.Logf("%s cache: %s", h.name, b)
				}
				t.Fatalf("the first hook to finish (%s) exited %d: %s; want the trial", first.h.name, first.code, first.stderr)
			}
			// Every other call holds before the result comes (hooks are
			// processes: one may start late).
			holding := func() int {
				n := 0
				for _, h := range hosts {
					b, _ := os.ReadFile(statedir.Events(h.dir))
					n += strings.Count(string(b), `"kind":"holding"`)
				}
				return n
			}
			waitFor(t, "the five other calls hold", func() bool { return holding() >= 5 })
			mu.Lock()
			resultSent = true
			mu.Unlock()
			if code, _, stderr := runHook(t, bin, first.h, c.result, true); code != 0 {
				t.Fatalf("the trial's result on %s: exit %d: %s", first.h.name, code, stderr)
			}
			defer func() {
				if t.Failed() {
					for _, h := range hosts {
						b, _ := os.ReadFile(statedir.Events(h.dir))
						t.Logf("%s events:\n%s", h.name, b)
					}
				}
			}()
			heldOn := map[string]int{}
			for range 5 {
				r := <-results
				if !r.afterResult || r.code != c.held || !strings.Contains(r.stderr, "holding this call") {
					t.Errorf("a call on %s: exit %d (after the trial's result: %v), want held, then exit %d:\n%s",
						r.h.name, r.code, r.afterResult, c.held, r.stderr)
				}
				heldOn[r.h.name]++
			}
			other := hosts[0]
			if other == first.h {
				other = hosts[1]
			}
			if heldOn[other.name] != 3 {
				t.Errorf("%d calls held on the other host %s, want its 3", heldOn[other.name], other.name)
			}
			// The held lines say how each hold ended.
			want := map[int]string{0: healthcheck.HoldAnswered, 2: healthcheck.HoldDenied}[c.held]
			for _, h := range hosts {
				b, _ := os.ReadFile(statedir.Events(h.dir))
				for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
					var ev healthcheck.Event
					if json.Unmarshal([]byte(line), &ev) == nil && ev.Kind == healthcheck.EventHeld && ev.Outcome != want {
						t.Errorf("%s: a hold ended %q, want %q", h.name, ev.Outcome, want)
					}
				}
			}
		})
	}
}
