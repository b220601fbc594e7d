package session

import "github.com/nightwatch-dev/nightwatch/internal/redact"

// Redacted returns o with every prose field (the reason, the result's
// terminal reason, the API's reason, verify's output and error, why a
// server was unusable, why a resume failed, the CLI's denial messages)
// passed through redact.String with everything the process remembered:
// an outcome that leaves the process (a cluster's tables and spool, River's
// rows) carries no secret, as the journal does not. o is not changed.
func (o Outcome) Redacted() Outcome {
	o.Reason = redact.String(o.Reason)
	o.TerminalReason = redact.String(o.TerminalReason)
	o.ResumeFailed = redact.String(o.ResumeFailed)
	if o.API != nil {
		a := *o.API
		a.Reason = redact.String(a.Reason)
		o.API = &a
	}
	if o.Verify != nil {
		v := *o.Verify
		v.Output, v.Err = redact.String(v.Output), redact.String(v.Err)
		o.Verify = &v
	}
	if len(o.Unusable) > 0 {
		us := make([]Unusable, len(o.Unusable))
		for i, u := range o.Unusable {
			us[i] = Unusable{Server: u.Server, Why: redact.String(u.Why)}
		}
		o.Unusable = us
	}
	if len(o.PermissionDenied) > 0 {
		ds := make([]PermissionDenied, len(o.PermissionDenied))
		for i, d := range o.PermissionDenied {
			d.Message, d.DecisionReason = redact.String(d.Message), redact.String(d.DecisionReason)
			ds[i] = d
		}
		o.PermissionDenied = ds
	}
	return o
}
