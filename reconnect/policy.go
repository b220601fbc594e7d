package reconnect

import "github.com/nightwatch-dev/nightwatch/healthcheck"

// The failure vocabulary and the reconnect policy live in healthcheck
// (failure.go), beside the verdicts that use them. These aliases keep the
// supervisor compiling until it calls healthcheck directly; they are the
// same types, not copies, so no cast converts anything.
//
// Deprecated: use healthcheck.FailureCode, healthcheck.Action,
// healthcheck.DefaultPolicy.
type (
	Failure = healthcheck.FailureCode
	Action  = healthcheck.Action
	Policy  = healthcheck.Policy
)

// DefaultPolicy is healthcheck.DefaultPolicy.
//
// Deprecated: use healthcheck.DefaultPolicy.
func DefaultPolicy(f Failure, haveCommand bool) Action {
	return healthcheck.DefaultPolicy(f, haveCommand)
}
