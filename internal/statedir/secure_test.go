//go:build !windows

package statedir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecure(t *testing.T) {
	t.Run("missing: created 0700", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "state")
		if notes, err := Secure(root); err != nil || len(notes) != 0 {
			t.Fatalf("%v, %v", notes, err)
		}
		if fi, _ := os.Stat(root); fi == nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("mode %v", fi.Mode())
		}
	})
	t.Run("loose folders are tightened and said", func(t *testing.T) {
		root := t.TempDir()
		for _, d := range []string{root, Runs(root), Logs(root)} {
			if err := os.MkdirAll(d, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		notes, err := Secure(root)
		if err != nil || len(notes) != 3 || !strings.Contains(notes[0], "0777") {
			t.Fatalf("notes %q, %v", notes, err)
		}
		for _, d := range []string{root, Runs(root), Logs(root)} {
			if fi, _ := os.Stat(d); fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s still %v", d, fi.Mode())
			}
		}
	})
	for _, sub := range []func(string) string{Runs, Logs, Reports, Spool} {
		root := t.TempDir()
		elsewhere := t.TempDir()
		if err := os.Symlink(elsewhere, sub(root)); err != nil {
			t.Fatal(err)
		}
		if _, err := Secure(root); err == nil || !strings.Contains(err.Error(), sub(root)) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("a planted link %s: %v", sub(root), err)
		}
	}
	t.Run("a file where a folder belongs", func(t *testing.T) {
		root := t.TempDir()
		if err := os.WriteFile(Runs(root), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Secure(root); err == nil || !strings.Contains(err.Error(), "not a folder") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("state_dir itself may be the operator's link", func(t *testing.T) {
		real := t.TempDir()
		link := filepath.Join(t.TempDir(), "state")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		if _, err := Secure(link); err != nil {
			t.Errorf("got %v", err)
		}
	})
}
