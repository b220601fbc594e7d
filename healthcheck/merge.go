package healthcheck

// Hosts of a cluster each keep their own cache file and learn each other's
// verdicts from the shared health table (cluster/healthsync). Two verdicts
// of one server then meet, and one must win the same way on every host and
// in the table, or hosts would disagree forever (or push the same two
// entries back and forth). This is that rule; it lives here because every
// verdict of nightwatch is decided in this package.

// verdictKey orders entries by when their verdict was reached: CheckedAt
// first (every transition stamps it), then the later of NextRetryAt and
// TrialAt (a backoff or a trial that moved on from the same moment).
func verdictKey(e *Entry) (checked, moved Millis) {
	return e.CheckedAt, max(e.NextRetryAt, e.TrialAt)
}

// Newer reports whether a is a more recent verdict than b, so that a
// should replace b. A nil entry (never seen) is older than any entry.
//
// The more recently checked verdict wins; on the same CheckedAt, the one
// whose backoff or trial reaches later; on an exact tie of both, unhealthy
// wins over healthy (a host that saw the server fail at the same
// millisecond as another saw it work is the one to believe: blocking for
// one backoff costs less than a night of calls to a dead server); then the
// higher FailureCount, then the higher ConsecutiveFailures. Entries equal
// in all of these are the same verdict: neither is newer, so a host never
// rewrites an entry with its own twin.
//
// Hosts' clocks are compared as they are: a host whose clock runs ahead
// wins ties it should not, by its skew at most (Clamp bounds what a
// future timestamp can do).
func Newer(a, b *Entry) bool {
	if a == nil {
		return false
	}
	if b == nil {
		return true
	}
	ac, am := verdictKey(a)
	bc, bm := verdictKey(b)
	if ac != bc {
		return ac > bc
	}
	if am != bm {
		return am > bm
	}
	if (a.Status == StatusUnhealthy) != (b.Status == StatusUnhealthy) {
		return a.Status == StatusUnhealthy
	}
	if a.FailureCount != b.FailureCount {
		return a.FailureCount > b.FailureCount
	}
	return a.ConsecutiveFailures > b.ConsecutiveFailures
}

// Merge is the entry a host keeps when its own (local) meets another
// host's (remote): remote when it is Newer, else local. Neither argument
// is modified; the result is one of them.
func Merge(local, remote *Entry) *Entry {
	if Newer(remote, local) {
		return remote
	}
	return local
}
