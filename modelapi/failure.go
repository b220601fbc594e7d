package modelapi

// The agent failure classifier: why a `claude -p` session failed when the
// cause was the model's API or the CLI's limits rather than the job itself.
// It reads the session's result event and the stream's rate_limit_event
// lines; structured fields decide first (the event's rate_limit_info,
// api_error_status, terminal_reason, subtype), and texts only where nothing
// structured tells (2.1.197 reports a refused connection with
// terminal_reason "completed" and no status).
//
// Measured on Claude Code 2.1.197 and 2.1.332 against the fake Messages API
// (testdata/claude-api-failures, recorded by internal/testkit's
// TestAPIFailures): every failure below exits 1 with is_error true and,
// except max turns, subtype "success".

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Class names a kind of agent failure the night handles by its own
// rule.
type Class string

const (
	// NoFailure: the session succeeded, or failed on its own (the job's
	// failure, not the API's).
	NoFailure Class = ""
	// UsageLimit: a subscriber's plan limit (5-hour, weekly, …); ResetAt
	// says when it lifts, when known.
	UsageLimit Class = "usage-limit"
	// RateLimit: an API key's account rate limit (429 without a plan limit).
	RateLimit Class = "rate-limit"
	// Unavailable: the API could not be reached or answered 5xx/529.
	Unavailable Class = "api-unavailable"
	// InvalidCredentials: the agent's login was refused (401/403, no login,
	// an expired token, no credit).
	InvalidCredentials Class = "invalid-credentials"
	// MaxTurns: the session hit --max-turns.
	MaxTurns Class = "max-turns"
	// ContextTooLong: the conversation no longer fits the model's context.
	ContextTooLong Class = "context-too-long"
)

// Failure is the classifier's verdict.
type Failure struct {
	Class  Class  `json:"class"`
	Reason string `json:"reason,omitempty"` // one line for the journal and the report; "" with NoFailure
	// ResetAt is when a usage limit lifts (UsageLimit only; zero when
	// neither the event nor the text gave a time).
	ResetAt time.Time `json:"reset_at,omitzero"`
}

// Classify classifies a finished session from its result event
// (the parsed "type":"result" line; nil if the session printed none, which
// is a kill, not an API failure) and its stream events (every parsed line,
// or only the rate_limit_event ones). now and loc (the machine's zone; nil =
// time.Local) anchor a reset time read from a text that gives no date or no
// zone.
func Classify(result map[string]any, stream []map[string]any, now time.Time, loc *time.Location) Failure {
	if result == nil {
		return Failure{}
	}
	if loc == nil {
		loc = time.Local
	}
	subtype := str(result["subtype"])
	terminal := str(result["terminal_reason"])
	text := strings.TrimSpace(str(result["result"]))
	isError, _ := result["is_error"].(bool)
	status, hasStatus := number(result["api_error_status"])
	errType := str(result["api_error_type"])

	if subtype == "error_max_turns" || terminal == "max_turns" {
		return Failure{Class: MaxTurns, Reason: first(errorsText(result), "the session reached its maximum number of turns")}
	}
	if terminal == "prompt_too_long" {
		return Failure{Class: ContextTooLong, Reason: oneLine(first(text, "the prompt is too long for the model's context"))}
	}
	if !isError {
		return Failure{}
	}
	// A rejected rate_limit_event is a subscriber's plan limit, with its
	// reset time (both versions stream it before the result).
	if ev, ok := rejectedRateLimit(stream); ok {
		f := Failure{Class: UsageLimit, Reason: oneLine(first(usageText(text), "usage limit reached"))}
		if sec, ok := number(ev["resetsAt"]); ok && sec > 0 && sec < float64(now.Add(MaxResetAhead).Unix()+1) {
			f.ResetAt = time.Unix(int64(sec), 0)
		} else if t, ok := ParseResetTime(text, now, loc); ok {
			f.ResetAt = t
		}
		if kind := str(ev["rateLimitType"]); kind != "" && f.Reason == "usage limit reached" {
			f.Reason = "usage limit reached (" + kind + ")"
		}
		return f
	}
	if !hasStatus && strings.HasPrefix(text, "API Error") {
		// 2.1.197 gives up on repeated 529s without api_error_status; its
		// system/api_retry events carry the status it retried on.
		status, hasStatus = lastRetryStatus(stream)
	}
	if hasStatus {
		switch s := int(status); {
		case s == 401 || s == 403:
			return Failure{Class: InvalidCredentials, Reason: fmt.Sprintf("the API refused the agent's login (%d): %s", s, oneLine(text))}
		case s == 429:
			if strings.HasPrefix(text, "You've hit your") || strings.HasPrefix(text, "You've reached your") {
				return usageLimitFromText(text, now, loc)
			}
			return Failure{Class: RateLimit, Reason: "rate limited (429): " + oneLine(text)}
		case s == 529 || s >= 500 || s == 408 || errType == "overloaded_error":
			return Failure{Class: Unavailable, Reason: fmt.Sprintf("the API is unavailable (%d): %s", s, oneLine(text))}
		case s == 400 && isPromptTooLong(text):
			return Failure{Class: ContextTooLong, Reason: oneLine(text)}
		}
		return Failure{}
	}
	// Nothing structured: the texts the CLI prints for what has no status.
	switch {
	case strings.HasPrefix(text, "You've hit your") || strings.HasPrefix(text, "You've reached your"):
		return usageLimitFromText(text, now, loc)
	case isCredentialsText(text):
		return Failure{Class: InvalidCredentials, Reason: "the agent's login is not usable: " + oneLine(text)}
	case isPromptTooLong(text):
		return Failure{Class: ContextTooLong, Reason: oneLine(text)}
	case isConnectionText(text):
		return Failure{Class: Unavailable, Reason: "the API could not be reached: " + oneLine(text)}
	case terminal == "api_error":
		// 2.1.332 names the API as the cause even when it gives no status.
		return Failure{Class: Unavailable, Reason: "API error: " + oneLine(text)}
	}
	return Failure{}
}

