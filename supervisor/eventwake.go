package supervisor

import (
	"os"
	"time"
)

// eventsPoll is how often the night looks whether the events file grew:
// a server exec-server lost (server-lost) is acted on within it, not at
// the next maintenance tick. A stat per look; the file is read only when
// it grew.
const eventsPoll = 250 * time.Millisecond

// watchEvents signals grew (without blocking: one pending signal stands
// for any number of lines) each time the file at path changes size from
// last (fileSize when the caller started looking), looking every
// interval, until stop closes. A file that is replaced or shrinks counts
// as a change: the tail reading it decides what is new.
func watchEvents(path string, last int64, every time.Duration, grew chan<- struct{}, stop <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := fileSize(path)
		if now != last && now > 0 {
			select {
			case grew <- struct{}{}:
			default:
			}
		}
		last = now
	}
}

// fileSize is the size of the file at path, -1 when it cannot be seen.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}
