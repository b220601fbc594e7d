package supervisor

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// What exec-server writes to the events file reaches the journal: its own
// restarts; a second exec-server of one server in one attempt as Claude
// Code's restart (a first start per attempt is no restart, nor are the
// starts of exec-server's own restarts); a lost server; an HTTP server
// a hook saw back as a new process, once per outage; and nothing of
// another night's run.
func TestAbsorbGuardEvents(t *testing.T) {
	dir := t.TempDir()
	b := testkit.LoadBatch(t, dir, "version: 1\nname: ev\nstate_dir: ./state\nkeep_awake: false\nagent: {command: /bin/true}\njobs:\n  - {name: a, prompt: a}\n")
	if err := os.MkdirAll(b.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	n := newNight(b, NightOptions{Binary: "/bin/true", LogWriter: zerolog.NewTestWriter(t), SkipPreflight: true})
	if _, err := n.openJournal(); err != nil {
		t.Fatal(err)
	}
	n.exec = newLocalExecutor(b, n.runID, "/bin/true", nil, n.inbox)
	at := time.Now()
	ev := func(kind string, start int, reason string) healthcheck.Event {
		return healthcheck.Event{Time: at, Kind: kind, Run: n.runID, Job: "a", Attempt: 1, Server: "notes", Start: start, Reason: reason}
	}
	other := ev(healthcheck.EventServerRestarted, 1, "another night's")
	other.Run = "another-run"
	httpBack := ev(healthcheck.EventServerRestarted, 0, "HTTP: its address refused connections during the outage (seen by a probe), then a probe's handshake answered")
	httpBack.Server, httpBack.By, httpBack.Since = "web", healthcheck.ByProbe, at.Add(-time.Minute)
	httpAgain := httpBack
	httpAgain.Since = at.Add(-time.Second) // a later outage
	n.absorb([]healthcheck.Event{
		ev(healthcheck.EventServerStarted, 1, ""),
		ev(healthcheck.EventServerRestarted, 1, "exited with code 3"),
		ev(healthcheck.EventServerStarted, 2, ""),
		ev(healthcheck.EventServerStarted, 1, ""), // Claude Code started exec-server again
		other,
		ev(healthcheck.EventServerLost, 1, "exited with code 1, and it was restarted 5 times within 10m0s"),
		httpBack, httpBack, // two calls held for one outage of an HTTP server
		httpAgain,
	}, "")
	var got []string
	for _, e := range readJournalTypes(t, n.journal.Path) {
		switch e.Type {
		case journal.ServerRestarted, journal.ServerLost:
			got = append(got, fmt.Sprintf("%s %s#%d %s %s: %s", e.Type, e.Job, e.Attempt, e.Server, e.By, e.Reason))
		}
	}
	want := []string{
		"server-restarted a#1 notes nightwatch: exited with code 3",
		"server-restarted a#1 notes claude-code: Claude Code started it again (start 2 in this attempt)",
		"server-lost a#1 notes : exited with code 1, and it was restarted 5 times within 10m0s",
		"server-restarted a#1 web outside: HTTP: its address refused connections during the outage (seen by a probe), then a probe's handshake answered",
		"server-restarted a#1 web outside: HTTP: its address refused connections during the outage (seen by a probe), then a probe's handshake answered",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("journal:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
