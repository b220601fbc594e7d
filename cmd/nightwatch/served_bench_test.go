package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/hook/served"
	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// BenchmarkServedHook is the per-call cost of the hook the night serves
// (hook/served) as Claude Code calls it: a POST of the payload over
// loopback on a fresh connection, with the token, answered by the handler
// in this process. In the same loop: the article's Node hook (when node
// is on PATH), the dedicated command hook and an empty Go program, each
// exec'd with the same payload on the same cache. Medians; x-node is the
// served hook's wall time over the Node hook's (goal ≤ 0.03).
//
//	go test -run '^$' -bench 'ServedHook' -benchtime 300x ./cmd/nightwatch/
func BenchmarkServedHook(b *testing.B) {
	hookBin := testkit.BuildHook(b)
	empty := buildEmpty(b)
	home := b.TempDir()
	state := filepath.Join(home, "cache.json")
	benchCache(b, state, 10)
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "NIGHTWATCH_STATE_PATH=" + state}
	node, _ := exec.LookPath("node")
	article := filepath.Join(testkit.ModuleRoot(b), "bench", "article-hook.js")
	nodeEnv := append(slices.Clone(env), "ECC_MCP_HEALTH_STATE_PATH="+state)

	srv, err := served.Start(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	getenv := environ.Lookup(env)
	k, err := served.Knobs([]string{"--state", state}, getenv, home)
	if err != nil {
		b.Fatal(err)
	}
	key, err := srv.Register(served.Session{Environ: env, Getenv: getenv, Home: home, Knobs: k})
	if err != nil {
		b.Fatal(err)
	}
	url := srv.URL(key)
	// Claude Code opens a connection per hook request: no keep-alive.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	postOnce := func(in, want string) time.Duration {
		start := time.Now()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(in))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(served.TokenHeader, srv.Token())
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			b.Fatalf("served hook: %d %s (%v), want %s", resp.StatusCode, body, err, want)
		}
		return d
	}
	cases := []struct {
		name, tool, want string
		code             int
	}{
		{"cache-hit", "mcp__up__search", "{}", 0},
		{"cached-block", "mcp__down__search", `"deny"`, 2},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			in := fmt.Sprintf(benchPayload, c.tool)
			var post, hook, base, js []time.Duration
			for b.Loop() {
				post = append(post, postOnce(in, c.want))
				hook = append(hook, execOnce(b, hookBin, nil, env, in, c.code))
				base = append(base, execOnce(b, empty, nil, env, "", 0))
				if node != "" {
					js = append(js, execOnce(b, node, []string{article}, nodeEnv, in, c.code))
				}
			}
			p, e := median(post), median(base)
			b.ReportMetric(float64(p.Microseconds()), "served-µs/op")
			b.ReportMetric(float64(median(hook).Microseconds()), "hook-µs/op")
			b.ReportMetric(float64(e.Microseconds()), "empty-µs/op")
			b.ReportMetric(float64(p)/float64(e), "x-empty")
			b.ReportMetric(float64(p)/float64(median(hook)), "x-hook")
			if node != "" {
				n := median(js)
				b.ReportMetric(float64(n.Microseconds()), "node-µs/op")
				b.ReportMetric(float64(p)/float64(n), "x-node")
			}
		})
	}
}
