package session

import (
	"slices"
	"strings"
	"testing"
)

// The session's CLI gives up on a failing API after the batch's
// api_retries, unless the environment says otherwise; a resumed attempt
// passes --resume and the short continue prompt.
func TestCommandAPIRetriesAndResume(t *testing.T) {
	b := sessionTestBatch(t)
	b.APIRetries = 2
	job := sessionTestJob("j", "SESSION s")
	spec := sessionTestSpec(b, job, "PATH=/bin")
	f := Files{Settings: "/s", MCPConfig: "/m"}
	if env := Command(t.Context(), spec, f).Env; !slices.Contains(env, "CLAUDE_CODE_MAX_RETRIES=2") {
		t.Errorf("env %q lacks CLAUDE_CODE_MAX_RETRIES=2", env)
	}
	spec.Env = []string{"PATH=/bin", "CLAUDE_CODE_MAX_RETRIES=7"}
	if env := Command(t.Context(), spec, f).Env; !slices.Contains(env, "CLAUDE_CODE_MAX_RETRIES=7") || slices.Contains(env, "CLAUDE_CODE_MAX_RETRIES=2") {
		t.Errorf("env %q: the environment's own value must win", env)
	}
	spec.Resume, spec.ResumeWhy = "abc-123", "it reached its time limit"
	args := Command(t.Context(), spec, f).Args
	i := slices.Index(args, "--resume")
	if i < 0 || i+1 >= len(args) || args[i+1] != "abc-123" {
		t.Fatalf("args %q lack --resume abc-123", args)
	}
	if p := args[2]; !strings.Contains(p, "it reached its time limit") || !strings.Contains(p, "Continue") || strings.Contains(p, "SESSION s") {
		t.Errorf("resume prompt %q", p)
	}
}
