package doctor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/nightwatch-dev/nightwatch/install"
	"github.com/nightwatch-dev/nightwatch/internal/command"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// taskFile writes a UTF-8 task document with one Exec action.
func taskFile(t *testing.T, home, name, cmd string, args ...string) string {
	t.Helper()
	p := filepath.Join(install.SchtasksDir(home), name+".xml")
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace
	write(t, p, `<?xml version="1.0" encoding="UTF-8"?>
<Task version="1.2" xmlns="http://schemas.microsoft.com/windows/2004/02/mit/task">
  <Actions Context="Author"><Exec>
    <Command>`+esc(cmd)+`</Command>
    <Arguments>`+esc(command.JoinArgs(args))+`</Arguments>
    <WorkingDirectory>`+esc(home)+`</WorkingDirectory>
  </Exec></Actions>
</Task>
`)
	return p
}

func TestSchtasksTaskChecked(t *testing.T) {
	registered := queryRegistered
	queryRegistered = false // the task files alone; TestSchtasksRegisteredTask reads them back
	t.Cleanup(func() { queryRegistered = registered })
	ctx := context.Background()
	home := t.TempDir()
	e := &env{Options: Options{Home: home}}
	if got := e.schtasks(ctx); got != nil {
		t.Fatalf("no task files, yet: %s", dump(got))
	}

	// What `nightwatch install schtasks` writes (UTF-16) is clean.
	bin := filepath.Join(home, "bin", "nightwatch")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	write(t, bin, "#!/bin/sh\n")
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	batch := filepath.Join(home, "night", "night.yaml")
	write(t, batch, "name: nightly\n")
	b := &jobs.Batch{File: batch, Dir: filepath.Dir(batch), Name: "nightly", Schedule: "0 2 * * *", StateDir: filepath.Join(home, "state")}
	p, err := install.PlanInstall(install.Schtasks, install.Options{Binary: bin, Batch: b, Home: home, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := install.Apply(ctx, p, func(context.Context, []string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	mustFind(t, e.schtasks(ctx), "schtasks", OK, "1 task file(s)")

	// The batch file goes away.
	if err := os.Remove(batch); err != nil {
		t.Fatal(err)
	}
	mustFind(t, e.schtasks(ctx), "schtasks", Fail, "batch file "+batch+" is not there")
	write(t, batch, "name: nightly\n")

	// Hand-edited tasks.
	bad := taskFile(t, home, "edited", bin, "--fail-open", "run", batch)
	mustFind(t, e.schtasks(ctx), "fail-open", Fail, bad, "--fail-open")
	bad = taskFile(t, home, "edited", `C:\nowhere\cmd.exe`, "/c", "set CLAUDE_CODE_SIMPLE=1&& "+bin+" run "+batch)
	checks := e.schtasks(ctx)
	mustFind(t, checks, "hooks-off", Fail, bad, "CLAUDE_CODE_SIMPLE=1")
	mustFind(t, checks, "schtasks", Fail, `C:\nowhere\cmd.exe`, "not there")
	bad = taskFile(t, home, "edited", bin, "run", batch, "ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnop")
	mustFind(t, e.schtasks(ctx), "schtasks", Fail, bad, "secret value")
	write(t, bad, "<Task><Actions>")
	mustFind(t, e.schtasks(ctx), "schtasks", Warn, "cannot read task "+bad)
}

// TestSchtasksRegisteredTask: on Windows doctor reads each task back from
// Task Scheduler (here a fake schtasks /Query) and checks that copy.
func TestSchtasksRegisteredTask(t *testing.T) {
	registered, query := queryRegistered, queryTask
	t.Cleanup(func() { queryRegistered, queryTask = registered, query })
	queryRegistered = true
	ctx := context.Background()
	home := t.TempDir()
	e := &env{Options: Options{Home: home}}
	bin := filepath.Join(home, "nightwatch")
	write(t, bin, "")
	batch := filepath.Join(home, "night.yaml")
	write(t, batch, "")
	file := taskFile(t, home, "nightwatch-nightly", bin, "run", batch)

	var asked []string
	answer := map[string][]byte{}
	queryTask = func(_ context.Context, name string) ([]byte, error) {
		asked = append(asked, name)
		if a, ok := answer[name]; ok {
			return a, nil
		}
		return nil, errors.New("ERROR: The system cannot find the file specified.")
	}
	mustFind(t, e.schtasks(ctx), "schtasks", Warn, file, `\nightwatch\nightly cannot be read back`)
	if len(asked) != 1 || asked[0] != `\nightwatch\nightly` {
		t.Errorf("asked for %q", asked)
	}

	// Registered as written (UTF-16LE without a BOM, as a console writes).
	raw, _ := os.ReadFile(file)
	var le []byte
	for _, u := range utf16.Encode([]rune(string(raw))) {
		le = append(le, byte(u), byte(u>>8))
	}
	answer[`\nightwatch\nightly`] = le
	mustFind(t, e.schtasks(ctx), "schtasks", OK, "1 task file(s)")

	// Edited in Task Scheduler: the registered copy turns fail-open on.
	edited := taskFile(t, t.TempDir(), "x", bin, "--fail-open", "run", batch)
	answer[`\nightwatch\nightly`], _ = os.ReadFile(edited)
	checks := e.schtasks(ctx)
	mustFind(t, checks, "schtasks", Warn, "runs something else than "+file)
	mustFind(t, checks, "fail-open", Fail, `\nightwatch\nightly`, "--fail-open")
}
