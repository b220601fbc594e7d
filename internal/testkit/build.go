// Package testkit holds helpers for nightwatch's tests.
package testkit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

const testServerPackage = "github.com/nightwatch-dev/nightwatch/internal/testkit/cmd/nwtestserver"

var (
	buildOnce  sync.Once
	serverPath string
	buildErr   error
)

// BuildTestServer builds the nwtestserver binary once per test process and
// returns its path.
//
// The binary lives in a directory of os.TempDir() named after the module
// root, so test processes do not litter one binary each, and worktrees do
// not run each other's builds. Each process still rebuilds it (the Go
// build cache makes that fast) and renames it into place, which is atomic:
// a process running the old binary keeps it.
func BuildTestServer(t testing.TB) string {
	t.Helper()
	root := ModuleRoot(t)
	buildOnce.Do(func() { serverPath, buildErr = buildTestServer(root) })
	if buildErr != nil {
		t.Fatalf("building nwtestserver: %v", buildErr)
	}
	return serverPath
}

func buildTestServer(root string) (string, error) {
	return buildBinary(root, testServerPackage, "nwtestserver")
}

// buildBinary builds pkg into a folder of os.TempDir() named after the
// module root and renames it into place as name: atomic, so a process
// still running the previous build keeps it, and one folder serves every
// test process instead of one left behind per process.
func buildBinary(root, pkg, name string) (string, error) {
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(os.TempDir(), "nightwatch-testkit-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, name+"-*.tmp")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name()) // a no-op after the rename

	cmd := exec.Command(goTool(), "build", "-o", tmp.Name(), pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	path := filepath.Join(dir, name)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}

// goTool finds the go command: on PATH, else in $GOROOT/bin (a test binary
// started by an absolute path to go may not have it on PATH).
func goTool() string {
	if path, err := exec.LookPath("go"); err == nil {
		return path
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	return "go"
}
