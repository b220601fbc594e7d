//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func platformReadCases(t *testing.T, dir string) []readCase {
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	return []readCase{{"FIFO with no writer", fifo, 0, ErrNotRegular}}
}

// A FIFO where a log or journal should be is refused at once: opening it
// for writing would otherwise wait for a reader forever.
func TestAppendRefusesAFIFOAtOnce(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "night.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { done <- AppendLine(fifo, []byte("x")) }()
	go func() {
		f, err := OpenLog(fifo)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	for range 2 {
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("a FIFO was opened as a log")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("opening a FIFO for writing blocked")
		}
	}
}

func TestOpenRegularRefusesAFIFOAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	start := time.Now()
	f, err := OpenRegular(path)
	if err == nil {
		f.Close()
	}
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), path) || time.Since(start) > time.Second {
		t.Errorf("OpenRegular(FIFO) = %v after %s", err, time.Since(start))
	}
	ok := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(ok, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err = OpenRegular(ok)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
