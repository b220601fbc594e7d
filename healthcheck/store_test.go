package healthcheck

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConcurrentProcessesLoseNothing starts 64 real processes that update
// one cache file at the same moment: each adds its own server and bumps a
// shared counter. Every update must be there at the end.
func TestConcurrentProcessesLoseNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.json")
	const n = 64
	start := time.Now().Add(2 * time.Second).UnixMilli()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "NW_STORE_CHILD=1", "NW_STORE_PATH="+path,
				"NW_STORE_ID="+strconv.Itoa(i), "NW_STORE_START="+strconv.FormatInt(start, 10))
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("child %d: %v\n%s", i, err, out)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	f, err := (&Store{Path: path}).Read()
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Servers["shared"].FailureCount; got != n {
		t.Errorf("shared counter = %d, want %d: updates were lost", got, n)
	}
	for i := 0; i < n; i++ {
		if f.Servers["s"+strconv.Itoa(i)] == nil {
			t.Errorf("entry of child %d is missing", i)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("cache mode = %o, want 600", fi.Mode().Perm())
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".cache.json.tmp-*"))
	if len(leftovers) > 0 {
		t.Errorf("temp files left behind: %v", leftovers)
	}
}

// TestMain turns the test binary into one of the 64 writers when it is
// started by TestConcurrentProcessesLoseNothing.
func TestMain(m *testing.M) {
	if os.Getenv("NW_STORE_CHILD") != "" {
		os.Exit(storeChild())
	}
	os.Exit(m.Run())
}

func storeChild() int {
	start, _ := strconv.ParseInt(os.Getenv("NW_STORE_START"), 10, 64)
	time.Sleep(time.Until(time.UnixMilli(start)))
	s := &Store{Path: os.Getenv("NW_STORE_PATH"), LockTimeout: 60 * time.Second}
	id := os.Getenv("NW_STORE_ID")
	err := s.Update(func(f *File) error {
		e := f.Servers["shared"]
		if e == nil {
			e = &Entry{Status: StatusHealthy}
			f.Servers["shared"] = e
		}
		e.FailureCount++
		f.Servers["s"+id] = &Entry{Status: StatusHealthy, Source: id}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestCorruptCacheIsMovedAsideAndReported(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp-health-cache.json")
	if err := os.WriteFile(path, []byte(`{"version":1,"servers":{`), 0o600); err != nil {
		t.Fatal(err)
	}
	var warned []string
	s := &Store{Path: path, Warn: func(m string) { warned = append(warned, m) },
		Now: func() time.Time { return time.UnixMilli(1700000000123) }}
	if _, err := s.Read(); err == nil {
		t.Fatal("Read of a corrupt file returned no error")
	}
	err := s.Update(func(f *File) error {
		f.Servers["a"] = &Entry{Status: StatusHealthy}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	aside := path + ".corrupt-1700000000123"
	if b, err := os.ReadFile(aside); err != nil || string(b) != `{"version":1,"servers":{` {
		t.Errorf("corrupt file not kept at %s: %v %q", aside, err, b)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], aside) || !strings.Contains(warned[0], path) {
		t.Errorf("warning = %q, want one naming both paths", warned)
	}
	f, err := s.Read()
	if err != nil || f.Servers["a"] == nil {
		t.Errorf("fresh cache not written: %v %+v", err, f)
	}
}

func TestUnwritableCacheIsAnError(t *testing.T) {
	dir := t.TempDir()
	// A file where the cache's folder should be: no user, root included,
	// can create the cache there.
	blocker := filepath.Join(dir, "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Store{Path: filepath.Join(blocker, "cache.json")}
	err := s.Update(func(f *File) error { return nil })
	if err == nil || !strings.Contains(err.Error(), blocker) {
		t.Fatalf("Update = %v, want an error naming %s", err, blocker)
	}
}

func TestSymlinkedCacheIsRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "cache.json")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	err := (&Store{Path: path}).Update(func(f *File) error { return nil })
	if err == nil {
		t.Fatal("Update wrote through a symlink")
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Fatalf("symlink target changed: %q", b)
	}
}

// The cache's lock file and a probe lock planted as symlinks (dangling or
// not) are refused: flock's O_CREATE would create or open the target.
func TestLocksRefuseSymlinks(t *testing.T) {
	dir := t.TempDir()
	s := &Store{Path: filepath.Join(dir, "cache.json")}
	target := filepath.Join(dir, "not-yet")
	if err := os.Symlink(target, s.Path+".lock"); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(*File) error { return nil }); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("Update with a symlinked lock: %v", err)
	}
	probeLock := s.ProbeLockPath("x")
	if err := os.MkdirAll(filepath.Dir(probeLock), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, probeLock); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AcquireProbe(context.Background(), "x", time.Second); err == nil {
		t.Error("AcquireProbe through a symlink succeeded")
	}
	if _, err := os.Lstat(target); err == nil {
		t.Errorf("a lock created the link's target")
	}
}
