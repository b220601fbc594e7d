package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// exec-server becomes the server with the base environment and the kept
// names only: another server's key and the agent's key do not reach it,
// and the server's own flags pass through untouched.
func TestExecServerScrubsTheEnvironment(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	cmd := exec.Command(bin, "exec-server", "--keep", "NOTES_API_KEY", "--", "sh", "-c", `env; echo "args: $*"`, "sh", "--keep", "-x")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "NOTES_API_KEY=notes-own-key",
		"SEARCH_TOKEN=another-servers-token", "ANTHROPIC_API_KEY=sk-ant-agent-key", "DB_PASSWORD=from-env-file"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("exec-server: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, want := range []string{"NOTES_API_KEY=notes-own-key", "PATH=/usr/bin:/bin", "HOME=/tmp", "args: --keep -x"} {
		if !slices.Contains(lines, want) {
			t.Errorf("the server's view lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{"another-servers-token", "sk-ant-agent-key", "from-env-file"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("the server sees %q:\n%s", secret, out)
		}
	}
}

func TestExecServerExitCodes(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"exec-server", "--", "sh", "-c", "exit 3"}, 3},
		{[]string{"exec-server", "--", "/nonexistent/server"}, 2},
		{[]string{"exec-server", "--keep", "A B", "--", "true"}, 2},
	} {
		err := exec.Command(bin, c.args...).Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != c.code {
			t.Errorf("%q: exit %d, want %d", c.args, code, c.code)
		}
	}
}
