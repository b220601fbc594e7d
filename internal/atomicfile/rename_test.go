package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"testing"
	"time"
)

var errBusy = errors.New("sharing violation")

func TestRetryRename(t *testing.T) {
	busy := func(err error) bool { return errors.Is(err, errBusy) }
	for _, tc := range []struct {
		name     string
		failures int   // the first n attempts fail with errBusy
		other    error // then this, if set
		wantErr  error
		wantMax  time.Duration // at most this much slept
		attempts int
	}{
		{name: "at once", failures: 0, attempts: 1},
		{name: "a reader closes", failures: 3, attempts: 4, wantMax: 7 * time.Millisecond},
		{name: "held past the budget", failures: 1000, wantErr: errBusy, wantMax: time.Second},
		{name: "another error is not retried", other: fs.ErrPermission, wantErr: fs.ErrPermission, attempts: 1},
	} {
		n := 0
		var slept time.Duration
		err := retryRename(func() error {
			n++
			switch {
			case n <= tc.failures:
				return errBusy
			case tc.other != nil:
				return tc.other
			}
			return nil
		}, busy, func(d time.Duration) { slept += d }, time.Second)
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.wantErr)
		}
		if tc.attempts != 0 && n != tc.attempts {
			t.Errorf("%s: %d attempts, want %d", tc.name, n, tc.attempts)
		}
		if slept > tc.wantMax {
			t.Errorf("%s: slept %v, more than %v", tc.name, slept, tc.wantMax)
		}
		if tc.wantErr == errBusy && slept != time.Second {
			t.Errorf("%s: gave up after %v, not the whole budget", tc.name, slept)
		}
	}
}

func TestLinkLike(t *testing.T) {
	for m, want := range map[fs.FileMode]bool{
		0o600: false, os.ModeDir | 0o700: false, os.ModeSymlink | 0o777: true,
		os.ModeIrregular: true, // a junction or another reparse point on Windows
	} {
		if linkLike(m) != want {
			t.Errorf("linkLike(%v) = %v", m, !want)
		}
	}
}
