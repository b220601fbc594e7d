package session

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

func TestBudgetRules(t *testing.T) {
	turns3 := &jobs.Job{MaxTurns: 3}
	cost := &jobs.Job{MaxCostUSD: 0.5}
	none := &jobs.Job{}
	for _, tc := range []struct {
		name  string
		job   *jobs.Job
		turns int
		r     *ResultEvent
		want  *BudgetStop
		args  []string
	}{
		{name: "no budget: no flags, no stop", job: none, turns: 99,
			r: &ResultEvent{Subtype: "error_max_turns", TerminalReason: "max_turns", NumTurns: 40}},
		{name: "within max_turns", job: turns3, turns: 3, args: []string{"--max-turns", "3"}},
		{name: "past max_turns in the stream", job: turns3, turns: 4, args: []string{"--max-turns", "3"},
			want: &BudgetStop{Limit: LimitTurns, Max: 3, Spent: 4}},
		{name: "the CLI stopped at max_turns", job: turns3, turns: 3, args: []string{"--max-turns", "3"},
			r:    &ResultEvent{Subtype: "error_max_turns", TerminalReason: "max_turns", NumTurns: 3},
			want: &BudgetStop{Limit: LimitTurns, Max: 3, Spent: 3, ByCLI: true}},
		{name: "the CLI stopped at max_cost_usd", job: cost, args: []string{"--max-budget-usd", "0.5"},
			r:    &ResultEvent{Subtype: "error_max_budget_usd", TotalCostUSD: 0.61},
			want: &BudgetStop{Limit: LimitCost, Max: 0.5, Spent: 0.61, ByCLI: true}},
		{name: "a max-turns stop of a job with only a cost budget is not its budget", job: cost,
			args: []string{"--max-budget-usd", "0.5"}, r: &ResultEvent{Subtype: "error_max_turns", NumTurns: 40}},
		{name: "a small amount is written as a decimal", job: &jobs.Job{MaxCostUSD: 0.000001}, args: []string{"--max-budget-usd", "0.000001"}},
		{name: "a success is no stop", job: turns3, args: []string{"--max-turns", "3"},
			r: &ResultEvent{Subtype: "success", NumTurns: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := budgetArgs(tc.job); !slices.Equal(got, tc.args) {
				t.Errorf("budgetArgs = %q, want %q", got, tc.args)
			}
			got := turnsOver(tc.job, tc.turns)
			if tc.r != nil {
				got = budgetOfResult(tc.job, tc.r)
			}
			switch {
			case (got == nil) != (tc.want == nil):
				t.Fatalf("stop = %+v, want %+v", got, tc.want)
			case got != nil && *got != *tc.want:
				t.Errorf("stop = %+v, want %+v", *got, *tc.want)
			case got != nil && !strings.HasPrefix(got.Reason(), "budget exceeded: "+string(got.Limit)):
				t.Errorf("reason %q", got.Reason())
			}
		})
	}
}

// TestBudgetTurnsCountedInStream: the turns are the session's own
// assistant messages, one per message id however many lines it spans; a
// subagent's messages are not the session's turns.
func TestBudgetTurnsCountedInStream(t *testing.T) {
	lines := []string{
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"a"}]},"parent_tool_use_id":null}`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Glob"}]},"parent_tool_use_id":null}`,
		`{"type":"assistant","message":{"id":"s1","content":[]},"parent_tool_use_id":"t1"}`,
		`{"type":"assistant","message":{"id":"m2","content":[]}}`,
	}
	var stopped error
	st := &streamState{obs: ObserverFunc(func(Observation) {}), job: &jobs.Job{MaxTurns: 1},
		stop: func(cause error) { stopped = cause }}
	for i, l := range lines {
		st.line([]byte(l))
		if i < 3 && stopped != nil {
			t.Fatalf("stopped after line %d (%d turns): %v", i+1, st.turns, stopped)
		}
	}
	if st.turns != 2 || stopped == nil || st.overBudget == nil || st.overBudget.Spent != 2 {
		t.Fatalf("turns %d, stopped %v, over %+v", st.turns, stopped, st.overBudget)
	}
}

// TestBudgetStopsAgentThatIgnoresIt: an agent that goes on past the
// max_turns it was given is stopped by the night through the session's
// stop path (KilledBudget), and its process group ends.
func TestBudgetStopsAgentThatIgnoresIt(t *testing.T) {
	script := `echo $$ >> "$PIDS"
case "$*" in *"--max-turns 2"*) ;; *) echo "no --max-turns 2 in: $*" >&2; exit 3;; esac
` + sessionTestInit + `for i in 1 2 3 4 5; do
  echo '{"type":"assistant","message":{"id":"msg_'$i'","content":[{"type":"text","text":"x"}]},"parent_tool_use_id":null}'
  sleep 0.2
done
sleep 60
`
	spec, pids := sessionTestFakeSpec(t, script, time.Minute, time.Minute)
	spec.Job.MaxTurns = 2
	out, _, _ := sessionTestRun(t, context.Background(), spec)
	if out.KilledBy != KilledBudget || out.Budget == nil || out.Budget.Limit != LimitTurns || out.Budget.ByCLI || out.Status != Failed {
		t.Fatalf("outcome: killed by %q, budget %+v, %s %q", out.KilledBy, out.Budget, out.Status, out.Reason)
	}
	if out.Budget.Spent != 3 || !strings.Contains(out.Reason, "budget exceeded: max_turns 2") {
		t.Errorf("budget %+v, reason %q", out.Budget, out.Reason)
	}
	if !sessionTestGone(t, pids) {
		t.Error("the agent outlived its stop")
	}
}

// TestBudgetRealClaude: on every supported CLI, a job's max_turns and
// max_cost_usd reach Claude Code, which stops itself there; the attempt
// ends as a budget stop, not as an API failure.
func TestBudgetRealClaude(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		api := fakeapi.Start(t)
		for _, tc := range []struct {
			name  string
			set   func(*jobs.Job)
			limit BudgetLimit
		}{
			{"max_turns", func(j *jobs.Job) { j.MaxTurns = 1 }, LimitTurns},
			{"max_cost_usd", func(j *jobs.Job) { j.MaxCostUSD = 0.000001 }, LimitCost},
		} {
			t.Run(tc.name, func(t *testing.T) {
				b := sessionTestBatch(t)
				b.Agent.Command = testkit.ClaudeBinOf(t, version)
				job := sessionTestJob("budget", "SESSION budget-"+tc.name+"-"+version+
					"\nCALL Glob {\"pattern\":\"*.none\"}\nCALL Glob {\"pattern\":\"*.none\"}\nCALL Glob {\"pattern\":\"*.none\"}")
				job.Cwd = t.TempDir()
				tc.set(job)
				spec := sessionTestSpec(b, job, sessionTestClaudeEnv(t, api)...)
				spec.Binary = testkit.BuildNightwatch(t)
				out, _, _ := sessionTestRun(t, context.Background(), spec)
				if out.Budget == nil || out.Budget.Limit != tc.limit || !out.Budget.ByCLI || out.Status != Failed || out.API != nil {
					t.Fatalf("outcome: %s %q budget %+v api %+v subtype %q", out.Status, out.Reason, out.Budget, out.API, out.Subtype)
				}
				if got := len(api.SessionToolResults("budget-" + tc.name + "-" + version)); got >= 3 {
					t.Errorf("the session made all %d calls: the budget did not stop it", got)
				}
			})
		}
	})
}
