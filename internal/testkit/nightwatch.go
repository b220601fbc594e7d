package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	nightwatchOnce sync.Once
	nightwatchPath string
	nightwatchErr  error
	nightwatchOut  []byte
)

// BuildNightwatch builds cmd/nightwatch once per test process, the way a
// user does (no race detector, no test flags), and returns its absolute
// path: hooks registered in a settings file need one.
func BuildNightwatch(t testing.TB) string {
	t.Helper()
	root := ModuleRoot(t)
	nightwatchOnce.Do(func() {
		// Shared by every test of the process, so not a t.TempDir.
		dir, err := os.MkdirTemp("", "nightwatch-bin-")
		if err != nil {
			nightwatchErr = err
			return
		}
		nightwatchPath = filepath.Join(dir, "nightwatch")
		cmd := exec.Command("go", "build", "-o", nightwatchPath, "./cmd/nightwatch")
		cmd.Dir = root
		nightwatchOut, nightwatchErr = cmd.CombinedOutput()
	})
	if nightwatchErr != nil {
		t.Fatalf("build nightwatch: %v\n%s", nightwatchErr, nightwatchOut)
	}
	return nightwatchPath
}
