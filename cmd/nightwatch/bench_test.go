package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// Whole-process hook benchmarks: what Claude Code pays before every tool
// call. Each op execs the real binary with a payload on stdin; an empty Go
// program is exec'd in the same loop, so the ratio does not depend on how
// busy the machine is. Peak RSS comes from the kernel's rusage.
//
//	go test -run '^$' -bench 'Hook' -benchtime 300x ./cmd/nightwatch/

const benchPayload = `{"session_id":"b","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"%s","tool_input":{"q":"x"}}`

func buildEmpty(b *testing.B) string {
	dir := b.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "empty")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build empty program: %v\n%s", err, out)
	}
	return bin
}

// execOnce runs bin and returns its wall time.
func execOnce(b *testing.B, bin string, args []string, env []string, stdin string, wantCode int) time.Duration {
	return execCost(b, bin, args, env, stdin, wantCode).wall
}

// cost is what one process took: wall time, CPU time (user and system,
// every thread) and minor page faults (-1 where not counted).
type cost struct {
	wall, cpu time.Duration
	faults    int64
}

// costs are one binary's samples of a loop.
type costs struct{ wall, cpu, faults []time.Duration }

func (c *costs) add(x cost) {
	c.wall = append(c.wall, x.wall)
	c.cpu = append(c.cpu, x.cpu)
	c.faults = append(c.faults, time.Duration(x.faults))
}

// execCost runs bin and returns what it cost.
func execCost(b *testing.B, bin string, args []string, env []string, stdin string, wantCode int) cost {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdin = bytes.NewReader([]byte(stdin))
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			b.Fatal(err)
		}
		code = ee.ExitCode()
	}
	if code != wantCode {
		b.Fatalf("%s exited %d, want %d", bin, code, wantCode)
	}
	return cost{wall: d, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), faults: minorFaults(cmd.ProcessState)}
}

// peakRSS reads the VmHWM values (KiB) the hook processes reported.
func peakRSS(b *testing.B, path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatalf("no peak RSS reported: %v", err)
	}
	var peak int64
	for _, f := range strings.Fields(string(data)) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		peak = max(peak, n)
	}
	return peak
}

