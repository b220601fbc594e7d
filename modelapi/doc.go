// Package modelapi is the model's API as the night sees it: the failure
// classes read from a session's stream (Classify), the cheap check that
// the API answers again (Check), and the pauses and waits as pure rules
// (RuleFor, Waits, Wait, Trial). It decides no job's fate: what a failure
// does to a job and to the night is the supervisor's plan's.
//
//	failure.go  the failure classes and the classifier, ParseResetTime
//	check.go    the cheap check of the API (Check, Base)
//	rules.go    one rule per class (RuleFor) and the night's waits (Waits)
//	wait.go     a wait's length and the check's backoff and cap (Wait), the
//	            breaker's half-open trial (Trial)
package modelapi
