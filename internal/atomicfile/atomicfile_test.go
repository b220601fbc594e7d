package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// Neither writer follows a planted symlink, whether its target exists or
// not: the target is neither changed nor created.
func TestWritersRefuseSymlinks(t *testing.T) {
	for _, dangling := range []bool{false, true} {
		dir := t.TempDir()
		target := filepath.Join(dir, "target")
		if !dangling {
			if err := os.WriteFile(target, []byte("theirs"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		link := filepath.Join(dir, "link")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(link, []byte("ours"), Mode); err == nil {
			t.Error("WriteFile replaced a symlink")
		}
		if err := AppendLine(link, []byte("ours")); err == nil {
			t.Error("AppendLine wrote through a symlink")
		}
		if err := Sync(link); err == nil {
			t.Error("Sync opened a symlink")
		}
		b, err := os.ReadFile(target)
		if dangling && err == nil {
			t.Errorf("a writer created the link's target: %q", b)
		}
		if !dangling && string(b) != "theirs" {
			t.Errorf("target changed: %q", b)
		}
	}
}

// New files are 0600 whatever the umask lets through.
func TestModes(t *testing.T) {
	dir := t.TempDir()
	for name, write := range map[string]func(string) error{
		"write":  func(p string) error { return WriteFile(p, []byte("x"), Mode) },
		"append": func(p string) error { return AppendLine(p, []byte("x")) },
	} {
		p := filepath.Join(dir, name)
		if err := write(p); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v)", name, fi.Mode(), err)
		}
	}
}

func TestOpenLogAndCreateNew(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "a.log")
	for i := 0; i < 2; i++ { // the second open appends
		f, err := OpenLog(log)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("line\n"); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if b, _ := os.ReadFile(log); string(b) != "line\nline\n" {
		t.Errorf("log = %q", b)
	}
	if fi, _ := os.Stat(log); fi.Mode().Perm() != Mode {
		t.Errorf("log mode %o", fi.Mode().Perm())
	}
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLog(link); err == nil {
		t.Error("OpenLog wrote through a symlink")
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("the symlink's target was created")
	}
	fresh := filepath.Join(dir, "new.jsonl")
	if err := CreateNew(fresh); err != nil {
		t.Fatal(err)
	}
	if err := CreateNew(fresh); err == nil {
		t.Error("CreateNew reused an existing file")
	}
	if err := CreateNew(link); err == nil {
		t.Error("CreateNew went through a symlink")
	}
}

// Sync fsyncs a regular file and nothing else: a missing file is an error
// and is not created; a folder is refused.
func TestSync(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "journal")
	if err := AppendLineVolatile(file, []byte("line")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		ok         bool
	}{
		{"regular file", file, true},
		{"missing file", filepath.Join(dir, "missing"), false},
		{"folder", dir, false},
	}
	for _, c := range cases {
		if err := Sync(c.path); (err == nil) != c.ok {
			t.Errorf("%s: Sync: %v", c.name, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("Sync created a missing file: %v", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "line\n" {
		t.Errorf("the file after Sync: %q %v", b, err)
	}
}
