package install

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCronFields(t *testing.T) {
	for _, tc := range []struct{ sched, want string }{
		{"0 2 * * *", "0 2 * * *"},
		{"*/15 * * * 1-5", "*/15 * * * 1-5"},
		{"*/30 * * * *", "*/30 * * * *"},
		{"0 0 1 * *", "0 0 1 * *"},
		{"@weekly", "0 0 * * 0"},
		{"0 3 ? jan-mar MON-FRI", "0 3 * 1-3 1-5"},
		{"5/20 * * * *", "5,25,45 * * * *"},
		// robfig reads "*/2" as a restricted day field; Vixie cron would
		// read a field starting with "*" as unrestricted and AND the days.
		{"0 9 */2 * 1", "0 9 1-31/2 * 1"},
	} {
		s, err := parseSchedule(tc.sched)
		if err != nil {
			t.Fatalf("%s: %v", tc.sched, err)
		}
		if got, err := s.cronFields(); err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.sched, got, err, tc.want)
		}
	}
}

// TestCronLine runs the generated command through /bin/sh, as cron would,
// with a batch folder whose name holds every character that matters to
// the shell or to cron.
func TestCronLine(t *testing.T) {
	for _, dirName := range []string{"plain", "it's 100% a $(night) & `x` \"dir\""} {
		t.Run(dirName, func(t *testing.T) {
			f := newFixture(t, dirName)
			f.env["GH_HOST"] = "gh-'quoted' 50% $HOST"
			p := f.plan(t, Cron)
			line := p.CrontabLine
			if !strings.HasPrefix(line, "0 2 * * * mkdir -p ") || !strings.HasSuffix(line, " # nightwatch:nightly") {
				t.Fatalf("line %q", line)
			}
			if strings.Contains(strings.ReplaceAll(line, `\%`, ""), "%") {
				t.Errorf("unescaped %% in %q", line)
			}
			// What cron hands to /bin/sh: the text after the five fields,
			// with "\%" turned back into "%".
			command := strings.ReplaceAll(strings.SplitN(line, " ", 6)[5], `\%`, "%")
			if out, err := exec.Command("sh", "-n", "-c", command).CombinedOutput(); err != nil {
				t.Fatalf("sh -n: %v\n%s\n%s", err, out, command)
			}
			cmd := exec.Command("sh", "-c", command)
			cmd.Env = []string{} // cron's environment is nearly empty
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("sh -c: %v\n%s", err, out)
			}
			ran, err := os.ReadFile(filepath.Join(f.root, "ran"))
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(string(ran), "\n")
			if got[0] != f.batch.Dir {
				t.Errorf("cwd %q, want %q", got[0], f.batch.Dir)
			}
			if got[1] != "arg=run" || got[2] != "arg="+f.batch.File {
				t.Errorf("args %q", got[1:3])
			}
			for _, kv := range []string{"GH_HOST=" + f.env["GH_HOST"], "HOME=" + f.home, "PATH=/usr/local/bin:/usr/bin:/bin"} {
				if !strings.Contains(string(ran), "\n"+kv+"\n") {
					t.Errorf("environment lacks %s", kv)
				}
			}
			if _, err := os.Stat(filepath.Join(f.batch.StateDir, "logs", "cron.log")); err != nil {
				t.Errorf("no log file: %v", err)
			}
		})
	}
}

// fakeCrontab puts a `crontab` first in PATH that keeps the table in a
// file and counts the writes.
func fakeCrontab(t *testing.T) (table string) {
	dir := t.TempDir()
	table = filepath.Join(dir, "table")
	script := `#!/bin/sh
f="` + table + `"
case "$1" in
-l) if [ -f "$f" ]; then cat "$f"; else echo "no crontab for tester" >&2; exit 1; fi ;;
-) cat > "$f"; echo w >> "$f.writes" ;;
*) echo "usage" >&2; exit 2 ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "crontab"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return table
}

func TestCronApplyIdempotent(t *testing.T) {
	table := fakeCrontab(t)
	ctx := context.Background()
	run := (&recorder{}).run
	f := newFixture(t, "b")
	p := f.plan(t, Cron)

	// No crontab yet: "crontab -l" fails with "no crontab".
	if err := Apply(ctx, p, run); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, table); got != p.CrontabLine+"\n" {
		t.Fatalf("table %q", got)
	}

	// The user's own lines, and another batch's, are kept; applying twice
	// leaves one line; a changed schedule replaces it.
	other := "0 5 * * * /usr/bin/backup # nightwatch:nightly-2"
	mine := "MAILTO=me@example.com\n# my comment\n" + other + "\n"
	if err := os.WriteFile(table, []byte(mine+p.CrontabLine+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	writesBefore := readFile(t, table+".writes")
	if err := Apply(ctx, p, run); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, table); got != mine+p.CrontabLine+"\n" {
		t.Fatalf("after a second apply: %q", got)
	}
	if readFile(t, table+".writes") != writesBefore {
		t.Error("an unchanged crontab was written again")
	}
	f.batch.Schedule = "30 3 * * 1-5"
	p2 := f.plan(t, Cron)
	if err := Apply(ctx, p2, run); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, table); got != mine+p2.CrontabLine+"\n" {
		t.Fatalf("after a new schedule: %q", got)
	}

	un, err := PlanUninstall(Cron, f.options())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // removing twice is fine
		if err := ApplyUninstall(ctx, un, run); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, table); got != mine {
			t.Fatalf("after uninstall: %q", got)
		}
	}
}

func TestCronListFailure(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho 'crontab: permission denied' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "crontab"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	f := newFixture(t, "b")
	err := Apply(context.Background(), f.plan(t, Cron), (&recorder{}).run)
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("err = %v: a failing crontab -l must not be read as empty (that would wipe the table)", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(data)
}
