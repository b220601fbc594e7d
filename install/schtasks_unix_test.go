//go:build unix

package install

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSchtasks puts a `schtasks` first in PATH that records its arguments
// and, for /Create, a copy of the XML file as it was at that moment.
func fakeSchtasks(t *testing.T) (log string) {
	dir := t.TempDir()
	log = filepath.Join(dir, "log")
	script := `#!/bin/sh
printf '%s\n' "$*" >> "` + log + `"
case "$1" in
/Create) cp "$3" "` + log + `.xml" ;;
/Delete) [ -f "` + log + `.xml" ] || { echo "ERROR: The system cannot find the file specified." >&2; exit 1; } ; rm -f "` + log + `.xml" ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "schtasks"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

func TestSchtasksApplyThroughSchtasks(t *testing.T) {
	log := fakeSchtasks(t)
	ctx := context.Background()
	f := newFixture(t, "b")
	o := f.options()
	o.Now = testNow
	for range 2 { // a reinstall replaces the task (/F)
		p, err := PlanInstall(Schtasks, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := Apply(ctx, p, RunCommand); err != nil {
			t.Fatal(err)
		}
		registered, err := os.ReadFile(log + ".xml")
		if err != nil {
			t.Fatalf("schtasks /Create did not find the XML file: %v", err)
		}
		if string(registered) != string(utf16LE(p.Files[0].Content)) {
			t.Error("schtasks /Create read another file than the plan's")
		}
	}
	un, err := PlanUninstall(Schtasks, o)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second /Delete fails (no such task): that is fine
		if err := ApplyUninstall(ctx, un, RunCommand); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(un.Remove[0]); !os.IsNotExist(err) {
		t.Errorf("the XML file is still there: %v", err)
	}
	xmlPath := filepath.Join(f.home, "AppData", "Local", "nightwatch", "schtasks", "nightwatch-nightly.xml")
	want := strings.Join([]string{
		"/Create /XML " + xmlPath + ` /TN \nightwatch\nightly /F`,
		"/Create /XML " + xmlPath + ` /TN \nightwatch\nightly /F`,
		`/Delete /TN \nightwatch\nightly /F`,
		`/Delete /TN \nightwatch\nightly /F`,
	}, "\n") + "\n"
	if got := readFile(t, log); got != want {
		t.Errorf("schtasks ran:\n%s\nwant:\n%s", got, want)
	}
}
