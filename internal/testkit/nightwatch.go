package testkit

import (
	"sync"
	"testing"
)

var (
	nightwatchOnce sync.Once
	nightwatchPath string
	nightwatchErr  error
)

// BuildNightwatch builds cmd/nightwatch once per test process, the way a
// user does (no race detector, no test flags), and returns its absolute
// path: hooks registered in a settings file need one.
func BuildNightwatch(t testing.TB) string {
	t.Helper()
	root := ModuleRoot(t)
	nightwatchOnce.Do(func() {
		nightwatchPath, nightwatchErr = buildBinary(root, "github.com/nightwatch-dev/nightwatch/cmd/nightwatch", "nightwatch")
	})
	if nightwatchErr != nil {
		t.Fatalf("build nightwatch: %v", nightwatchErr)
	}
	return nightwatchPath
}
