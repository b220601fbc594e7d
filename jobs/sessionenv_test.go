package jobs

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const sessionEnvServers = `version: 1
name: envs
env:
  GH_TOKEN: gh-secret-1
  NOTES_KEY: notes-secret-2
  WEB_TOKEN: web-secret-3
  NOTES_DB: /var/notes.db
  RESTART_TOKEN: restart-secret-4
servers:
  notes:
    command: npx
    args: ["notes-mcp", "--db", "${NOTES_DB}"]
    env: {NOTES_KEY: "${NOTES_KEY}", GITHUB_TOKEN: "${GH_TOKEN}"}
    requires_env: [REGION]
    reconnect: "restart --token ${RESTART_TOKEN}"
  web:
    type: http
    url: "https://web.example/mcp"
    headers: {Authorization: "Bearer ${WEB_TOKEN:-none}"}
`

// TestServerVarsAndSessionEnv: the variables each server's definition
// references, and session_env read and checked against them.
func TestServerVarsAndSessionEnv(t *testing.T) {
	tests := []struct {
		name string
		// top is added before servers:, jobs after them.
		top, jobs string
		wantJobs  map[string][]string
		wantErrs  []string // each a substring of one problem, with its line and field
	}{
		{name: "no session_env", jobs: "  - {name: a, prompt: hi}\n",
			wantJobs: map[string][]string{"a": nil}},
		{name: "batch-wide, a job replaces it", top: "session_env: [GH_TOKEN]\n",
			jobs:     "  - {name: a, prompt: hi}\n  - {name: b, prompt: hi, session_env: [NOTES_KEY, WEB_TOKEN]}\n  - {name: c, prompt: hi, session_env: []}\n",
			wantJobs: map[string][]string{"a": {"GH_TOKEN"}, "b": {"NOTES_KEY", "WEB_TOKEN"}, "c": {}}},
		{name: "a required variable is a server's", jobs: "  - {name: a, prompt: hi, session_env: [REGION]}\n",
			wantJobs: map[string][]string{"a": {"REGION"}}},
		{name: "a typo is named with its line and a guess", jobs: "  - {name: a, prompt: hi, session_env: [GH_TOKNE]}\n",
			wantErrs: []string{`:21: jobs[0].session_env[0]: GH_TOKNE is not a variable any server uses (did you mean "GH_TOKEN"?) (servers use: GH_TOKEN, NOTES_DB, NOTES_KEY, REGION, WEB_TOKEN)`}},
		{name: "the reconnect command's variable is not a server's", top: "session_env:\n  - RESTART_TOKEN\n",
			jobs:     "  - {name: a, prompt: hi}\n",
			wantErrs: []string{`:10: session_env[0]: RESTART_TOKEN is not a variable any server uses`}},
		{name: "not a name, twice, not a list", top: "session_env: [\"A-B\", GH_TOKEN, GH_TOKEN]\n",
			jobs: "  - {name: a, prompt: hi, session_env: GH_TOKEN}\n",
			wantErrs: []string{`:9: session_env[0]: "A-B" is not a variable name`, `:9: session_env[2]: GH_TOKEN is listed twice`,
				`:22: jobs[0].session_env: must be a list`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := newSandbox(t)
			sb.env["REGION"] = "eu-west"
			yaml := strings.Replace(sessionEnvServers, "servers:\n", tt.top+"servers:\n", 1) + "jobs:\n" + tt.jobs
			path := writeFile(t, sb.dir, "b.yaml", yaml)
			b, err := Load(path, environ(sb.env))
			if len(tt.wantErrs) > 0 {
				var le *LoadError
				if !errors.As(err, &le) {
					t.Fatalf("err = %v, want a *LoadError", err)
				}
				for _, want := range tt.wantErrs {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error lacks %q:\n%v", want, err)
					}
				}
				if len(le.Problems) != len(tt.wantErrs) {
					t.Errorf("%d problems, want %d:\n%v", len(le.Problems), len(tt.wantErrs), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			vars := map[string][]string{}
			for _, s := range b.Servers {
				vars[s.Name] = s.Vars
			}
			if want := []string{"GH_TOKEN", "NOTES_DB", "NOTES_KEY", "REGION"}; !slices.Equal(vars["notes"], want) {
				t.Errorf("notes.Vars = %v, want %v", vars["notes"], want)
			}
			if want := []string{"WEB_TOKEN"}; !slices.Equal(vars["web"], want) {
				t.Errorf("web.Vars = %v, want %v", vars["web"], want)
			}
			for _, j := range b.Jobs {
				if want := tt.wantJobs[j.Name]; !slices.Equal(j.SessionEnv, want) {
					t.Errorf("job %s: SessionEnv = %#v, want %#v", j.Name, j.SessionEnv, want)
				}
			}
		})
	}
}
