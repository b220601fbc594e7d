package supervisor

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
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
			b := loadNight(t, dir, fmt.Sprintf("version: 1\nname: auth\nstate_dir: ./state\nagent: {command: /bin/true}\n"+
				"servers:\n  api: {type: http, url: %s%s}\njobs:\n  - {name: a, servers: [api], prompt: a}\n",
				jsonString(api.URL+"/mcp"), tc.headers))
			store := &healthcheck.Store{Path: t.TempDir() + "/cache.json"}
			rep := Preflight(context.Background(), b, preflightTestOptions(t, store))
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
