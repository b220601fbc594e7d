package proc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

// TestRunHelperProcess is the child of TestRun: the test binary run again
// with NIGHTWATCH_PROC_HELPER saying what to do, so the test runs the same
// on every platform (Wine included). Run as a test, it does nothing.
func TestRunHelperProcess(t *testing.T) {
	switch os.Getenv("NIGHTWATCH_PROC_HELPER") {
	case "":
		return
	case "echo":
		fmt.Print("out:" + os.Getenv("NIGHTWATCH_PROC_VALUE"))
		fmt.Fprint(os.Stderr, "err-line")
		os.Exit(0)
	case "stdin":
		b := make([]byte, 64)
		n, _ := os.Stdin.Read(b)
		fmt.Print(strings.ToUpper(string(b[:n])))
		os.Exit(0)
	case "fail":
		fmt.Fprint(os.Stderr, "first\n\nsecond\nthird\nfourth\n")
		os.Exit(3)
	case "hang":
		time.Sleep(10 * time.Minute)
		os.Exit(0)
	}
	os.Exit(99)
}

func helper(mode string) []string {
	return append(os.Environ(), "NIGHTWATCH_PROC_HELPER="+mode, "NIGHTWATCH_PROC_VALUE=v1")
}

func TestRun(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, mode string
		stdin      string
		timeout    time.Duration
		wantOut    string
		wantCode   int
		wantErr    string // "" for none
		timedOut   bool
	}{
		{name: "exit 0, output kept apart", mode: "echo", wantOut: "out:v1", wantCode: 0},
		{name: "stdin reaches the child", mode: "stdin", stdin: "abc", wantOut: "ABC", wantCode: 0},
		{name: "non-zero exit names the program, how and stderr's last lines", mode: "fail", wantCode: 3,
			wantErr: "exit status 3: second | third | fourth"},
		{name: "timeout kills it and says so", mode: "hang", timeout: 300 * time.Millisecond,
			wantErr: "no answer within 300ms", timedOut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := proc.Spec{Argv: []string{self, "-test.run=^TestRunHelperProcess$"}, Env: helper(tt.mode), Timeout: tt.timeout}
			if tt.stdin != "" {
				spec.Stdin = strings.NewReader(tt.stdin)
			}
			res, err := proc.Run(context.Background(), spec)
			if got := string(res.Stdout); got != tt.wantOut {
				t.Errorf("stdout %q, want %q", got, tt.wantOut)
			}
			// A killed child's code is the platform's (-1 on Unix, the
			// Job Object's 1 on Windows): only an exit's code is checked.
			if !tt.timedOut && res.ExitCode != tt.wantCode {
				t.Errorf("exit code %d, want %d", res.ExitCode, tt.wantCode)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("err %v", err)
				}
				if tt.mode == "echo" && string(res.Stderr) != "err-line" {
					t.Errorf("stderr %q", res.Stderr)
				}
				return
			}
			var re *proc.RunError
			if !errors.As(err, &re) {
				t.Fatalf("err %v (%T), want a *proc.RunError", err, err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), self) {
				t.Errorf("err %q, want %q after the program", err, tt.wantErr)
			}
			if re.TimedOut != tt.timedOut {
				t.Errorf("TimedOut %v, want %v", re.TimedOut, tt.timedOut)
			}
			var exit *exec.ExitError
			if !tt.timedOut && !errors.As(err, &exit) {
				t.Errorf("err %v does not unwrap to the exit error", err)
			}
		})
	}
}

func TestRunRefusesNothingToRun(t *testing.T) {
	if _, err := proc.Run(context.Background(), proc.Spec{}); err == nil {
		t.Fatal("an empty argv ran")
	}
	_, err := proc.Run(context.Background(), proc.Spec{Argv: []string{"nightwatch-no-such-program-here"}})
	if err == nil || !strings.Contains(err.Error(), "cannot start nightwatch-no-such-program-here") {
		t.Fatalf("err %v, want one that names the program it could not start", err)
	}
}