// benchCache writes a cache of n servers: "up" (healthy for a day),
// "down" (blocked for a day) and n-2 healthy others with a realistic
// record each.
func benchCache(b *testing.B, path string, n int) {
	now := time.Now()
	err := (&healthcheck.Store{Path: path}).Update(func(f *healthcheck.File) error {
		f.Servers["up"] = &healthcheck.Entry{Status: healthcheck.StatusHealthy, ExpiresAt: healthcheck.MillisOf(now.Add(24 * time.Hour))}
		f.Servers["down"] = &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, NextRetryAt: healthcheck.MillisOf(now.Add(24 * time.Hour)),
			LastFailureCode: healthcheck.CodeUnavailable, LastError: "HTTP 503"}
		for i := range n - 2 {
			f.Servers[fmt.Sprintf("server-%05d", i)] = &healthcheck.Entry{Status: healthcheck.StatusHealthy,
				CheckedAt: healthcheck.MillisOf(now), ExpiresAt: healthcheck.MillisOf(now.Add(2 * time.Minute)),
				LastRestoredAt: healthcheck.MillisOf(now), Source: "/home/me/.claude.json", RestoredBy: "probe",
				Verdict: "healthy", LatencyMs: 12, Transport: "stdio", Era: "modern", ProtocolVersion: "2026-07-28"}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHookProcess runs, in one loop, the dedicated hook executable
// (what sessions get), `nightwatch hook` (the same hook in the whole
// binary), an empty Go program, the article's Node hook (when node is on
// PATH) and, when NIGHTWATCH_BENCH_BASELINE names one, an older release's
// `nightwatch hook`, and when NIGHTWATCH_BENCH_BASELINE_HOOK names one, an
// older nightwatch-hook. Beside wall-time ratios it reports the dedicated
// hook's CPU time and minor page faults against the empty program's.
//
//	go test -run '^$' -bench 'HookProcess' -benchtime 300x ./cmd/nightwatch/
func BenchmarkHookProcess(b *testing.B) {
	nw := testkit.BuildNightwatch(b)
	hookBin := testkit.BuildHook(b)
	empty := buildEmpty(b)
	home := b.TempDir()
	state := filepath.Join(home, "cache.json")
	benchCache(b, state, 10)
	rssFile := filepath.Join(home, "rss")
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "NIGHTWATCH_STATE_PATH=" + state,
		"NIGHTWATCH_REPORT_PEAK_RSS=" + rssFile}
	cases := []struct {
		name, tool string
		code       int
	}{
		{"non-mcp", "Bash", 0},
		{"cache-hit", "mcp__up__search", 0},
		{"cached-block", "mcp__down__search", 2},
	}
	// NIGHTWATCH_BENCH_BASELINE names another nightwatch binary (an older
	// release, built by bench/hook-vs.sh) to run in the same loop, so the
	// change in the hook's cost is a ratio measured in one run.
	baseline := os.Getenv("NIGHTWATCH_BENCH_BASELINE")
	// NIGHTWATCH_BENCH_BASELINE_HOOK names an older nightwatch-hook (built
	// by bench/hook-vs.sh when REV has one), run in the same loop.
	baselineHook := os.Getenv("NIGHTWATCH_BENCH_BASELINE_HOOK")
	// The article's Node hook (its hot path, bench/article-hook.js) runs in
	// the same loop when node is on PATH, on the same cache.
	node, _ := exec.LookPath("node")
	article := filepath.Join(testkit.ModuleRoot(b), "bench", "article-hook.js")
	nodeEnv := append(slices.Clone(env), "ECC_MCP_HEALTH_STATE_PATH="+state)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			in := fmt.Sprintf(benchPayload, c.tool)
			_ = os.Remove(rssFile)
			// Medians, not sums: on a shared machine one descheduled exec
			// would otherwise weigh as much as a hundred normal ones.
			var hook, base, oldHook costs
			var whole, old, js []time.Duration
			for b.Loop() {
				hook.add(execCost(b, hookBin, nil, env, in, c.code))
				whole = append(whole, execOnce(b, nw, []string{"hook"}, env, in, c.code))
				base.add(execCost(b, empty, nil, env, "", 0))
				if baselineHook != "" {
					oldHook.add(execCost(b, baselineHook, nil, env, in, c.code))
				}
				if baseline != "" {
					old = append(old, execOnce(b, baseline, []string{"hook"}, env, in, c.code))
				}
				if node != "" {
					js = append(js, execOnce(b, node, []string{article}, nodeEnv, in, c.code))
				}
			}
			h, w, e := median(hook.wall), median(whole), median(base.wall)
			b.ReportMetric(float64(h.Microseconds()), "hook-µs/op")
			b.ReportMetric(float64(w.Microseconds()), "whole-µs/op")
			b.ReportMetric(float64(e.Microseconds()), "empty-µs/op")
			b.ReportMetric(float64(h)/float64(e), "x-empty")
			b.ReportMetric(float64(median(hook.cpu))/float64(median(base.cpu)), "cpu-x-empty")
			b.ReportMetric(float64(median(hook.faults)), "hook-faults")
			b.ReportMetric(float64(median(base.faults)), "empty-faults")
			b.ReportMetric(float64(w)/float64(e), "whole-x-empty")
			if baselineHook != "" {
				o := median(oldHook.wall)
				b.ReportMetric(float64(o)/float64(e), "old-hook-x-empty")
				b.ReportMetric(float64(median(oldHook.cpu))/float64(median(base.cpu)), "old-hook-cpu-x-empty")
				b.ReportMetric(float64(median(oldHook.faults)), "old-hook-faults")
				b.ReportMetric(float64(h)/float64(o), "x-old-hook")
			}
			if baseline != "" {
				o := median(old)
				b.ReportMetric(float64(o)/float64(e), "baseline-x-empty")
				b.ReportMetric(float64(h)/float64(o), "x-baseline")
			}
			if node != "" {
				n := median(js)
				b.ReportMetric(float64(n.Microseconds()), "node-µs/op")
				b.ReportMetric(float64(h)/float64(n), "x-node")
			}
			// Every process of the loop reported; the peak is the largest
			// of both hooks (the older release reports too).
			b.ReportMetric(float64(peakRSS(b, rssFile))/1024, "peak-RSS-MiB")
		})
	}
	b.Run("dedicated-peak-RSS", func(b *testing.B) {
		in := fmt.Sprintf(benchPayload, "mcp__up__search")
		_ = os.Remove(rssFile)
		for b.Loop() {
			execOnce(b, hookBin, nil, env, in, 0)
		}
		b.ReportMetric(float64(peakRSS(b, rssFile))/1024, "peak-RSS-MiB")
	})
}

