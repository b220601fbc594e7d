package main

import (
	"os"
	"strings"
	"testing"
)

// Every nightwatch command the README's cluster section shows parses with
// this nightwatch: its command exists and takes every flag written there
// (a flag the README names and the command lacks, as --host once was
// missing from the README and doctor's fix dropped --label, fails here);
// the section names the ways a host is named, and how to install River UI.
func TestReadmeClusterCommandsParse(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "## One night over several hosts")
	if start < 0 {
		t.Fatal("README has no section \"One night over several hosts\"")
	}
	section := text[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	for _, want := range []string{"--host", "NIGHTWATCH_HOST", "go install riverqueue.com/riverui/cmd/riverui@latest",
		"initdb", "su postgres", "refuse to run as root"} {
		if !strings.Contains(section, want) {
			t.Errorf("the cluster section does not mention %q", want)
		}
	}
	var lines []string
	inBlock := false
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock && strings.HasPrefix(line, "nightwatch ") {
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	if len(lines) < 5 {
		t.Fatalf("found %d nightwatch commands in the cluster section's examples, want the walk-through: %q", len(lines), lines)
	}
	for _, line := range lines {
		t.Run(line, func(t *testing.T) {
			args := strings.Fields(line) // the examples quote nothing
			cmd, rest, err := newRoot().Find(args[1:])
			if err != nil || cmd.Name() == "nightwatch" {
				t.Fatalf("no such command: %v", err)
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Fatalf("%s: %v", cmd.CommandPath(), err)
			}
			if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
				t.Fatalf("%s: %v", cmd.CommandPath(), err)
			}
		})
	}
}
