package atomicfile

import (
	"io/fs"
	"os"
	"time"
)

// renameBudget bounds how long a rename over a file another process holds
// open is retried (Windows); past it the write fails and the previous file
// stays whole.
const renameBudget = time.Second

// retryRename calls rename until it succeeds, fails with an error that
// retryable does not accept, or budget has been spent sleeping: 1 ms, then
// doubling up to 50 ms between attempts.
func retryRename(rename func() error, retryable func(error) bool, sleep func(time.Duration), budget time.Duration) error {
	wait, spent := time.Millisecond, time.Duration(0)
	for {
		err := rename()
		if err == nil || !retryable(err) || spent >= budget {
			return err
		}
		if wait > budget-spent {
			wait = budget - spent
		}
		sleep(wait)
		spent += wait
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// linkLike reports a file nightwatch must not write through or replace: a
// symlink, or (Windows) a junction or other reparse point, which Go reports
// as irregular.
func linkLike(m fs.FileMode) bool { return m&(os.ModeSymlink|os.ModeIrregular) != 0 }
