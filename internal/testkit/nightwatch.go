package testkit

import (
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	nightwatchOnce sync.Once
	nightwatchPath string
	nightwatchErr  error
)

// BuildNightwatch builds cmd/nightwatch and, beside it, cmd/nightwatch-hook
// once per test process, the way a user does (no race detector, no test
// flags, CGO_ENABLED=0: a static binary, as scripts/test.sh cross-builds,
// saves about a millisecond of dynamic loading per hook process), and
// returns nightwatch's absolute path: hooks registered in a settings file
// need one, and the night injects the sibling hook executable
// (hookexe.Path).
func BuildNightwatch(t testing.TB) string {
	t.Helper()
	root := ModuleRoot(t)
	nightwatchOnce.Do(func() {
		// One folder for both, keyed by both build IDs: the night finds
		// the hook beside nightwatch.
		const nw, hook = "github.com/nightwatch-dev/nightwatch/cmd/nightwatch", "github.com/nightwatch-dev/nightwatch/cmd/nightwatch-hook"
		var dir string
		if dir, nightwatchErr = binaryDir(root, nw, hook); nightwatchErr != nil {
			return
		}
		if nightwatchPath, nightwatchErr = linkInto(root, dir, nw, "nightwatch"); nightwatchErr == nil {
			_, nightwatchErr = linkInto(root, dir, hook, hookName())
		}
	})
	if nightwatchErr != nil {
		t.Fatalf("build nightwatch: %v", nightwatchErr)
	}
	return nightwatchPath
}

// BuildHook is the nightwatch-hook executable built beside BuildNightwatch's.
func BuildHook(t testing.TB) string {
	t.Helper()
	return filepath.Join(filepath.Dir(BuildNightwatch(t)), hookName())
}

// hookName is hookexe.Name with the platform's extension (testkit does not
// import the packages it tests).
func hookName() string {
	if runtime.GOOS == "windows" {
		return "nightwatch-hook.exe"
	}
	return "nightwatch-hook"
}
