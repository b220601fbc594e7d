package preflight

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// Preflight judges a server by the health check's one reachability rule:
// a 401 to a probe without credentials proves the endpoint answers (Claude
// Code holds the OAuth token), but a 401 to the server's own configured
// token means the night cannot use it.
func TestPreflightJudgesA401ByTheReachabilityRule(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer api.Close()
	for _, tc := range []struct {
		name, headers string
		usable        bool
	}{
		{"no credentials of its own", "", true},
		{"its own token refused", `, headers: {Authorization: "Bearer own-token"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b := testkit.LoadBatch(t, dir, fmt.Sprintf("version: 1\nname: auth\nstate_dir: ./state\nagent: {command: /bin/true}\n"+
				"servers:\n  api: {type: http, url: %s%s}\njobs:\n  - {name: a, servers: [api], prompt: a}\n",
				jsonString(api.URL+"/mcp"), tc.headers))
			store := &healthcheck.Store{Path: t.TempDir() + "/cache.json"}
			rep := Run(context.Background(), b, preflightTestOptions(t, store))
			if len(rep.Rows) != 1 || rep.Rows[0].Usable != tc.usable || rep.Healthy != tc.usable {
				t.Fatalf("rows %+v healthy %v; want usable %v", rep.Rows, rep.Healthy, tc.usable)
			}
			f, err := store.Read()
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Entry("api"); got == nil || (got.Status == healthcheck.StatusHealthy) != tc.usable {
				t.Errorf("cache entry %+v; want healthy %v", got, tc.usable)
			}
		})
	}
}

// A server that leaves server/discover unanswered costs every 2.1.332
// session about 3 s: preflight says so, and the cache records how the
// server spoke (era, protocol) for status and the report.
func TestPreflightWarnsOfAnUnansweredDiscover(t *testing.T) {
	bin := testkit.BuildTestServer(t)
	dir := t.TempDir()
	b := preflightTestBatch(t, dir, preflightTestStdio(bin, "quiet", "ignore-discover"), preflightTestStdio(bin, "modern", "healthy"))
	store := &healthcheck.Store{Path: filepath.Join(t.TempDir(), "cache.json")}
	opts := preflightTestOptions(t, store)
	opts.Warn = func(string) {}
	rep := Run(context.Background(), b, opts)
	if !rep.Healthy {
		t.Fatalf("preflight: %+v", rep)
	}
	var warned bool
	for _, w := range rep.Warnings {
		if strings.Contains(w, `"quiet"`) && strings.Contains(w, "server/discover unanswered") {
			warned = true
		}
		if strings.Contains(w, `"modern"`) {
			t.Errorf("a warning for the server that answers discover: %s", w)
		}
	}
	if !warned {
		t.Errorf("no warning of the unanswered discover: %q", rep.Warnings)
	}
	f, err := store.Read()
	if err != nil {
		t.Fatal(err)
	}
	if e := f.Entry("quiet"); e == nil || e.Era != "legacy" || !e.SlowDiscover || e.ProtocolVersion == "" {
		t.Errorf("quiet's entry %+v, want legacy era, slow discover and its protocol", e)
	}
	if e := f.Entry("modern"); e == nil || e.Era != "modern" || e.SlowDiscover || e.ProtocolVersion != "2026-07-28" {
		t.Errorf("modern's entry %+v, want modern era 2026-07-28", e)
	}
}
