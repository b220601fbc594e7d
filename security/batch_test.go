package security_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/session"
)

func noEnv(string) (string, bool) { return "", false }

// Job and batch names name files (logs, session folders, the journal, the
// lock): anything that could leave its folder is refused by jobs.Load,
// with file:line and the field.
func TestBatchNamesThatArePathsAreRefused(t *testing.T) {
	bad := []string{"../escape", "..", ".", "a/b", "/etc/passwd", "a/../../b", `a\b`, "..hidden..", "a b", "a;b", "$(id)", "ü", ""}
	for _, name := range bad {
		for _, where := range []string{"job", "batch"} {
			t.Run(where+"/"+name, func(t *testing.T) {
				dir := t.TempDir()
				batch := filepath.Join(dir, "batch.yaml")
				jobName, batchName, line, field := "a", "ok", 4, "jobs[0].name"
				if where == "job" {
					jobName = name
				} else {
					batchName, line, field = name, 2, "name"
				}
				writeFile(t, batch, fmt.Sprintf("version: 1\nname: %s\nagent: {command: /bin/true}\njobs:\n  - {name: %s, prompt: hi}\n",
					jsonQuote(batchName), jsonQuote(jobName)), 0o600)
				if where == "job" {
					line = 5
				}
				_, err := jobs.Load(batch, noEnv)
				var le *jobs.LoadError
				if !errors.As(err, &le) {
					t.Fatalf("Load accepted %s name %q: %v", where, name, err)
				}
				want := fmt.Sprintf("%s:%d: %s:", batch, line, field)
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			})
		}
	}
}

// An allowed_tools entry that is a flag would follow --allowedTools on the
// command line and be read as a flag: refused by jobs.Load with file:line.
func TestAllowedToolThatIsAFlagIsRefused(t *testing.T) {
	dir := t.TempDir()
	batch := filepath.Join(dir, "batch.yaml")
	writeFile(t, batch, "version: 1\nname: b\nagent: {command: /bin/true}\njobs:\n  - name: a\n    prompt: hi\n    allowed_tools: [Read, --dangerously-skip-permissions]\n", 0o600)
	_, err := jobs.Load(batch, noEnv)
	if err == nil || !strings.Contains(err.Error(), batch+":7: jobs[0].allowed_tools[1]:") {
		t.Fatalf("Load: %v", err)
	}
}

