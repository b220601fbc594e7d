package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/pgtest"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// `nightwatch report night.yaml` with a cluster: section reads the night
// from the shared journal: the newest run, or --run's, with the hosts that
// ran it; an unknown run names the known ones; no output holds the
// connection string's password. The test starts a Postgres of its own
// (this package has no pgtest.Main).
func TestReportFromTheSharedJournal(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the cluster tests run on Linux and macOS")
	}
	srv, err := pgtest.Start()
	if err != nil {
		if errors.Is(err, pgtest.ErrNotInstalled) && !pgtest.Required() {
			t.Skipf("PostgreSQL is not installed here (%v): `apt-get install postgresql` runs this test", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx := context.Background()
	db, err := clusterdb.Open(ctx, srv.DSN("postgres"), "nightly")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	const password = "Report-S3cret-pw-0042"
	if _, err := db.Pool.Exec(ctx, "CREATE ROLE nw_reporter LOGIN SUPERUSER PASSWORD '"+password+"'"); err != nil {
		t.Fatal(err)
	}
	events, err := journal.Read(filepath.Join("..", "..", "report", "testdata", "cluster-night.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	older := journal.Event{Time: events[0].Time.Add(-86400e9), Type: journal.RunStarted, Run: "20270113T010000Z-0ld0", Batch: "nightly", Host: "coord"}
	for _, ev := range append([]journal.Event{older}, events...) {
		if err := db.AppendJournal(ctx, "coord", ev); err != nil {
			t.Fatal(err)
		}
	}

	c := newCLI(t)
	batch := filepath.Join(c.cwd, "nightly.yaml")
	dsn := strings.Replace(srv.DSN("postgres"), "postgres://nightwatch@", "postgres://nw_reporter:"+password+"@", 1)
	if err := os.WriteFile(filepath.Join(c.cwd, "cluster.env"), []byte("NW_REPORT_DB="+dsn+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(batch, []byte(`version: 1
name: nightly
state_dir: ./state
env_file: ./cluster.env
cluster: {database_env: NW_REPORT_DB}
jobs:
  - {name: build-ios, prompt: "hi", hosts: [mac]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		want    []string
		wantErr string
	}{
		{"newest run", []string{"report", batch}, 0, []string{
			"# Night " + events[0].Run + " (nightly)",
			"| triage | ✅ done | linux-1, mini | 2 |",
			"- mini (coordinator): 2 attempts (2 done)",
			"- linux-1: 2 attempts (1 done, 1 retried)"}, ""},
		{"--run, as JSON", []string{"report", batch, "--run", older.Run, "--format", "json"}, 0, []string{
			`"runId": "` + older.Run + `"`, `"name": "coord"`, `"coordinator": true`}, ""},
		{"unknown run", []string{"report", batch, "--run", "nope"}, 2, nil,
			"the cluster's shared journal has no run nope of batch nightly (the newest: " + events[0].Run + ", " + older.Run + ")"},
		{"--local", []string{"report", batch, "--local"}, 2, nil, "no run journal in " + filepath.Join(c.cwd, "state", "runs")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := c.run(tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantErr, stderr)
			}
			if strings.Contains(out+stderr, password) {
				t.Errorf("the password is in the output:\n%s\n%s", out, stderr)
			}
		})
	}

	// A database the cluster cannot reach: the error names where, never the password.
	if err := os.WriteFile(filepath.Join(c.cwd, "cluster.env"),
		[]byte(fmt.Sprintf("NW_REPORT_DB=postgres://nw_reporter:%s@127.0.0.1:1/x?connect_timeout=2\n", password)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := c.run("report", batch)
	if code == 0 || !strings.Contains(stderr, "127.0.0.1:1") || !strings.Contains(stderr, "report --local "+batch) || strings.Contains(out+stderr, password) {
		t.Errorf("an unreachable database: exit %d\n%s\n%s", code, out, stderr)
	}
}
