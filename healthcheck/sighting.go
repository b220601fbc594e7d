package healthcheck

import "time"

// Sighting is one server's state as a night saw it and journaled it (a
// change of state, a stdio server exec-server could not bring back),
// for a view that reads the journal beside the cache. The cache may be
// older than what the night knows: a server lost under a session is in
// the journal at once, while the cache still holds the last healthy
// probe until its TTL runs out.
type Sighting struct {
	At   time.Time
	Down bool
	Code FailureCode
	// Reason is the night's words for a server that is down.
	Reason string
	// By is who saw it (healthcheck.By's words).
	By string
}

// Sighted is the entry a view shows for a server whose cache entry is e
// (nil: not in the cache) and that the night last saw as s: the newer of
// the two, by the transitions of this package. A sighting older than the
// entry's last verdict changes nothing; a newer one that saw the server
// down opens it as a failure would, and one that saw it healthy closes it
// as a working call does.
func (s Settings) Sighted(e *Entry, sg Sighting) *Entry {
	if sg.At.IsZero() || (e != nil && MillisOf(sg.At) <= e.CheckedAt) {
		return e
	}
	var next Entry
	if sg.Down {
		code := sg.Code
		if code == "" {
			code = CodeUnknown
		}
		next = s.MarkUnhealthy(e, sg.At, Failure{Code: code, Reason: sg.Reason})
	} else {
		restored := sg.By
		if restored == "" {
			restored = RestoredByProbe
		}
		next = s.MarkHealthy(e, sg.At, restored)
	}
	return &next
}
