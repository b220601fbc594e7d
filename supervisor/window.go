package supervisor

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
)

// pastWindow says why a run of b started at started can no longer be
// resumed at now ("" while it can): a run is resumed only inside its own
// window, before its deadline and before the batch's next scheduled
// start after it. A start after that is a new night; resuming the old one
// would skip every pending job at once for its passed deadline.
func pastWindow(b *jobs.Batch, started, now time.Time) string {
	if started.IsZero() {
		return ""
	}
	if b.Deadline != nil {
		if d := plan.DeadlineAfter(started, *b.Deadline); !now.Before(d) {
			return fmt.Sprintf("its deadline %s passed before it finished; a new night begins", d.Local().Format("Jan 2 15:04"))
		}
	}
	if b.Schedule != "" {
		if sched, err := cron.ParseStandard(b.Schedule); err == nil {
			if next := sched.Next(started); !now.Before(next) {
				return fmt.Sprintf("the next scheduled start (%s) came before it finished; a new night begins", next.Local().Format("Jan 2 15:04"))
			}
		}
	}
	return ""
}
