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
	// "At once" is what the error says: refused as not a regular file.
	// Opening a FIFO with no writer blocks for good, so an OpenRegular
	// that tried would hang here; a minute of it is a hang, not a slow
	// machine.
	opened := make(chan error, 1)
	go func() {
		f, err := OpenRegular(path)
		if err == nil {
			f.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), path) {
			t.Errorf("OpenRegular(FIFO) = %v", err)
		}
	case <-time.After(time.Minute):
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close() // lets the blocked open go
		}
		t.Fatal("OpenRegular hung on the FIFO")
	}
	ok := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(ok, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenRegular(ok)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// Holds is true only for a regular, owner-only file of exactly the bytes:
// a link to such a file, a loose one, a FIFO, another content or length,
// or nothing at all, is written again.
func TestHolds(t *testing.T) {
	dir := t.TempDir()
	data := []byte(`{"hooks": {}}` + "\n")
	write := func(name string, b []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	same := write("same", data, 0o600)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(same, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       bool
	}{
		{"the same bytes, owner-only", same, true},
		{"another content of the same length", write("other", []byte(`{"hooks": []}`+"\n"), 0o600), false},
		{"a longer file", write("longer", append(append([]byte{}, data...), ' '), 0o600), false},
		{"readable by others", write("loose", data, 0o644), false},
		{"a symlink to the same bytes", link, false},
		{"a FIFO", fifo, false},
		{"missing", filepath.Join(dir, "missing"), false},
	} {
		if got := Holds(tc.path, data); got != tc.want {
			t.Errorf("%s: Holds = %v, want %v", tc.name, got, tc.want)
		}
	}
}
