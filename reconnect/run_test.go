//go:build unix

package reconnect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func mustSplit(t *testing.T, command string) []string {
	t.Helper()
	argv, err := Split(command)
	if err != nil {
		t.Fatalf("Split(%q): %v", command, err)
	}
	return argv
}

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		command    string
		opts       Options
		wantOK     bool
		wantErr    string
		wantOutput string
	}{
		{
			name:       "success with output",
			command:    "sh -c 'echo restarting obsidian; echo done >&2'",
			wantOK:     true,
			wantOutput: "restarting obsidian\ndone",
		},
		{
			name:       "the article's echo noop",
			command:    "echo noop",
			wantOK:     true,
			wantOutput: "noop",
		},
		{
			name:       "non-zero exit",
			command:    `sh -c 'echo "[PM2][ERROR] Process obsidian not found" >&2; exit 3'`,
			wantErr:    "exit status 3",
			wantOutput: "[PM2][ERROR] Process obsidian not found",
		},
		{
			name:    "program not found",
			command: "nightwatch-no-such-program restart x",
			wantErr: "cannot start nightwatch-no-such-program: executable file not found in $PATH",
		},
		{
			name:    "missing working directory",
			command: "echo x",
			opts:    Options{Dir: "/nonexistent/nightwatch"},
			wantErr: "cannot start echo: working directory /nonexistent/nightwatch: no such file or directory",
		},
		{
			name:    "killed by a signal",
			command: "sh -c 'kill -9 $$'",
			wantErr: "killed by signal: killed",
		},
		{
			name:       "environment is the caller's",
			command:    `sh -c 'echo "server=$SERVER"'`,
			opts:       Options{Env: []string{"SERVER=agentmemory"}},
			wantOK:     true,
			wantOutput: "server=agentmemory",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Run(context.Background(), mustSplit(t, tt.command), tt.opts)
			if !got.Attempted {
				t.Errorf("Attempted = false")
			}
			if got.OK != tt.wantOK || got.Err != tt.wantErr {
				t.Errorf("OK, Err = %v, %q; want %v, %q", got.OK, got.Err, tt.wantOK, tt.wantErr)
			}
			if got.Output != tt.wantOutput {
				t.Errorf("Output = %q, want %q", got.Output, tt.wantOutput)
			}
			if got.Duration <= 0 {
				t.Errorf("Duration = %v", got.Duration)
			}
		})
	}
}

func TestRunEmptyCommand(t *testing.T) {
	if got := Run(context.Background(), nil, Options{}); got.Attempted || got.OK || got.Err != "" {
		t.Errorf("Run(nil) = %+v, want a zero Outcome", got)
	}
}

