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
	return d
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

func BenchmarkHookProcess(b *testing.B) {
	nw := testkit.BuildNightwatch(b)
	empty := buildEmpty(b)
	home := b.TempDir()
	state := filepath.Join(home, "cache.json")
	now := time.Now()
	err := (&healthcheck.Store{Path: state}).Update(func(f *healthcheck.File) error {
		f.Servers["up"] = &healthcheck.Entry{Status: healthcheck.StatusHealthy, ExpiresAt: healthcheck.MillisOf(now.Add(24 * time.Hour))}
		f.Servers["down"] = &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, NextRetryAt: healthcheck.MillisOf(now.Add(24 * time.Hour)),
			LastFailureCode: healthcheck.CodeUnavailable, LastError: "HTTP 503"}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
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
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			in := fmt.Sprintf(benchPayload, c.tool)
			_ = os.Remove(rssFile)
			// Medians, not sums: on a shared machine one descheduled exec
			// would otherwise weigh as much as a hundred normal ones.
			var hook, base, old []time.Duration
			for b.Loop() {
				hook = append(hook, execOnce(b, nw, []string{"hook"}, env, in, c.code))
				base = append(base, execOnce(b, empty, nil, env, "", 0))
				if baseline != "" {
					old = append(old, execOnce(b, baseline, []string{"hook"}, env, in, c.code))
				}
			}
			h, e := median(hook), median(base)
			b.ReportMetric(float64(h.Microseconds()), "hook-µs/op")
			b.ReportMetric(float64(e.Microseconds()), "empty-µs/op")
			b.ReportMetric(float64(h)/float64(e), "x-empty")
			if baseline != "" {
				o := median(old)
				b.ReportMetric(float64(o)/float64(e), "baseline-x-empty")
				b.ReportMetric(float64(h)/float64(o), "x-baseline")
			}
			b.ReportMetric(float64(peakRSS(b, rssFile))/1024, "peak-RSS-MiB")
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
