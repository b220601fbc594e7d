package install

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/text"
)

// cronMarker ends the batch's crontab line. Batch names are
// [A-Za-z0-9._-], so the marker needs no quoting and one batch's marker
// is never a suffix of another's (they all start with " # ").
func cronMarker(name string) string { return "# nightwatch:" + name }

// planCron builds the crontab line. cron hands the command to /bin/sh, so
// every word is single-quoted; cron itself turns an unescaped "%" into a
// newline, so each "%" is written "\%".
func planCron(j *job) (*Plan, error) {
	fields, err := j.sched.cronFields()
	if err != nil {
		return nil, err
	}
	return &Plan{
		CrontabMarker: cronMarker(j.name),
		CrontabLine:   fields + " " + cronEscape(cronCommand(j)) + " " + cronMarker(j.name),
		Notes:         []string{"the crontab is kept by cron, readable by you and root only"},
	}, nil
}

// cronCommand is the shell command of the line, before cron's % escaping.
func cronCommand(j *job) string {
	var b strings.Builder
	// mkdir: a state folder deleted since the install would otherwise make
	// the redirection fail, and the night would silently not run.
	fmt.Fprintf(&b, "mkdir -p %s && cd %s &&", text.ShellQuote(j.logDir), text.ShellQuote(j.dir))
	for _, e := range j.env {
		fmt.Fprintf(&b, " %s=%s", e.name, text.ShellQuote(e.value))
	}
	fmt.Fprintf(&b, " %s run %s >> %s 2>&1", text.ShellQuote(j.bin), text.ShellQuote(j.file), text.ShellQuote(filepath.Join(j.logDir, "cron.log")))
	return b.String()
}

func cronEscape(s string) string { return strings.ReplaceAll(s, "%", `\%`) }

// updateCrontab replaces the lines carrying marker with line (none when
// line is ""), through `crontab -l` and `crontab -`, leaving the rest of
// the user's crontab as it was. Nothing is written when nothing changes.
func updateCrontab(ctx context.Context, marker, line string) error {
	list, err := proc.Run(ctx, proc.Spec{Argv: []string{"crontab", "-l"}, Timeout: installCommandTimeout})
	out := list.Stdout
	if err != nil {
		// "no crontab for <user>" is an empty crontab, not a failure.
		var exit *exec.ExitError
		if !errors.As(err, &exit) || !strings.Contains(strings.ToLower(string(list.Stderr)), "no crontab") {
			return fmt.Errorf("install: crontab -l: %w", err)
		}
		out = nil
	}
	var kept []string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if l == "" && len(kept) == 0 {
			continue
		}
		if strings.HasSuffix(strings.TrimRight(l, " \t"), " "+marker) {
			continue
		}
		kept = append(kept, l)
	}
	if line != "" {
		kept = append(kept, line)
	}
	next := strings.Join(kept, "\n")
	if next != "" {
		next += "\n"
	}
	if next == string(out) {
		return nil
	}
	if _, err := proc.Run(ctx, proc.Spec{Argv: []string{"crontab", "-"}, Stdin: strings.NewReader(next),
		Timeout: installCommandTimeout}); err != nil {
		return fmt.Errorf("install: crontab -: %w", err)
	}
	return nil
}
