package healthsync

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/cluster/peers"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// Benchmarks of shared health (BENCHMARKS.md, "Cluster: shared health"):
//
//	go test -run '^$' -bench 'Propagation|HookHotPath' -benchtime 200x ./cluster/healthsync/

func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// BenchmarkPropagation: one op is a change of a server's health recorded
// on host A (down, then up again, in turn) until host B's cache file has
// it: A's poll of its file, the row's merge and NOTIFY, B's read of the
// row and its merge into B's cache, through the real relays and one
// Postgres.
func BenchmarkPropagation(b *testing.B) {
	for _, poll := range []time.Duration{DefaultPoll, 25 * time.Millisecond} {
		b.Run("poll-"+poll.String(), func(b *testing.B) { benchPropagation(b, poll) })
	}
}

func benchPropagation(b *testing.B, poll time.Duration) {
	dsn := newDB(b)
	a, h := newHost(b, dsn, "host-a"), newHost(b, dsn, "host-b")
	a.poll, h.poll = poll, poll
	a.start(b)
	h.start(b)
	ca := a.checker(healthcheck.Options{})
	var lat, local []time.Duration
	down := false
	b.ResetTimer()
	for b.Loop() {
		down = !down
		// A change comes at any moment of A's poll, not in step with it
		// (the loop would otherwise always just miss a tick).
		time.Sleep(2*time.Millisecond + rand.N(poll))
		start := time.Now()
		want := healthcheck.StatusHealthy
		if down {
			want = healthcheck.StatusUnhealthy
			ca.RecordClientStatus("notes", nil, "failed", "connection refused")
		} else {
			ca.RecordSuccess("notes", nil)
		}
		local = append(local, time.Since(start)) // A's own write of its cache
		for {
			f, _ := h.store.Read()
			if e := f.Entry("notes"); e != nil && e.Status == want {
				break
			}
			if time.Since(start) > 10*time.Second {
				b.Fatalf("change %d did not reach host B", len(lat))
			}
			time.Sleep(time.Millisecond)
		}
		lat = append(lat, time.Since(start))
	}
	b.ReportMetric(float64(quantile(lat, 0.5).Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(quantile(lat, 0.95).Microseconds())/1000, "p95-ms")
	b.ReportMetric(float64(slices.Max(lat).Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(quantile(local, 0.5).Microseconds())/1000, "local-write-median-ms")
}

// BenchmarkHookHotPath: the real hook process on a cache that decides
// (healthy within TTL; unhealthy within backoff), without a cluster and
// with one (NIGHTWATCH_CLUSTER_SOCKET naming a live relay's socket), in
// the same loop. The relay counts its connections: the hot path must not
// dial it.
func BenchmarkHookHotPath(b *testing.B) {
	bin := testkit.BuildNightwatch(b)
	dsn := newDB(b)
	h := startHost(b, dsn, "host-a", "up", "down")
	now := time.Now()
	seedEntry(b, h, "up", &healthcheck.Entry{Status: healthcheck.StatusHealthy, CheckedAt: healthcheck.MillisOf(now),
		ExpiresAt: healthcheck.MillisOf(now.Add(2 * time.Minute))})
	seedEntry(b, h, "down", &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, CheckedAt: healthcheck.MillisOf(now),
		NextRetryAt: healthcheck.MillisOf(now.Add(10 * time.Minute)), FailureCount: 1,
		LastFailureCode: healthcheck.CodeUnavailable, LastError: "HTTP 503"})
	base := []string{"HOME=" + h.dir, "PATH=" + os.Getenv("PATH"), "NIGHTWATCH_STATE_PATH=" + h.store.Path}
	cluster := append(slices.Clone(base), SocketEnv+"="+h.relay.SocketPath())
	for _, c := range []struct {
		name, tool string
		code       int
	}{{"cache-hit", "mcp__up__search", 0}, {"cached-block", "mcp__down__search", 2}} {
		b.Run(c.name, func(b *testing.B) {
			in := fmt.Sprintf(`{"session_id":"b","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":%q,"tool_input":{"q":"x"}}`, c.tool)
			dialed := h.relay.accepted.Load()
			var plain, withCluster []time.Duration
			for b.Loop() {
				plain = append(plain, execHook(b, bin, base, in, c.code))
				withCluster = append(withCluster, execHook(b, bin, cluster, in, c.code))
			}
			if n := h.relay.accepted.Load() - dialed; n != 0 {
				b.Fatalf("the hook dialed the relay %d times on a decision the cache made", n)
			}
			p, w := quantile(plain, 0.5), quantile(withCluster, 0.5)
			b.ReportMetric(float64(p.Microseconds()), "no-cluster-µs")
			b.ReportMetric(float64(w.Microseconds()), "cluster-µs")
			b.ReportMetric(float64(w)/float64(p), "x-no-cluster")
		})
	}
}

func execHook(b *testing.B, bin string, env []string, stdin string, want int) time.Duration {
	cmd := exec.CommandContext(b.Context(), bin, "hook")
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	proc.Prepare(cmd, time.Second)
	start := time.Now()
	if err := proc.Start(cmd); err != nil {
		b.Fatal(err)
	}
	err := proc.Wait(cmd)
	d := time.Since(start)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		b.Fatal(err)
	}
	if code != want || (want == 0 && stderr.Len() > 0) {
		b.Fatalf("hook exited %d (want %d): %s", code, want, stderr.String())
	}
	return d
}

// BenchmarkClaimRoundTrip: what a cluster adds to a decision that needs a
// claim (a probe or a trial; never a decision the cache makes): the hook's
// client dials the relay, which asks Postgres, pulls the server's row and
// answers; then the release, which pushes this host's verdict first.
func BenchmarkClaimRoundTrip(b *testing.B) {
	dsn := newDB(b)
	h := startHost(b, dsn, "host-a")
	cl := peers.New(h.relay.SocketPath(), 2*time.Second)
	var claim, release []time.Duration
	for b.Loop() {
		start := time.Now()
		rel, ok, _, err := cl.Claim(b.Context(), "notes", healthcheck.ClaimProbe, 10*time.Second)
		if err != nil || !ok {
			b.Fatalf("claim: %v %v", ok, err)
		}
		mid := time.Now()
		rel()
		claim = append(claim, mid.Sub(start))
		release = append(release, time.Since(mid))
	}
	b.ReportMetric(float64(quantile(claim, 0.5).Microseconds())/1000, "claim-median-ms")
	b.ReportMetric(float64(quantile(release, 0.5).Microseconds())/1000, "release-median-ms")
}
