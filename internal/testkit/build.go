// Package testkit holds helpers for nightwatch's tests.
package testkit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
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
// root and the build ID (buildBinary): worktrees do not run each other's
// builds, and the test processes of one run share one link.
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

// buildBinary builds pkg as name into a folder of os.TempDir() named
// after the module root and the package's build ID, and returns its path.
// The build ID (go list -export) changes with any source, dependency,
// toolchain or flag that changes the binary, so one link serves every
// test process of a `go test ./...` run (about a dozen packages used to
// link the same three binaries each) and later runs of the same code; a
// changed source gets a folder of its own. The link runs under a
// cross-process file lock and renames the binary into place, so a process
// never sees a half-written one.
func buildBinary(root, pkg, name string) (string, error) {
	dir, err := binaryDir(root, pkg)
	if err != nil {
		return "", err
	}
	return linkInto(root, dir, pkg, name)
}

// binaryDir is the folder of pkg's build, keyed by its build ID.
func binaryDir(root string, pkgs ...string) (string, error) {
	ids, err := buildIDs(root, pkgs...)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(root))
	key := sha256.Sum256([]byte(ids))
	base := filepath.Join(os.TempDir(), "nightwatch-testkit-"+hex.EncodeToString(sum[:6]))
	dir := filepath.Join(base, hex.EncodeToString(key[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	removeStale(base, dir)
	return dir, nil
}

// buildIDs are the build IDs of pkgs' compiled packages, one a line: they
// change with any input of the binaries.
func buildIDs(root string, pkgs ...string) (string, error) {
	cmd := exec.Command(goTool(), append([]string{"list", "-export", "-f", "{{.ImportPath}} {{.BuildID}}"}, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -export: %w\n%s", err, stderr.Bytes())
	}
	return string(out), nil
}

// linkInto builds pkg into dir as name unless it is there already.
func linkInto(root, dir, pkg, name string) (string, error) {
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	lock := flock.New(path + ".lock")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if ok, err := lock.TryLockContext(ctx, 100*time.Millisecond); err != nil || !ok {
		return "", fmt.Errorf("lock %s: locked=%v err=%v", path+".lock", ok, err)
	}
	defer func() { _ = lock.Unlock() }()
	if _, err := os.Stat(path); err == nil { // another test process built it while we waited
		return path, nil
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
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}

// removeStale removes the builds in base other than keep that are more
// than a day old: builds of code that has changed since. A test process
// still running one keeps its open file (and on Windows the removal fails
// and is left for later).
func removeStale(base, keep string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		path := filepath.Join(base, e.Name())
		if path == keep {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
			_ = os.RemoveAll(path)
		}
	}
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