func TestRunRelativeProgramResolvesAgainstDir(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"restarted in $(basename \"$PWD\")\"\n"
	if err := os.WriteFile(filepath.Join(dir, "restart.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	got := Run(context.Background(), []string{"./restart.sh"}, Options{Dir: dir})
	if want := "restarted in " + filepath.Base(dir); !got.OK || got.Output != want {
		t.Errorf("Run = %+v, want OK with output %q", got, want)
	}
}

// TestRunTimeoutKillsTheWholeGroup: a reconnect command that forks a
// sleeping child and waits must not leave the child behind.
func TestRunTimeoutKillsTheWholeGroup(t *testing.T) {
	tests := []struct {
		name    string
		command string
	}{
		{"child dies on SIGTERM", `sh -c 'sleep 600 & echo $! > "$PIDFILE"; echo started; wait'`},
		// The child ignores SIGTERM (inherited from the shell's trap), so
		// only the SIGKILL to the group after the grace period ends it.
		{"child ignores SIGTERM", `sh -c 'trap "" TERM; sleep 600 & echo $! > "$PIDFILE"; echo started; wait'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			// The timeout leaves a busy machine room to start the shell
			// (it must print "started" first); the child sleeps ten
			// minutes, so a Run that waited for it would hang, and the
			// timeout named in Err is what cut it.
			opts := Options{
				Timeout: 3 * time.Second,
				Env:     append(os.Environ(), "PIDFILE="+pidFile),
			}
			done := make(chan Outcome, 1)
			go func() { done <- Run(context.Background(), mustSplit(t, tt.command), opts) }()
			var got Outcome
			select {
			case got = <-done:
			case <-time.After(2 * time.Minute):
				if b, err := os.ReadFile(pidFile); err == nil {
					if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
						_ = syscall.Kill(pid, syscall.SIGKILL) // lets Run go
					}
				}
				t.Fatal("Run hung after its timeout: it waited for the child")
			}

			if got.OK || got.Err != "timed out after 3s" {
				t.Errorf("OK, Err = %v, %q; want false, %q", got.OK, got.Err, "timed out after 3s")
			}
			if got.Output != "started" {
				t.Errorf("Output = %q, want %q", got.Output, "started")
			}
			pid := readPID(t, pidFile)
			if !waitGone(pid, time.Minute) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("the command's child %d outlived Run", pid)
			}
		})
	}
}

// TestRunBackgroundChildHoldingOutput: a command that exits 0 but leaves a
// child holding its stdout is not a success, and the child is killed.
func TestRunBackgroundChildHoldingOutput(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	opts := Options{Env: append(os.Environ(), "PIDFILE="+pidFile)}
	// The child would sleep ten minutes: gone within the minute below
	// means killed, not ended by itself.
	got := Run(context.Background(), mustSplit(t, `sh -c 'sleep 600 & echo $! > "$PIDFILE"; echo spawned'`), opts)
	if got.OK || !strings.Contains(got.Err, "left a background process") {
		t.Errorf("OK, Err = %v, %q; want a background-process error", got.OK, got.Err)
	}
	if got.Output != "spawned" {
		t.Errorf("Output = %q, want %q", got.Output, "spawned")
	}
	pid := readPID(t, pidFile)
	if !waitGone(pid, time.Minute) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the command's child %d outlived Run", pid)
	}
}

// TestRunCancelled: the caller's cancel ends the command, and Err says so.
// The command and the timeout are ten minutes: only the cancel can end
// Run before then, so its returning with that Err is the proof; how
// promptly is the machine's.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	got := Run(ctx, []string{"sleep", "600"}, Options{Timeout: 10 * time.Minute})
	if got.OK || got.Err != "cancelled: context canceled" {
		t.Errorf("OK, Err = %v, %q; want false, %q", got.OK, got.Err, "cancelled: context canceled")
	}
}

func TestRunOutputIsBounded(t *testing.T) {
	got := Run(context.Background(), mustSplit(t, `sh -c 'yes nightwatch | head -c 10000000; echo; echo last line'`), Options{Timeout: 30 * time.Second})
	if !got.OK {
		t.Fatalf("Run: %s", got.Err)
	}
	if len(got.Output) > MaxOutput {
		t.Errorf("Output is %d bytes, want at most %d", len(got.Output), MaxOutput)
	}
	if !strings.HasSuffix(got.Output, "nightwatch\nlast line") || !strings.HasPrefix(got.Output, "…") {
		t.Errorf("Output does not look like the cut end of the stream: %q…%q", got.Output[:20], got.Output[len(got.Output)-20:])
	}
}

func TestRunRedactsSecrets(t *testing.T) {
	const secret = "hunter2-hunter2"
	command := `sh -c 'echo "connecting with $DB_PASS"; echo "Authorization: Bearer abcdef123456" >&2; echo "API_KEY=k-99887766"; exit 1'`
	argv := append(mustSplit(t, command), "--api-key", "plain-value", "--password="+secret, secret)
	got := Run(context.Background(), argv, Options{
		Env:     []string{"DB_PASS=" + secret},
		Secrets: []string{secret},
	})
	for _, leaked := range []string{secret, "abcdef123456", "k-99887766", "plain-value"} {
		if strings.Contains(got.Output, leaked) || slices.ContainsFunc(got.Command, func(a string) bool { return strings.Contains(a, leaked) }) {
			t.Errorf("%q leaked: Output %q, Command %q", leaked, got.Output, got.Command)
		}
	}
	wantOutput := "connecting with [REDACTED]\nAuthorization: Bearer [REDACTED]\nAPI_KEY=[REDACTED]"
	if got.Output != wantOutput {
		t.Errorf("Output = %q, want %q", got.Output, wantOutput)
	}
	wantTail := []string{"--api-key", "[REDACTED]", "--password=[REDACTED]", "[REDACTED]"}
	if tail := got.Command[len(got.Command)-4:]; !slices.Equal(tail, wantTail) {
		t.Errorf("Command ends %q, want %q", tail, wantTail)
	}
	if got.Err != "exit status 1" {
		t.Errorf("Err = %q", got.Err)
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{limit: 8}
	for _, chunk := range []string{"first line\n", "abc", "defghij\nkl", "mnopqrstuvwxyz"} {
		if n, err := b.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", chunk, n, err)
		}
		if len(b.data) > 2*b.limit {
			t.Fatalf("buffer holds %d bytes, limit %d", len(b.data), b.limit)
		}
	}
	if got := b.String(); got != "stuvwxyz" {
		t.Errorf("String() = %q, want %q", got, "stuvwxyz")
	}
	b = &tailBuffer{limit: 8}
	b.Write([]byte("partial secret\nend"))
	if got := b.String(); got != "end" {
		t.Errorf("String() = %q, want the partial first line dropped", got)
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the command did not record its child: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		t.Fatalf("bad pid %q", data)
	}
	return pid
}

// waitGone polls until pid no longer runs. A killed child is reparented to
// init and reaped there; until then it is a zombie, which counts as gone.
func waitGone(pid int, within time.Duration) bool {
	for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
		if processGone(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true
	}
	if runtime.GOOS != "linux" {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// Format: "pid (comm) state …"; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// TestRunDaemonHoldingOutput: a command that exits 0 after starting a daemon
// in a session of its own (setsid) that keeps the output pipe open did what
// a reconnect is for: it succeeded, the daemon was left running, and the
// outcome says so.
func TestRunDaemonHoldingOutput(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Fatalf("setsid is needed: %v", err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	opts := Options{Env: append(os.Environ(), "PIDFILE="+pidFile)}
	// The command exits once the daemon recorded its pid (not after a
	// fixed time a busy machine may not have started it in).
	got := Run(context.Background(), mustSplit(t, `sh -c 'setsid sh -c "echo \$\$ > \"$PIDFILE\"; exec sleep 30" & while [ ! -s "$PIDFILE" ]; do sleep 0.05; done; echo restarted'`), opts)
	pid := readPID(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !got.OK || !got.KeptRunning || got.Err != "" {
		t.Errorf("OK, KeptRunning, Err = %v, %v, %q; want a success that kept a daemon running", got.OK, got.KeptRunning, got.Err)
	}
	if waitGone(pid, 300*time.Millisecond) {
		t.Errorf("the daemon %d was killed", pid)
	}
}
