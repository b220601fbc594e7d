package session

import (
	"fmt"
	"strconv"

	"github.com/nightwatch-dev/nightwatch/jobs"
)

// A job's own budget (max_turns, max_cost_usd) is enforced twice: Claude
// Code is given it (--max-turns, --max-budget-usd; both supported CLIs
// stop there by themselves with error_max_turns / error_max_budget_usd,
// a result and its cost), and nightwatch counts the model's turns in the
// stream as they come and stops a session that goes past max_turns
// anyway (an agent command that ignores the flag), through the session's
// one stop path. The stream carries no cost before the result, so the cost
// during a session is Claude Code's to count; nightwatch reads its stop.

// BudgetLimit names the limit a session went over: the batch file's field.
type BudgetLimit string

const (
	LimitTurns BudgetLimit = "max_turns"
	LimitCost  BudgetLimit = "max_cost_usd"
)

// BudgetStop says that the job's own budget ended the session.
type BudgetStop struct {
	Limit BudgetLimit `json:"limit"`
	Max   float64     `json:"max"`
	Spent float64     `json:"spent"`
	// ByCLI: Claude Code stopped itself at the limit it was given; else
	// nightwatch stopped the session (KilledBudget).
	ByCLI bool `json:"by_cli,omitempty"`
}

// Error makes a BudgetStop the cause a session is stopped with.
func (b *BudgetStop) Error() string { return b.Reason() }

// Reason words the stop for the journal and the report.
func (b *BudgetStop) Reason() string {
	switch b.Limit {
	case LimitTurns:
		return fmt.Sprintf("budget exceeded: max_turns %d reached (%d turns)", int(b.Max), int(b.Spent))
	default:
		return fmt.Sprintf("budget exceeded: max_cost_usd $%.2f reached ($%.4f spent)", b.Max, b.Spent)
	}
}

// budgetArgs are the CLI flags that give Claude Code the job's budget.
func budgetArgs(job *jobs.Job) []string {
	var args []string
	if job.MaxTurns > 0 {
		args = append(args, "--max-turns", fmt.Sprint(job.MaxTurns))
	}
	if job.MaxCostUSD > 0 {
		args = append(args, "--max-budget-usd", strconv.FormatFloat(job.MaxCostUSD, 'f', -1, 64))
	}
	return args
}

// turnsOver is the stop of a session that has begun turn turns although
// the job allows max_turns: nil while it is within its budget.
func turnsOver(job *jobs.Job, turns int) *BudgetStop {
	if job == nil || job.MaxTurns <= 0 || turns <= job.MaxTurns {
		return nil
	}
	return &BudgetStop{Limit: LimitTurns, Max: float64(job.MaxTurns), Spent: float64(turns)}
}

// budgetOfResult reads Claude Code's own stop at the budget it was given
// from its result event: error_max_turns (terminal_reason max_turns) for
// a job with max_turns, error_max_budget_usd for one with max_cost_usd.
// A max-turns stop of a job without max_turns (the batch's agent.args)
// is not the job's budget: nil.
func budgetOfResult(job *jobs.Job, r *ResultEvent) *BudgetStop {
	if job == nil || r == nil {
		return nil
	}
	switch {
	case job.MaxTurns > 0 && (r.Subtype == "error_max_turns" || r.TerminalReason == "max_turns"):
		return &BudgetStop{Limit: LimitTurns, Max: float64(job.MaxTurns), Spent: float64(r.NumTurns), ByCLI: true}
	case job.MaxCostUSD > 0 && r.Subtype == "error_max_budget_usd":
		return &BudgetStop{Limit: LimitCost, Max: job.MaxCostUSD, Spent: r.TotalCostUSD, ByCLI: true}
	}
	return nil
}
