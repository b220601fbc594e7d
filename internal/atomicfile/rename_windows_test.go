//go:build windows

package atomicfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestWriteFileWhileAReaderHoldsIt: a reader with the file open (Go's
// os.Open does not share delete) makes the rename fail at first; WriteFile
// retries and succeeds once the reader closes.
func TestWriteFileWhileAReaderHoldsIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.json")
	if err := WriteFile(path, []byte("old"), Mode); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(100 * time.Millisecond); r.Close() }()
	if err := WriteFile(path, []byte("new"), Mode); err != nil {
		t.Fatalf("WriteFile while a reader held the file for 100 ms: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "new" {
		t.Errorf("content %q", data)
	}
}

// TestJunctionRefused: a junction at a state file's path is refused.
func TestJunctionRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "events.jsonl")
	if out, err := exec.Command("cmd", "/c", "mklink", "/J", link, target).CombinedOutput(); err != nil {
		t.Fatalf("mklink /J: %v %s", err, out)
	}
	if err := AppendLine(link, []byte("x")); err == nil {
		t.Error("AppendLine wrote through a junction")
	}
	if err := WriteFile(link, []byte("x"), Mode); err == nil {
		t.Error("WriteFile replaced a junction")
	}
	if err := EnsureFile(link); err == nil {
		t.Error("EnsureFile accepted a junction")
	}
}
