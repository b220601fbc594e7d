package chaos

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The chaos night's own checks can fail: a fault whose mark never came, or
// that ran and found nothing to do, is reported; figures where nightwatch
// does not beat the plain hook are reported.
func TestSchedulerReportsFaultsThatNeverFired(t *testing.T) {
	var progress atomic.Int32
	stop := make(chan struct{})
	// The night ends once the second fault ran, not after a fixed time a
	// busy machine may not have reached it in.
	ran := make(chan struct{})
	faults := []fault{
		{1, "fires", fired(func() { progress.Add(5) })},
		{2, "runs but finds nothing", func() bool { close(ran); return false }},
		{99, "mark never reached", fired(func() {})},
	}
	progress.Store(1)
	go func() {
		select {
		case <-ran:
		case <-time.After(time.Minute): // the scheduler hung; unfired says which
		}
		close(stop)
	}()
	got := runScheduler(t, faults, func() int { return int(progress.Load()) }, stop)
	if strings.Join(got, ",") != "mark never reached,runs but finds nothing" {
		t.Errorf("unfired = %q", got)
	}
}

func TestBeatsPlainHook(t *testing.T) {
	// The short form's figures in RELIABILITY.md.
	nw := figures{Clean: 10, OK: 23, Errors: 2, Missing: 0}
	base := figures{Clean: 4, OK: 12, Errors: 1, Missing: 11}
	if p := beatsPlainHook(nw, base); len(p) != 0 {
		t.Errorf("the published figures fail: %q", p)
	}
	for name, mut := range map[string]func(f *figures){
		"clean":   func(f *figures) { f.Clean = 4 },
		"ok":      func(f *figures) { f.OK = 12 },
		"bad":     func(f *figures) { f.Missing = 10 },
		"orphans": func(f *figures) { f.Orphans = 1 },
		"leaks":   func(f *figures) { f.Leaks = 1 },
	} {
		worse := nw
		mut(&worse)
		if p := beatsPlainHook(worse, base); len(p) != 1 {
			t.Errorf("%s: problems %q, want one", name, p)
		}
	}
}
