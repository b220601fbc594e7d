package supervisor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// TestNightPauseSurvivesASIGKILL: a usage limit with a reset seconds
// ahead pauses the night; `nightwatch run` is SIGKILLed during the pause
// and started again. The new supervisor resumes the run still paused:
// no session starts before the reset, the attempt the limit ended stays
// uncounted, the retry resumes the same Claude session, and every job is
// done.
func TestNightPauseSurvivesASIGKILL(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		f := newNightFixture(t)
		f.env = environ.Overlay(f.env, map[string]string{"ANTHROPIC_API_KEY": "",
			"CLAUDE_CODE_OAUTH_TOKEN": strings.TrimPrefix(testkit.SubscriberEnv[1], "CLAUDE_CODE_OAUTH_TOKEN=")})
		yaml := f.apiBatch(version, 2, "resume: true\n")
		b := f.load(yaml)
		batch := filepath.Join(f.dir, "batch.yaml")
		bin := testkit.BuildNightwatch(t)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		run := func() *exec.Cmd {
			cmd := exec.CommandContext(ctx, bin, "run", batch, "--maintenance-interval", "300ms")
			cmd.Env, cmd.Dir = f.env, f.dir
			out, err := os.OpenFile(filepath.Join(f.dir, "run.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			_ = out.Close()
			return cmd
		}
		log := func() string { s, _ := os.ReadFile(filepath.Join(f.dir, "run.log")); return string(s) }

		// The reset is 15 s after the first session meets the limit, however
		// long a busy machine's preflight took (the kill comes well before
		// it), and the limit is over by then.
		limit := fakeapi.UsageLimitIn(fakeapi.FiveHour, 15*time.Second)
		limit.For, limit.ForFromFirst = 14*time.Second, true
		f.api.Inject(limit)
		first := run()
		// Wait for the pause, then kill the supervisor in it.
		var path string
		var reset time.Time // the pause's end, as journaled
		for {
			if ctx.Err() != nil {
				_ = first.Process.Kill()
				t.Fatalf("no pause before the timeout; log:\n%s", log())
			}
			p, events, _ := journal.LatestUnfinished(b.StateDir, b.Name)
			if p != "" && hasType(events, journal.NightPaused) {
				path = p
				for _, ev := range events {
					if ev.Type == journal.NightPaused {
						reset = ev.Until
					}
				}
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := first.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = first.Wait()
		killedAt := time.Now()
		if !killedAt.Before(reset.Add(-5 * time.Second)) {
			t.Fatalf("the kill came at %s, too near the reset %s to prove the pause", killedAt, reset)
		}
		second := run()
		if err := second.Wait(); err != nil {
			t.Fatalf("the resumed run: %v; log:\n%s", err, log())
		}

		events := readJournalTypes(t, path)
		if !hasType(events, journal.RunResumed) {
			t.Fatalf("the second run did not resume the first; journal %+v", events)
		}
		var pause *journal.Event
		for i, ev := range events {
			if ev.Type == journal.NightPaused {
				pause = &events[i]
			}
		}
		if pause == nil || pause.Until.IsZero() {
			t.Fatalf("want a usage-limit pause with its end, got %+v", pause)
		}
		var sessions []string
		for _, ev := range events {
			if ev.Type == journal.JobStarted && ev.Time.After(killedAt) && ev.Time.Before(pause.Until) {
				t.Errorf("%s started at %s after the restart, before the pause's end %s", ev.Job, ev.Time, pause.Until)
			}
			if ev.Type == journal.JobRetried && ev.Job == "j1" {
				if !ev.Uncounted || ev.Class != "usage-limit" {
					t.Errorf("j1's limited attempt: uncounted %v, class %q", ev.Uncounted, ev.Class)
				}
				if ev.Result != nil {
					sessions = append(sessions, ev.Result.SessionID)
				}
			}
			if ev.Type == journal.JobStarted && ev.Job == "j1" && ev.Attempt == 2 {
				sessions = append(sessions, ev.Resume)
			}
		}
		if len(sessions) != 2 || sessions[0] == "" || sessions[0] != sessions[1] {
			t.Errorf("j1's retry after the restart resumes %q, want the limited session", sessions)
		}
		rs := journal.Replay(events)
		if !rs.Done["j1"] || !rs.Done["j2"] {
			t.Fatalf("want every job done, got %+v; log:\n%s", rs, log())
		}
		if n := startedPer(events); n["j1"] != 2 || n["j2"] != 1 {
			t.Errorf("attempts started %v, want j1 twice (the limit, then after the reset), j2 once", n)
		}
	})
}

func hasType(events []journal.Event, typ journal.Type) bool {
	for _, ev := range events {
		if ev.Type == typ {
			return true
		}
	}
	return false
}