func usageLimitFromText(text string, now time.Time, loc *time.Location) Failure {
	f := Failure{Class: UsageLimit, Reason: oneLine(text)}
	if t, ok := ParseResetTime(text, now, loc); ok {
		f.ResetAt = t
	}
	return f
}

// usageText is text if it is the CLI's usage-limit line.
func usageText(text string) string {
	if strings.Contains(text, "limit") {
		return text
	}
	return ""
}

// rejectedRateLimit returns the rate_limit_info of the last
// rate_limit_event whose status is "rejected".
func rejectedRateLimit(stream []map[string]any) (map[string]any, bool) {
	var found map[string]any
	for _, ev := range stream {
		if str(ev["type"]) != "rate_limit_event" {
			continue
		}
		info, _ := ev["rate_limit_info"].(map[string]any)
		if str(info["status"]) == "rejected" {
			found = info
		}
	}
	return found, found != nil
}

// lastRetryStatus is the error_status of the stream's last
// system/api_retry event.
func lastRetryStatus(stream []map[string]any) (float64, bool) {
	var st float64
	found := false
	for _, ev := range stream {
		if str(ev["type"]) == "system" && str(ev["subtype"]) == "api_retry" {
			if n, ok := number(ev["error_status"]); ok && n > 0 {
				st, found = n, true
			}
		}
	}
	return st, found
}

// credentialTexts are the CLI's lines for a login it cannot use.
var credentialTexts = []string{
	"Invalid API key",
	"Invalid auth token",
	"Not logged in",
	"Please run /login",
	"Authentication required",
	"OAuth token has expired",
	"OAuth token revoked",
	"Credit balance is too low",
	"credit balance too low",
}

func isCredentialsText(text string) bool {
	for _, t := range credentialTexts {
		if strings.Contains(text, t) {
			return true
		}
	}
	return false
}

func isPromptTooLong(text string) bool {
	l := strings.ToLower(text)
	return strings.HasPrefix(l, "prompt is too long") || strings.Contains(l, "api error: 400") && strings.Contains(l, "prompt is too long")
}

// connectionMarks are in the CLI's texts for an API it could not reach
// (2.1.197: "API Error: Unable to connect to API (ConnectionRefused)";
// 2.1.332: "API Error: Connection refused — … (ECONNREFUSED)").
var connectionMarks = []string{
	"Unable to connect to API", "Connection refused", "ECONNREFUSED", "ConnectionRefused",
	"ECONNRESET", "ETIMEDOUT", "ENOTFOUND", "EAI_AGAIN", "Request timed out", "socket hang up",
	"The socket connection was closed", "Connection error", "fetch failed", "Overloaded",
}

func isConnectionText(text string) bool {
	if !strings.HasPrefix(text, "API Error") {
		return false
	}
	for _, m := range connectionMarks {
		if strings.Contains(text, m) {
			return true
		}
	}
	return false
}

