package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
)

// TestSecretFilesDeniedRealClaude is issue 21's "with the README's own
// layout the model can read every secret", through the real CLI on every
// supported version: the batch's folder holds its env_file and its state
// folder (state_dir's default), and the job runs there (a job without
// cwd). The fake model calls Read, Grep and Write on them; the deny rules
// in the session's settings refuse each, and no request the CLI sends to
// the API (every one the fake sees) carries a secret.
func TestSecretFilesDeniedRealClaude(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		api := fakeapi.Start(t)
		b := sessionTestBatch(t)
		b.Agent.Command = testkit.ClaudeBinOf(t, version)
		b.StateDir = filepath.Join(b.Dir, ".nightwatch")
		envSecret, stateSecret := "nw-env-9f3c7a1e5b", "nw-state-4d8e2c6a0f"
		b.EnvFile = filepath.Join(b.Dir, "config.env")
		if err := os.WriteFile(b.EnvFile, []byte("REGION_STORE_PATH="+envSecret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		b.EnvFileKeys = []string{"REGION_STORE_PATH"}
		b.Env["REGION_STORE_PATH"] = envSecret
		if err := os.MkdirAll(b.StateDir, 0o700); err != nil {
			t.Fatal(err)
		}
		planted := filepath.Join(b.StateDir, "cache.json")
		if err := os.WriteFile(planted, []byte(`{"key":"`+stateSecret+`"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		written := filepath.Join(b.StateDir, "written.txt")

		call := func(tool string, args map[string]string) string {
			data, err := json.Marshal(args)
			if err != nil {
				t.Fatal(err)
			}
			return "CALL " + tool + " " + string(data)
		}
		prompt := strings.Join([]string{"SESSION deny",
			call("Read", map[string]string{"file_path": b.EnvFile}),
			call("Read", map[string]string{"file_path": planted}),
			call("Write", map[string]string{"file_path": written, "content": "x"}),
			call("Read", map[string]string{"file_path": "config.env"}),
			call("Bash", map[string]string{"command": "cat config.env " + planted}),
		}, "\n")
		job := sessionTestJob("deny", prompt)
		job.Cwd = b.Dir
		job.AllowedTools, job.AllowedToolsSet = []string{"Bash"}, true
		spec := sessionTestSpec(b, job, sessionTestClaudeEnv(t, api)...)
		spec.Binary = testkit.BuildNightwatch(t)
		api.Watch(envSecret, stateSecret)

		out, _, _ := sessionTestRun(t, context.Background(), spec)
		results := api.SessionToolResults("deny")
		for _, r := range results {
			t.Logf("%s %s: is_error=%v %q", version, r.ToolName, r.IsError, r.ModelSaw())
		}
		if len(results) != 5 {
			t.Fatalf("the model got %d tool results, want 5 (outcome %s %q)", len(results), out.Status, out.Reason)
		}
		for _, secret := range []string{envSecret, stateSecret} {
			if n := api.Carried(secret); n != 0 {
				t.Errorf("%d requests to the API carried %q", n, secret)
			}
		}
		for _, r := range results {
			if r.ToolName != "Grep" && !r.IsError {
				t.Errorf("%s %s was not refused: %q", r.ToolName, r.Input, r.ModelSaw())
			}
		}
		if _, err := os.Stat(written); !os.IsNotExist(err) {
			t.Errorf("Write into the state folder: %v (want the file absent)", err)
		}
	})
}
