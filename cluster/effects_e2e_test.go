//go:build !windows

package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// TestClusterSideEffectOnceAcrossHosts is issue 20's "no side effect
// twice" on a cluster, through the real CLI on every supported version.
// The job's first attempt runs on host-a: it records a line (a tool
// without annotations: a side effect) and peeks at the file (readOnlyHint),
// then its verify fails once. host-a's worker is stopped before the retry
// is claimed and host-b's starts, so the retry runs on host-b, whose own
// ledger never saw the call: through the cluster's shared ledger its
// prompt names the earlier call, its repeated record is denied with the
// reason, and its peek runs again. The line is in the file once and the
// shared journal has one side-effect line.
func TestClusterSideEffectOnceAcrossHosts(t *testing.T) {
	t.Parallel()
	testkit.ForEachClaude(t, testClusterSideEffectOnceAcrossHosts)
}

func testClusterSideEffectOnceAcrossHosts(t *testing.T, version string) {
	f := newClusterFixture(t, version)
	file := filepath.Join(f.dir, "once.txt")
	marker := filepath.Join(f.dir, "checked")
	verify := filepath.Join(f.dir, "verify.sh")
	body := fmt.Sprintf("#!/bin/sh\nif [ ! -e %[1]s ]; then touch %[1]s; echo 'not yet'; exit 1; fi\necho ok\n", marker)
	if err := os.WriteFile(verify, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	f.batch = filepath.Join(f.dir, "night.yaml")
	yaml := fmt.Sprintf(`version: 1
name: cluster-night
state_dir: ${NW_STATE}
max_parallel: 1
keep_awake: false
cluster: {database_env: NW_PG, rescue_after: 3m}
agent: {command: %s}
defaults: {timeout: 2m, stall_timeout: 90s, retries: 1}
health: {ttl: 10m, probe_timeout: 5s, prewarm_timeout: 30s}
servers:
  files: {command: %s}
jobs:
  - {name: once, servers: [files], verify: [%s], prompt: %s}
`, q(testkit.ClaudeBinOf(t, version)), q(f.server), q(verify),
		script("once", fmt.Sprintf(`mcp__files__record {"text":"ordered once","file":%s}`, q(file)), fmt.Sprintf(`mcp__files__peek {"file":%s}`, q(file))))
	if err := os.WriteFile(f.batch, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}

	hostA := f.start("host-a", "worker", f.batch)
	// The retry waits long enough for host-a's worker to go first.
	coord := f.start("host-c", "run", f.batch, "--retry-pause", "20s")
	db := f.db()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var state string
		_ = db.Pool.QueryRow(context.Background(), "SELECT state FROM nightwatch_attempts WHERE job = 'once' AND attempt = 1").Scan(&state)
		if state == "ended" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("attempt 1 of once did not end within 2m")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := hostA.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := hostA.wait(t, time.Minute); code != 0 {
		t.Fatalf("host-a's worker exited %d", code)
	}
	f.start("host-b", "worker", f.batch)
	if code := coord.wait(t, 3*time.Minute); code != 0 {
		b, _ := os.ReadFile(coord.log)
		t.Fatalf("the coordinator exited %d:\n%s", code, tail(string(b), 6000))
	}

	evs := f.events(db)
	e := ends(evs)
	if e.done["once"] != 1 || e.endsAt["once"] != 2 || strings.Join(e.hosts["once"], ",") != "host-a,host-b" {
		t.Fatalf("once: done %d times in %d attempts on %v, want done on the second, attempts on host-a then host-b",
			e.done["once"], e.endsAt["once"], e.hosts["once"])
	}
	if got, _ := os.ReadFile(file); string(got) != "ordered once\n" {
		t.Errorf("the file holds %q, want the line once", got)
	}
	testkit.WantSideEffectOnce(t, f.api, "once")
	var sideEffects []journal.Event
	for _, ev := range evs {
		if ev.Type == journal.SideEffect {
			sideEffects = append(sideEffects, ev)
		}
	}
	if len(sideEffects) != 1 || sideEffects[0].Tool != "mcp__files__record" || sideEffects[0].Attempt != 1 {
		t.Errorf("side-effect lines %+v, want the record of attempt 1 once", sideEffects)
	}
}
