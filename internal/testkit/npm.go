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

	"github.com/nightwatch-dev/nightwatch/internal/clirange"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

// NpmCITimeout bounds one `npm ci` of testdata/npm (about 245 MB).
const NpmCITimeout = 10 * time.Minute

// claudeAliasPrefix starts the name of each pinned Claude Code CLI in
// testdata/npm/package.json: "claude-code-2.1.332": "npm:@anthropic-ai/claude-code@2.1.332".
// Adding a supported version is one such line (and `npm install` to update
// the lock file).
const claudeAliasPrefix = "claude-code-"

// everythingPackage is the reference MCP server the e2e tests run.
const everythingPackage = "@modelcontextprotocol/server-everything"

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

// ClaudeBin returns the absolute path of the oldest pinned Claude Code CLI
// (the oldest supported version). Tests that must run on every supported
// version use ForEachClaude and ClaudeBinOf.
func ClaudeBin(t testing.TB) string {
	t.Helper()
	return ClaudeBinOf(t, "")
}

// ClaudeBinOf returns the absolute path of the pinned Claude Code CLI of the
// given version ("" = the oldest pinned one). An unpinned version fails the
// test.
func ClaudeBinOf(t testing.TB, version string) string {
	t.Helper()
	nm := NodeModules(t)
	versions, err := claudeVersions(filepath.Dir(nm))
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	if version == "" {
		version = versions[0]
	}
	if !slices.Contains(versions, version) {
		t.Fatalf("testkit: Claude Code %s is not pinned in testdata/npm/package.json (pinned: %v)", version, versions)
	}
	return countingClaude(t, claudeBinPath(nm, version), version)
}

func claudeBinPath(nm, version string) string {
	return filepath.Join(nm, claudeAliasPrefix+version, "bin", "claude.exe")
}

// ClaudeVersions returns the pinned Claude Code versions, oldest first.
func ClaudeVersions(t testing.TB) []string {
	t.Helper()
	versions, err := claudeVersions(filepath.Join(ModuleRoot(t), "testdata", "npm"))
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	return versions
}

// ForEachClaude runs fn as one parallel subtest per pinned Claude Code
// version (named "claude-<version>"), so every end-to-end test runs on the
// oldest and the newest supported CLI. The subtests share nothing but what
// the caller shares: give each its own servers, folders and fake API unless
// sharing is the point.
func ForEachClaude(t *testing.T, fn func(t *testing.T, version string)) {
	t.Helper()
	for _, v := range ClaudeVersions(t) {
		t.Run("claude-"+v, func(t *testing.T) {
			t.Parallel()
			fn(t, v)
		})
	}
}

// claudeVersions reads the claude-code-<version> aliases of package.json,
// sorted oldest first.
func claudeVersions(npmDir string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(npmDir, "package.json"))
	if err != nil {
		return nil, fmt.Errorf("read pinned versions: %w", err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Join(npmDir, "package.json"), err)
	}
	var versions []string
	for name, spec := range pkg.Dependencies {
		v, ok := strings.CutPrefix(name, claudeAliasPrefix)
		if !ok {
			continue
		}
		if spec != "npm:@anthropic-ai/claude-code@"+v {
			return nil, fmt.Errorf("%s: %q must pin exactly npm:@anthropic-ai/claude-code@%s, not %q", filepath.Join(npmDir, "package.json"), name, v, spec)
		}
		versions = append(versions, v)
	}
	if len(versions) == 0 {
		return nil, fmt.Errorf("%s pins no Claude Code version (%s<version> aliases)", filepath.Join(npmDir, "package.json"), claudeAliasPrefix)
	}
	slices.SortFunc(versions, clirange.Compare)
	return versions, nil
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
	versions, err := claudeVersions(npmDir)
	if err != nil {
		return err.Error()
	}
	bins := []string{filepath.Join(nm, ".bin", "mcp-server-everything")}
	packages := []string{everythingPackage}
	for _, v := range versions {
		bins = append(bins, claudeBinPath(nm, v))
		packages = append(packages, claudeAliasPrefix+v)
	}
	for _, p := range bins {
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
	for _, pkg := range packages {
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
	if err := proc.Start(cmd); err != nil {
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
