package jobs

import "github.com/nightwatch-dev/nightwatch/healthcheck"

// Settings are the health check's numbers for this batch: its health
// section over healthcheck.DefaultSettings. This is the one mapping from a
// batch to the state machine: the night, preflight, the hooks of its
// sessions (their flags), doctor and the operator commands all take it, so
// none of them runs with a threshold or a backoff the batch did not ask for.
func (h Health) Settings() healthcheck.Settings {
	s := healthcheck.DefaultSettings()
	if h.TTL > 0 {
		s.TTL = h.TTL
	}
	if h.Backoff > 0 {
		s.Backoff = h.Backoff
	}
	if h.MaxBackoff > 0 {
		s.MaxBackoff = h.MaxBackoff
	}
	if h.FailureThreshold > 0 {
		s.FailureThreshold = h.FailureThreshold
	}
	return s
}
