package served_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nightwatch-dev/nightwatch/hook/served"
)

// A Lazy starts its hook once, whoever asks first, and Close stops that
// one server (nothing listens at its address afterwards); a Lazy closed
// before any use starts nothing, and a nil start keeps the command hook.
func TestLazy(t *testing.T) {
	logs := &logLines{}
	var starts atomic.Int32
	start := func() *served.Server {
		starts.Add(1)
		s, err := served.Start(logs.log)
		if err != nil {
			t.Error(err)
			return nil
		}
		return s
	}

	var l served.Lazy
	got := make([]*served.Server, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = l.Get(start)
		}()
	}
	wg.Wait()
	if n := starts.Load(); n != 1 || got[0] == nil {
		t.Fatalf("%d starts, first hook %v: want one, started", n, got[0])
	}
	for _, s := range got {
		if s != got[0] {
			t.Fatalf("the callers got different hooks")
		}
	}
	url := got[0].URL("k")
	resp, err := http.Post(url, "application/json", nil)
	if err != nil {
		t.Fatalf("the started hook does not listen: %v", err)
	}
	resp.Body.Close()
	l.Close()
	if resp, err := http.Post(url, "application/json", nil); err == nil {
		resp.Body.Close()
		t.Errorf("the hook still answers after Close: %s", resp.Status)
	}
	if s := l.Get(start); s != got[0] || starts.Load() != 1 {
		t.Errorf("Get after Close started another hook")
	}

	var closedFirst served.Lazy
	closedFirst.Close()
	if s := closedFirst.Get(start); s != nil || starts.Load() != 1 {
		t.Errorf("a Lazy closed before its first use started a hook")
	}
	var commandHook served.Lazy
	if s := commandHook.Get(nil); s != nil {
		t.Errorf("Get(nil) = %v, want no served hook", s)
	}
	commandHook.Close()
}
