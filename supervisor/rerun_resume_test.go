package supervisor

import (
	"os"
	"slices"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/rs/zerolog"
)

// A re-run night that was interrupted is resumed by `run` with the whole
// batch: it resumes only the re-run's jobs, and a new night after it has
// every job again.
func TestResumedRerunKeepsItsJobs(t *testing.T) {
	dir := t.TempDir()
	b := testkit.LoadBatch(t, dir, "version: 1\nname: rr\nstate_dir: ./state\nkeep_awake: false\nagent: {command: /bin/true}\njobs:\n  - {name: a, prompt: a}\n  - {name: b, prompt: b}\n  - {name: c, prompt: c, needs: [b]}\n")
	if err := os.MkdirAll(b.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	only, err := b.Only([]string{"c"})
	if err != nil {
		t.Fatal(err)
	}
	opts := NightOptions{Binary: "/bin/true", LogWriter: zerolog.NewTestWriter(t), SkipPreflight: true}
	rerunOpts := opts
	rerunOpts.RerunOf = "20261201-020000"
	first := newNight(only, rerunOpts)
	if _, err := first.openJournal(); err != nil {
		t.Fatal(err)
	}
	names := func(n *night) (out []string) {
		for _, j := range n.b.Jobs {
			out = append(out, j.Name)
		}
		return out
	}

	resumed := newNight(b, opts) // `nightwatch run` with the whole batch
	ok, err := resumed.openJournal()
	if err != nil || !ok {
		t.Fatalf("resume: %v, %v", ok, err)
	}
	if got := names(resumed); !slices.Equal(got, []string{"c"}) {
		t.Errorf("the resumed re-run has jobs %v, want only the re-run's [c]", got)
	}
	if len(resumed.b.Jobs) == 1 && len(resumed.b.Jobs[0].Needs) != 0 {
		t.Errorf("c still needs %v, which the re-run does not run", resumed.b.Jobs[0].Needs)
	}

	fresh := newNight(b, NightOptions{Binary: "/bin/true", LogWriter: zerolog.NewTestWriter(t), SkipPreflight: true, Fresh: true})
	if _, err := fresh.openJournal(); err != nil {
		t.Fatal(err)
	}
	if got := names(fresh); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("a new night has jobs %v, want every job", got)
	}
}
