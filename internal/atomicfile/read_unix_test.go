//go:build unix

package atomicfile

import (
	"path/filepath"
	"syscall"
	"testing"
)

func platformReadCases(t *testing.T, dir string) []readCase {
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	return []readCase{{"FIFO with no writer", fifo, 0, ErrNotRegular}}
}
