package testkit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

// NpmCITimeout bounds one `npm ci` of testdata/npm (about 245 MB).
const NpmCITimeout = 10 * time.Minute

// npmBins are the executables the e2e tests need from testdata/npm.
var npmBins = []string{"claude", "mcp-server-everything"}

// npmPackages are the pinned packages whose installed version must match
// testdata/npm/package-lock.json.
var npmPackages = []string{"@anthropic-ai/claude-code", "@modelcontextprotocol/server-everything"}

var (
	npmMu    sync.Mutex
	npmReady string // node_modules path once verified in this process
)

// ModuleRoot returns the directory of the module's go.mod, found by walking
// up from the working directory (a package directory under `go test`).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("testkit: getwd: %v", err)
	}
	for {
		if st, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !st.IsDir() {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("testkit: no go.mod above the working directory")
		}
		dir = parent
	}
}

// NodeModules returns the absolute path of testdata/npm/node_modules, first
// installing it with `npm ci` if a needed executable is missing or an
// installed pinned package does not match package-lock.json. The install
// runs under a cross-process file lock, since `go test ./...` runs several
// test binaries at once. A failed install fails the test (never skips it: a
// skipped e2e test would hide a failure).
func NodeModules(t testing.TB) string {
	t.Helper()
	npmMu.Lock()
	defer npmMu.Unlock()
	if npmReady != "" {
		return npmReady
	}
	npmDir := filepath.Join(ModuleRoot(t), "testdata", "npm")
	nm := filepath.Join(npmDir, "node_modules")
	if npmProblem(npmDir) == "" {
		npmReady = nm
		return nm
	}

	lockPath := filepath.Join(os.TempDir(), "nightwatch-npm-ci-"+npmDirHash(npmDir)+".lock")
	fl := flock.New(lockPath)
	ctx, cancel := context.WithTimeout(context.Background(), NpmCITimeout+time.Minute)
	defer cancel()
	locked, err := fl.TryLockContext(ctx, 200*time.Millisecond)
	if err != nil || !locked {
		t.Fatalf("testkit: lock %s for npm ci: locked=%v err=%v", lockPath, locked, err)
	}
	defer func() { _ = fl.Unlock() }()

	// Another test binary may have installed it while we waited.
	problem := npmProblem(npmDir)
	if problem == "" {
		npmReady = nm
		return nm
	}
	t.Logf("testkit: %s; running npm ci in %s", problem, npmDir)
	start := time.Now()
	out, err := runNpmCI(npmDir)
	if err != nil {
		t.Fatalf("testkit: npm ci in %s failed (%v) after %s; output:\n%s",
			npmDir, err, time.Since(start).Round(time.Millisecond), headTailLines(out, 25, 15))
	}
	if problem := npmProblem(npmDir); problem != "" {
		t.Fatalf("testkit: after npm ci in %s: %s; output:\n%s", npmDir, problem, headTailLines(out, 25, 15))
	}
	t.Logf("testkit: npm ci took %s", time.Since(start).Round(time.Millisecond))
	npmReady = nm
	return nm
}

// ClaudeBin returns the absolute path of the pinned Claude Code CLI.
func ClaudeBin(t testing.TB) string {
	t.Helper()
	return filepath.Join(NodeModules(t), ".bin", "claude")
}

// ServerEverythingBin returns the absolute path of the reference MCP server
// (a node script; run it as `<bin> stdio`, `<bin> sse` or
// `<bin> streamableHttp`, with node on PATH).
func ServerEverythingBin(t testing.TB) string {
	t.Helper()
	return filepath.Join(NodeModules(t), ".bin", "mcp-server-everything")
}

// npmProblem says why testdata/npm/node_modules is not usable, "" if it is.
func npmProblem(npmDir string) string {
	nm := filepath.Join(npmDir, "node_modules")
	for _, b := range npmBins {
		p := filepath.Join(nm, ".bin", b)
		st, err := os.Stat(p) // follows the symlink to the real file
		if err != nil {
			return fmt.Sprintf("%s missing (%v)", p, err)
		}
		if st.Mode()&0o111 == 0 {
			return p + " is not executable"
		}
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	data, err := os.ReadFile(filepath.Join(npmDir, "package-lock.json"))
	if err != nil {
		return fmt.Sprintf("cannot read package-lock.json: %v", err)
	}
	if err := json.Unmarshal(data, &lock); err != nil {
		return fmt.Sprintf("cannot parse package-lock.json: %v", err)
	}
	for _, pkg := range npmPackages {
		want := lock.Packages["node_modules/"+pkg].Version
		var got struct {
			Version string `json:"version"`
		}
		data, err := os.ReadFile(filepath.Join(nm, pkg, "package.json"))
		if err == nil {
			err = json.Unmarshal(data, &got)
		}
		if err != nil {
			return fmt.Sprintf("%s is not installed properly: %v", pkg, err)
		}
		if want == "" || got.Version != want {
			return fmt.Sprintf("%s installed version %q does not match package-lock.json's %q",
				pkg, got.Version, want)
		}
	}
	return ""
}

func runNpmCI(dir string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), NpmCITimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	proc.Prepare(cmd, 10*time.Second)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	err := proc.Wait(cmd)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("timed out after %s: %w", NpmCITimeout, err)
	}
	return buf.Bytes(), err
}

func npmDirHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:6])
}

// lastLines returns the last n lines of b.
func lastLines(b []byte, n int) string { return headTailLines(b, 0, n) }

// headTailLines returns the first head and the last tail lines of b (npm
// states its error first, then may print a long usage text).
func headTailLines(b []byte, head, tail int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) <= head+tail {
		return strings.Join(lines, "\n")
	}
	out := slices.Clone(lines[:head])
	out = append(out, fmt.Sprintf("… (%d lines left out)", len(lines)-head-tail))
	return strings.Join(append(out, lines[len(lines)-tail:]...), "\n")
}