// BenchmarkHookCacheSize runs a cache hit of the dedicated hook against
// caches of 10, 1,000 and 10,000 servers in one loop, and an empty
// program: a hit must not cost more with a larger cache. The payload is
// 2.1.197's (no mcp_server): the hook also reads the cache's names.
//
//	go test -run '^$' -bench 'HookCacheSize' -benchtime 200x ./cmd/nightwatch/
func BenchmarkHookCacheSize(b *testing.B) {
	hookBin := testkit.BuildHook(b)
	empty := buildEmpty(b)
	home := b.TempDir()
	sizes := []int{10, 1000, 10000}
	envs := make([][]string, len(sizes))
	for i, n := range sizes {
		state := filepath.Join(home, fmt.Sprintf("cache-%d.json", n))
		benchCache(b, state, n)
		envs[i] = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "NIGHTWATCH_STATE_PATH=" + state}
	}
	for _, payload := range []struct{ name, in string }{
		{"2.1.197", fmt.Sprintf(benchPayload, "mcp__up__search")},
		{"2.1.332", `{"session_id":"b","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"mcp__up__search","mcp_server":{"name":"up","source":"user"},"tool_input":{"q":"x"}}`},
	} {
		b.Run(payload.name, func(b *testing.B) {
			times := make([][]time.Duration, len(sizes))
			var base []time.Duration
			for b.Loop() {
				for i := range sizes {
					times[i] = append(times[i], execOnce(b, hookBin, nil, envs[i], payload.in, 0))
				}
				base = append(base, execOnce(b, empty, nil, envs[0], "", 0))
			}
			e := median(base)
			ten := median(times[0])
			b.ReportMetric(float64(e.Microseconds()), "empty-µs/op")
			for i, n := range sizes {
				m := median(times[i])
				b.ReportMetric(float64(m.Microseconds()), fmt.Sprintf("hit%d-µs/op", n))
				if i > 0 {
					b.ReportMetric(float64(m)/float64(ten), fmt.Sprintf("x%d-over-10", n))
				}
			}
			b.ReportMetric(float64(ten)/float64(e), "hit10-x-empty")
		})
	}
}

// BenchmarkConcurrentHooks64 starts 64 hook processes at the same moment
// on one cache file, each recording a failure of its own server and of one
// shared server. Every update must survive.
func BenchmarkConcurrentHooks64(b *testing.B) {
	nw := testkit.BuildNightwatch(b)
	for b.Loop() {
		home := b.TempDir()
		state := filepath.Join(home, "cache.json")
		env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "NIGHTWATCH_STATE_PATH=" + state,
			"NIGHTWATCH_MCP_CONFIG=" + filepath.Join(home, "none.json")}
		var wg sync.WaitGroup
		start := time.Now()
		errs := make(chan error, 64)
		for i := 0; i < 64; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				in := fmt.Sprintf(`{"hook_event_name":"PostToolUseFailure","tool_name":"mcp__s%d__t","cwd":"%s","error":"MCP error -32000: Connection closed"}`, i, home)
				cmd := exec.Command(nw, "hook")
				cmd.Env = env
				cmd.Stdin = bytes.NewReader([]byte(in))
				if out, err := cmd.CombinedOutput(); err != nil {
					errs <- fmt.Errorf("hook %d: %v %s", i, err, out)
				}
			}()
		}
		wg.Wait()
		wall := time.Since(start)
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		f, err := (&healthcheck.Store{Path: state}).Read()
		if err != nil {
			b.Fatal(err)
		}
		lost := 64 - len(f.Servers)
		if lost != 0 {
			b.Fatalf("%d of 64 updates lost", lost)
		}
		b.ReportMetric(float64(lost), "lost-updates")
		b.ReportMetric(float64(wall.Milliseconds()), "wall-ms")
	}
}

// median of a run's samples.
func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