// resetRE finds the CLI's "resets <when> (<zone>)" (the zone is optional):
// "resets 8:21am (UTC)", "resets 10am (Europe/Berlin)", "resets Dec 3,
// 1:55pm (UTC)", "resets Jan 5, 2027, 9am (UTC)", "resets Dec 3 (UTC)".
var resetRE = regexp.MustCompile(`resets\s+` +
	`(?:([A-Z][a-z]{2})\s+(\d{1,2})(?:,\s*(\d{4}))?(?:,\s*|\s+|$))?` +
	`(?:(\d{1,2})(?::(\d{2}))?\s*([ap]m))?` +
	`\s*(?:\(([^()\s]+)\))?`)

var months = map[string]time.Month{"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6,
	"Jul": 7, "Aug": 8, "Sep": 9, "Oct": 10, "Nov": 11, "Dec": 12}

// ParseResetTime reads the reset time of a usage-limit text ("You've hit
// your 5-hour limit · resets 8:21am (UTC)", "… · resets Dec 3, 1:55pm
// (UTC)"): in the zone the text names (an IANA name such as UTC or
// Europe/Berlin; loc when it names none or one this machine does not know),
// the next such time after now (a time of day is today or tomorrow; a date
// without a year is this year or the next). ok is false when the text
// holds no reset time.
func ParseResetTime(text string, now time.Time, loc *time.Location) (time.Time, bool) {
	if loc == nil {
		loc = time.Local
	}
	m := resetRE.FindStringSubmatch(text)
	if m == nil {
		return time.Time{}, false
	}
	monName, dayS, yearS, hourS, minS, ampm, zone := m[1], m[2], m[3], m[4], m[5], m[6], m[7]
	if monName == "" && hourS == "" {
		return time.Time{}, false
	}
	if zone != "" {
		if z, err := time.LoadLocation(zone); err == nil {
			loc = z
		}
	}
	hour, minute := 0, 0
	if hourS != "" {
		hour = atoi(hourS)
		if hour < 1 || hour > 12 {
			return time.Time{}, false
		}
		hour %= 12
		if ampm == "pm" {
			hour += 12
		}
		if minS != "" {
			minute = atoi(minS)
			if minute > 59 {
				return time.Time{}, false
			}
		}
	}
	local := now.In(loc)
	if monName != "" {
		mon, ok := months[monName]
		day := atoi(dayS)
		if !ok || day < 1 || day > 31 {
			return time.Time{}, false
		}
		year := local.Year()
		if yearS != "" {
			year = atoi(yearS)
			// The CLI names a reset days or weeks ahead: a year beyond
			// the next one, or before the last, is not a reset time
			// ("Jan 1,0000"), and the night waits its default instead.
			if year < local.Year()-1 || year > local.Year()+1 {
				return time.Time{}, false
			}
		}
		t := time.Date(year, mon, day, hour, minute, 0, 0, loc)
		if t.Day() != day { // Feb 30 and the like
			return time.Time{}, false
		}
		if yearS == "" && !t.After(now) && now.Sub(t) > JustPassed {
			t = time.Date(year+1, mon, day, hour, minute, 0, 0, loc)
		}
		if t.After(now.Add(MaxResetAhead)) {
			return time.Time{}, false
		}
		return t, true
	}
	t := time.Date(local.Year(), local.Month(), local.Day(), hour, minute, 0, 0, loc)
	if !t.After(now) && now.Sub(t) > JustPassed {
		t = time.Date(local.Year(), local.Month(), local.Day()+1, hour, minute, 0, 0, loc)
	}
	return t, true
}

// MaxResetAhead bounds a reset time: the CLI's limits lift within a week
// (5-hour and weekly windows), so a reset further ahead (a broken clock, a
// gateway's "9999999999") is no reset time, and the night waits its default
// instead of holding the batch's lock for years.
const MaxResetAhead = 8 * 24 * time.Hour

// JustPassed is how far in the past a reset time may be and still be the
// one the text meant: "resets 12:39am" printed at 1:39am (the CLI rounds,
// clocks differ) lifted an hour ago, not tomorrow. A 5-hour window never
// names a time-of-day 23 hours ahead.
const JustPassed = 6 * time.Hour

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' || n > 1e6 {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func str(v any) string { s, _ := v.(string); return s }

// number reads a JSON number (float64 from encoding/json, or an int).
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

func errorsText(result map[string]any) string {
	list, _ := result["errors"].([]any)
	var parts []string
	for _, e := range list {
		if s, ok := e.(string); ok && s != "" {
			parts = append(parts, s)
		}
	}
	return oneLine(strings.Join(parts, "; "))
}

func first(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// oneLine folds text into one line of at most 300 bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		cut := 300
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
