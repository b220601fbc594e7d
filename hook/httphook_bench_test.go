//go:build linux

package hook_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/hook/served"
	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
)

// BenchmarkHTTPHookPerCall (issue 22): what a PreToolUse hook adds to each
// MCP call inside the real CLI. One op is, on each pinned CLI, one session
// of benchCalls echo calls with (none) no hook, (command) the dedicated
// nightwatch-hook answering a cache hit, (http) an http hook served by
// an in-test handler answering allow, and (served) the night's served hook
// (hook/served) answering the same cache hit, interleaved. Reported per call, over
// the no-hook session: wall and CPU (the session's process tree, from
// RUSAGE_CHILDREN; the test process's own CPU, which serves the fake API
// and the http hook, as self-CPU). Medians over the ops.
//
//	go test -run '^$' -bench HTTPHookPerCall -benchtime 3x ./hook/
func BenchmarkHTTPHookPerCall(b *testing.B) {
	const benchCalls = 20
	for _, version := range testkit.ClaudeVersions(b) {
		b.Run("claude-"+version, func(b *testing.B) {
			api := fakeapi.Start(b)
			ep := startHookEndpoint(b)
			state := filepath.Join(b.TempDir(), "mcp-health-cache.json")
			err := (&healthcheck.Store{Path: state}).Update(func(f *healthcheck.File) error {
				f.Servers["notes"] = &healthcheck.Entry{Status: healthcheck.StatusHealthy,
					CheckedAt: healthcheck.MillisOf(time.Now()), ExpiresAt: healthcheck.MillisOf(time.Now().Add(24 * time.Hour))}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			mcp := testkit.WriteMCPConfig(b, map[string]any{"notes": map[string]any{"command": testkit.BuildTestServer(b)}})
			pre := func(h map[string]any) string {
				return testkit.WriteSettings(b, map[string]any{"hooks": map[string]any{"PreToolUse": []any{
					map[string]any{"matcher": "mcp__.*", "hooks": []any{h}}}}})
			}
			srv, err := served.Start(nil)
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			home := b.TempDir()
			env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
			k, err := served.Knobs([]string{"--state", state}, environ.Lookup(env), home)
			if err != nil {
				b.Fatal(err)
			}
			key, err := srv.Register(served.Session{Environ: env, Getenv: environ.Lookup(env), Home: home, Knobs: k})
			if err != nil {
				b.Fatal(err)
			}
			variants := []struct{ name, settings string }{
				{"none", testkit.WriteSettings(b, map[string]any{})},
				{"command", pre(commandHook(testkit.BuildHook(b) + " --state " + state))},
				{"http", pre(httpHook(ep.url("/allow"), 30))},
				{"served", pre(map[string]any{"type": "http", "url": srv.URL(key), "timeout": 30,
					"headers": map[string]any{served.TokenHeader: srv.Token()}})},
			}
			var prompt strings.Builder
			for i := range benchCalls {
				fmt.Fprintf(&prompt, "CALL mcp__notes__echo {\"message\":\"m%d\"}\n", i)
			}
			wall := map[string][]time.Duration{}
			cpu := map[string][]time.Duration{}
			self := map[string][]time.Duration{}
			seq := 0
			for b.Loop() {
				for _, v := range variants {
					seq++
					name := fmt.Sprintf("bench-%s-%d", v.name, seq)
					c0, s0 := rusage(b, syscall.RUSAGE_CHILDREN), rusage(b, syscall.RUSAGE_SELF)
					r := testkit.RunClaude(b, api, testkit.ClaudeRun{Version: version, Prompt: "SESSION " + name + "\n" + prompt.String(),
						MCPConfig: mcp, Settings: v.settings, AllowedTools: []string{"mcp__notes"}, NoDebugFile: true})
					c1, s1 := rusage(b, syscall.RUSAGE_CHILDREN), rusage(b, syscall.RUSAGE_SELF)
					r.RequireSuccess(b)
					got := api.SessionToolResults(name)
					if len(got) != benchCalls || slices.ContainsFunc(got, func(g fakeapi.ToolResult) bool { return g.IsError }) {
						b.Fatalf("%s: %d results for %d calls, or an error: %+v", name, len(got), benchCalls, got)
					}
					wall[v.name] = append(wall[v.name], r.Duration)
					cpu[v.name] = append(cpu[v.name], c1-c0)
					self[v.name] = append(self[v.name], s1-s0)
				}
			}
			if n := len(ep.Posts()); n != benchCalls*b.N {
				b.Fatalf("the http hook was called %d times, want %d", n, benchCalls*b.N)
			}
			perCall := func(m map[string][]time.Duration, v string) float64 {
				return float64(median(m[v])-median(m["none"])) / float64(benchCalls) / float64(time.Millisecond)
			}
			for _, v := range []string{"command", "http", "served"} {
				b.ReportMetric(perCall(wall, v), v+"-wall-ms/call")
				b.ReportMetric(perCall(cpu, v), v+"-cpu-ms/call")
				b.ReportMetric(perCall(self, v), v+"-selfcpu-ms/call")
			}
			b.ReportMetric(perCall(wall, "http")/perCall(wall, "command"), "http-x-command-wall")
			b.ReportMetric((perCall(cpu, "http")+perCall(self, "http"))/(perCall(cpu, "command")+perCall(self, "command")), "http-x-command-cpu")
			b.ReportMetric(perCall(wall, "served")/perCall(wall, "command"), "served-x-command-wall")
			b.ReportMetric((perCall(cpu, "served")+perCall(self, "served"))/(perCall(cpu, "command")+perCall(self, "command")), "served-x-command-cpu")
			b.ReportMetric(float64(median(wall["none"]))/float64(time.Millisecond), "none-session-wall-ms")
		})
	}
}

func rusage(b *testing.B, who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