// A prompt that looks like a flag is the prompt, never a flag: as the
// argument right after -p, or on stdin when it starts with '-' (claude's
// parser would read "-p --x" as two flags).
func TestPromptIsNeverAFlag(t *testing.T) {
	for _, prompt := range []string{
		"--dangerously-skip-permissions",
		"-p --dangerously-skip-permissions --mcp-config /tmp/evil.json",
		"- --permission-mode bypassPermissions",
		"fix it --dangerously-skip-permissions",
		"$(touch /tmp/nw-prompt-pwned) `id`",
	} {
		t.Run(prompt, func(t *testing.T) {
			dir := t.TempDir()
			batch := filepath.Join(dir, "batch.yaml")
			writeFile(t, batch, fmt.Sprintf("version: 1\nname: b\nagent: {command: /bin/true}\njobs:\n  - {name: a, prompt: %s}\n", jsonQuote(prompt)), 0o600)
			b, err := jobs.Load(batch, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			if b.Jobs[0].Prompt != prompt {
				t.Fatalf("prompt %q, want %q", b.Jobs[0].Prompt, prompt)
			}
			spec := session.Spec{Batch: b, Job: b.Jobs[0], RunID: "r", Attempt: 1, Binary: "/usr/bin/nightwatch"}
			f := session.Files{Settings: "/s.json", MCPConfig: "/m.json"}
			cmd := session.Command(context.Background(), spec, f)
			args := cmd.Args[1:]
			if args[0] != "-p" {
				t.Fatalf("argv %q", args)
			}
			if strings.HasPrefix(prompt, "-") {
				if slices.Contains(args, prompt) || cmd.Stdin == nil {
					t.Fatalf("a prompt starting with '-' is in argv %q, stdin %v", args, cmd.Stdin)
				}
				in, _ := io.ReadAll(cmd.Stdin)
				if string(in) != prompt {
					t.Errorf("stdin %q, want the prompt", in)
				}
			} else if args[1] != prompt {
				t.Errorf("argv[2] = %q, want the prompt", args[1])
			}
			// The flags nightwatch sets come once each; the prompt's words
			// add none.
			for _, flag := range []string{"--dangerously-skip-permissions", "--permission-mode", "--mcp-config", "-p"} {
				n := 0
				for _, a := range args {
					if a == flag {
						n++
					}
				}
				want := map[string]int{"--mcp-config": 1, "-p": 1}[flag]
				if n != want {
					t.Errorf("%s appears %d times in argv %q, want %d", flag, n, args, want)
				}
			}
		})
	}
	if _, err := os.Stat("/tmp/nw-prompt-pwned"); err == nil {
		t.Error("a prompt ran a command")
	}
}

// Shell syntax in env values (the batch's env and env_file, a server's env)
// is data: it reaches the session, the agent and the server literally and
// runs nothing. The session's hook command, which Claude Code runs through
// /bin/sh, holds a state_dir with shell syntax in its name and still runs
// nothing but nightwatch.
func TestEnvValuesAndPathsAreNeverExecuted(t *testing.T) {
	root := t.TempDir()
	marker := filepath.Join(root, "marker")
	evil := map[string]string{
		"EVIL_SUBST":    "$(touch " + marker + ")",
		"EVIL_BACKTICK": "`touch " + marker + "`",
		"EVIL_SEMI":     "x; touch " + marker,
		"EVIL_QUOTES":   `'"; touch ` + marker + `; "'`,
	}
	dir := filepath.Join(root, "it's a $(touch "+marker+") `dir`")
	agent := filepath.Join(root, "agent")
	// The agent records its environment exactly and runs the hook command
	// of its settings file through /bin/sh, as Claude Code does, with an
	// MCP call on stdin.
	writeFile(t, agent, fmt.Sprintf(`#!/bin/sh
env > "$AGENT_OUT"
/bin/sh -c "$(cat '%[1]s/hookcmd')" < '%[1]s/payload.json' > '%[1]s/hook-out' 2>&1
echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0}'
`, root), 0o700)
	writeFile(t, filepath.Join(root, "payload.json"), preIn("mcp__notes__x", `{}`, root), 0o600)
	var envYAML, dotenv strings.Builder
	for k, v := range evil {
		fmt.Fprintf(&envYAML, "  %s: %s\n", k, jsonQuote(v))
		fmt.Fprintf(&dotenv, "DOT_%s='%s'\n", k, strings.ReplaceAll(v, "'", ""))
	}
	writeFile(t, filepath.Join(dir, "config.env"), dotenv.String(), 0o600)
	server := testkit.BuildTestServer(t)
	batch := filepath.Join(dir, "batch.yaml")
	writeFile(t, batch, fmt.Sprintf(`version: 1
name: evil
state_dir: ./state
env_file: ./config.env
env:
  AGENT_OUT: %s
%sagent: {command: %s}
servers:
  notes:
    command: %s
    env: {NOTES_TOKEN: %s, OTHER: %s}
jobs:
  - {name: a, prompt: hi, servers: [notes]}
`, jsonQuote(filepath.Join(root, "agent-env")), envYAML.String(), jsonQuote(agent), jsonQuote(server),
		jsonQuote(evil["EVIL_SUBST"]), jsonQuote(evil["EVIL_BACKTICK"])), 0o600)

	b, err := jobs.Load(batch, func(k string) (string, bool) {
		if k == "PATH" {
			return os.Getenv("PATH"), true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range evil {
		if b.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, b.Env[k], v)
		}
		if want := strings.ReplaceAll(v, "'", ""); b.Env["DOT_"+k] != want {
			t.Errorf("env_file DOT_%s = %q, want %q", k, b.Env["DOT_"+k], want)
		}
	}
	// A real session: the agent sees every value literally, and the hook
	// command (whose paths hold shell syntax) probes notes, started with
	// the hostile env values, and records it.
	spec := session.Spec{Batch: b, Job: b.Jobs[0], RunID: "r1", Attempt: 1,
		Binary: testkit.BuildNightwatch(t), Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root}}
	f, err := session.Prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	var settings struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string } `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(readFile(t, f.Settings)), &settings); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "hookcmd"), settings.Hooks["PreToolUse"][0].Hooks[0].Command, 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out := session.Run(ctx, spec, f, nil); out.Status != session.Done {
		t.Fatalf("session: %+v", out)
	}
	agentEnv := readFile(t, filepath.Join(root, "agent-env"))
	for k, v := range evil {
		if !strings.Contains(agentEnv, k+"="+v+"\n") {
			t.Errorf("the agent did not get %s=%q literally", k, v)
		}
	}
	hookOut := readFile(t, filepath.Join(root, "hook-out"))
	cache := readFile(t, statedir.Cache(b.StateDir))
	if !strings.Contains(cache, `"notes"`) || !strings.Contains(cache, `"healthy"`) {
		t.Errorf("the hook did not probe notes through its settings command:\n%s\n%s", cache, hookOut)
	}

	// Preflight starts the server with the same env.
	code, pout := nightwatchCmdEnv(t, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root}, "preflight", batch)
	if code != 0 {
		t.Errorf("preflight: exit %d\n%s", code, pout)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("an env value or a path ran a shell command")
	}
}

func nightwatchCmdEnv(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(testkit.BuildNightwatch(t), args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// A state_dir reached through a symlink (an operator's choice, e.g. to
// another disk) is used as the folder it points to: the night runs, and
// everything it writes lands inside the target with private modes.
func TestStateDirThroughASymlink(t *testing.T) {
	batch, stateDir := nightBatch(t, "")
	target := t.TempDir()
	if err := os.Chmod(target, 0o700); err != nil {
		t.Fatal(err)
	}
	symlink(t, target, stateDir)
	if code, out := nightwatchCmd(t, "run", batch); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	n := 0
	walkFiles(t, target, func(path string, fi os.FileInfo) {
		n++
		if fi.Mode()&os.ModeSymlink != 0 {
			t.Errorf("%s is a symlink", path)
		} else if fi.IsDir() && fi.Mode().Perm() != 0o700 || !fi.IsDir() && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %#o", path, fi.Mode().Perm())
		}
	})
	if n < 5 {
		t.Errorf("only %d entries in the state folder", n)
	}
}
