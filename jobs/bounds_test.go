package jobs

import (
	"fmt"
	"strings"
	"testing"
)

// A legitimate night of 10,000 jobs, written out without aliases, loads;
// the alias bound measures only what aliases add.
func TestLoadTenThousandJobsWithoutAliases(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nname: big\nagent: {command: /bin/true}\nservers:\n  notes: {command: /bin/true}\njobs:\n")
	for i := range 10_000 {
		fmt.Fprintf(&b, "  - {name: job-%d, prompt: \"do task %d\", servers: [notes], allowed_tools: [mcp__notes__echo],"+
			" timeout: 5m, stall_timeout: 2m, retries: 1, on_unhealthy: defer}\n", i, i)
	}
	path := writeFile(t, t.TempDir(), "big.yaml", b.String())
	batch, err := Load(path, noEnv)
	if err != nil {
		t.Fatalf("Load: %.500v", err)
	}
	if len(batch.Jobs) != 10_000 {
		t.Fatalf("jobs = %d, want 10000", len(batch.Jobs))
	}
}

// A small file whose aliases multiply (a "billion laughs") is still refused,
// and the message says it was the aliases.
func TestLoadRefusesAnAliasBomb(t *testing.T) {
	tools := strings.TrimSuffix(strings.Repeat("mcp__s__t, ", 1000), ", ")
	yaml := "version: 1\nname: bomb\nagent: {command: /bin/true}\njobs:\n" +
		"  - &j {name: a, prompt: hi, allowed_tools: [" + tools + "]}\n" +
		strings.Repeat("  - *j\n", 1000)
	_, err := Load(writeFile(t, t.TempDir(), "bomb.yaml", yaml), noEnv)
	if err == nil || !strings.Contains(err.Error(), "YAML aliases expand the file") {
		t.Fatalf("Load error %v, want the alias bound", err)
	}
}

// Names from the file reach the terminal through error messages quoted and
// escaped: no terminal escape code passes through.
func TestLoadErrorsEscapeHostileNames(t *testing.T) {
	dir := t.TempDir()
	yaml := "version: 1\nname: n\nagent: {command: /bin/true}\n" +
		"env: {\"BAD\\e[2JKEY\": x}\n" +
		"servers:\n  \"evil\\e]0;owned\\a\": {command: /nonexistent/server}\n" +
		"\"unknown\\e[31m\": 1\n" +
		"jobs:\n  - {name: a, prompt: hi, servers: [\"ghost\\e[1m\"]}\n"
	_, err := Load(writeFile(t, dir, "hostile.yaml", yaml), noEnv)
	if err == nil {
		t.Fatal("Load accepted the hostile file")
	}
	msg := err.Error()
	for _, c := range msg {
		if c == 0x1b || c == 0x07 {
			t.Fatalf("a control character reached the message: %q", msg)
		}
	}
	for _, want := range []string{`\x1b[2J`, `\x1b]0;owned\a`, `\x1b[31m`, `\x1b[1m`} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks the escaped form %s:\n%s", want, msg)
		}
	}
}

func noEnv(string) (string, bool) { return "", false }
