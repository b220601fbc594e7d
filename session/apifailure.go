package session

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

// APIFailureClass names a kind of agent failure the night handles by its own
// rule.
type APIFailureClass string

const (
	// NoAPIFailure: the session succeeded, or failed on its own (the job's
	// failure, not the API's).
	NoAPIFailure APIFailureClass = ""
	// FailureUsageLimit: a subscriber's plan limit (5-hour, weekly, …); ResetAt
	// says when it lifts, when known.
	FailureUsageLimit APIFailureClass = "usage-limit"
	// FailureRateLimit: an API key's account rate limit (429 without a plan limit).
	FailureRateLimit APIFailureClass = "rate-limit"
	// FailureAPIUnavailable: the API could not be reached or answered 5xx/529.
	FailureAPIUnavailable APIFailureClass = "api-unavailable"
	// FailureInvalidCredentials: the agent's login was refused (401/403, no login,
	// an expired token, no credit).
	FailureInvalidCredentials APIFailureClass = "invalid-credentials"
	// FailureMaxTurns: the session hit --max-turns.
	FailureMaxTurns APIFailureClass = "max-turns"
	// FailureContextTooLong: the conversation no longer fits the model's context.
	FailureContextTooLong APIFailureClass = "context-too-long"
)

// APIFailure is the classifier's verdict.
type APIFailure struct {
	Class  APIFailureClass `json:"class"`
	Reason string          `json:"reason,omitempty"` // one line for the journal and the report; "" with NoAPIFailure
	// ResetAt is when a usage limit lifts (FailureUsageLimit only; zero when
	// neither the event nor the text gave a time).
	ResetAt time.Time `json:"reset_at,omitzero"`
}

// ClassifyAPIFailure classifies a finished session from its result event
// (the parsed "type":"result" line; nil if the session printed none, which
// is a kill, not an API failure) and its stream events (every parsed line,
// or only the rate_limit_event ones). now and loc (the machine's zone; nil =
// time.Local) anchor a reset time read from a text that gives no date or no
// zone.
func ClassifyAPIFailure(result map[string]any, stream []map[string]any, now time.Time, loc *time.Location) APIFailure {
	if result == nil {
		return APIFailure{}
	}
	if loc == nil {
		loc = time.Local
	}
	subtype := afStr(result["subtype"])
	terminal := afStr(result["terminal_reason"])
	text := strings.TrimSpace(afStr(result["result"]))
	isError, _ := result["is_error"].(bool)
	status, hasStatus := afNumber(result["api_error_status"])
	errType := afStr(result["api_error_type"])

	if subtype == "error_max_turns" || terminal == "max_turns" {
		return APIFailure{Class: FailureMaxTurns, Reason: afFirst(afErrorsText(result), "the session reached its maximum number of turns")}
	}
	if terminal == "prompt_too_long" {
		return APIFailure{Class: FailureContextTooLong, Reason: afOneLine(afFirst(text, "the prompt is too long for the model's context"))}
	}
	if !isError {
		return APIFailure{}
	}
	// A rejected rate_limit_event is a subscriber's plan limit, with its
	// reset time (both versions stream it before the result).
	if ev, ok := afRejectedRateLimit(stream); ok {
		f := APIFailure{Class: FailureUsageLimit, Reason: afOneLine(afFirst(afUsageText(text), "usage limit reached"))}
		if sec, ok := afNumber(ev["resetsAt"]); ok && sec > 0 {
			f.ResetAt = time.Unix(int64(sec), 0)
		} else if t, ok := ParseResetTime(text, now, loc); ok {
			f.ResetAt = t
		}
		if kind := afStr(ev["rateLimitType"]); kind != "" && f.Reason == "usage limit reached" {
			f.Reason = "usage limit reached (" + kind + ")"
		}
		return f
	}
	if !hasStatus && strings.HasPrefix(text, "API Error") {
		// 2.1.197 gives up on repeated 529s without api_error_status; its
		// system/api_retry events carry the status it retried on.
		status, hasStatus = afLastRetryStatus(stream)
	}
	if hasStatus {
		switch s := int(status); {
		case s == 401 || s == 403:
			return APIFailure{Class: FailureInvalidCredentials, Reason: fmt.Sprintf("the API refused the agent's login (%d): %s", s, afOneLine(text))}
		case s == 429:
			if strings.HasPrefix(text, "You've hit your") || strings.HasPrefix(text, "You've reached your") {
				return afUsageLimitFromText(text, now, loc)
			}
			return APIFailure{Class: FailureRateLimit, Reason: "rate limited (429): " + afOneLine(text)}
		case s == 529 || s >= 500 || s == 408 || errType == "overloaded_error":
			return APIFailure{Class: FailureAPIUnavailable, Reason: fmt.Sprintf("the API is unavailable (%d): %s", s, afOneLine(text))}
		case s == 400 && afIsPromptTooLong(text):
			return APIFailure{Class: FailureContextTooLong, Reason: afOneLine(text)}
		}
		return APIFailure{}
	}
	// Nothing structured: the texts the CLI prints for what has no status.
	switch {
	case strings.HasPrefix(text, "You've hit your") || strings.HasPrefix(text, "You've reached your"):
		return afUsageLimitFromText(text, now, loc)
	case afIsCredentialsText(text):
		return APIFailure{Class: FailureInvalidCredentials, Reason: "the agent's login is not usable: " + afOneLine(text)}
	case afIsPromptTooLong(text):
		return APIFailure{Class: FailureContextTooLong, Reason: afOneLine(text)}
	case afIsConnectionText(text):
		return APIFailure{Class: FailureAPIUnavailable, Reason: "the API could not be reached: " + afOneLine(text)}
	case terminal == "api_error":
		// 2.1.332 names the API as the cause even when it gives no status.
		return APIFailure{Class: FailureAPIUnavailable, Reason: "API error: " + afOneLine(text)}
	}
	return APIFailure{}
}

func afUsageLimitFromText(text string, now time.Time, loc *time.Location) APIFailure {
	f := APIFailure{Class: FailureUsageLimit, Reason: afOneLine(text)}
	if t, ok := ParseResetTime(text, now, loc); ok {
		f.ResetAt = t
	}
	return f
}

// afUsageText is text if it is the CLI's usage-limit line.
func afUsageText(text string) string {
	if strings.Contains(text, "limit") {
		return text
	}
	return ""
}

// afRejectedRateLimit returns the rate_limit_info of the last
// rate_limit_event whose status is "rejected".
func afRejectedRateLimit(stream []map[string]any) (map[string]any, bool) {
	var found map[string]any
	for _, ev := range stream {
		if afStr(ev["type"]) != "rate_limit_event" {
			continue
		}
		info, _ := ev["rate_limit_info"].(map[string]any)
		if afStr(info["status"]) == "rejected" {
			found = info
		}
	}
	return found, found != nil
}

// afLastRetryStatus is the error_status of the stream's last
// system/api_retry event.
func afLastRetryStatus(stream []map[string]any) (float64, bool) {
	var st float64
	found := false
	for _, ev := range stream {
		if afStr(ev["type"]) == "system" && afStr(ev["subtype"]) == "api_retry" {
			if n, ok := afNumber(ev["error_status"]); ok && n > 0 {
				st, found = n, true
			}
		}
	}
	return st, found
}

// afCredentialTexts are the CLI's lines for a login it cannot use.
var afCredentialTexts = []string{
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

func afIsCredentialsText(text string) bool {
	for _, t := range afCredentialTexts {
		if strings.Contains(text, t) {
			return true
		}
	}
	return false
}

func afIsPromptTooLong(text string) bool {
	l := strings.ToLower(text)
	return strings.HasPrefix(l, "prompt is too long") || strings.Contains(l, "api error: 400") && strings.Contains(l, "prompt is too long")
}

// afConnectionMarks are in the CLI's texts for an API it could not reach
// (2.1.197: "API Error: Unable to connect to API (ConnectionRefused)";
// 2.1.332: "API Error: Connection refused — … (ECONNREFUSED)").
var afConnectionMarks = []string{
	"Unable to connect to API", "Connection refused", "ECONNREFUSED", "ConnectionRefused",
	"ECONNRESET", "ETIMEDOUT", "ENOTFOUND", "EAI_AGAIN", "Request timed out", "socket hang up",
	"The socket connection was closed", "Connection error", "fetch failed", "Overloaded",
}

func afIsConnectionText(text string) bool {
	if !strings.HasPrefix(text, "API Error") {
		return false
	}
	for _, m := range afConnectionMarks {
		if strings.Contains(text, m) {
			return true
		}
	}
	return false
}

// afResetRE finds the CLI's "resets <when> (<zone>)" (the zone is optional):
// "resets 8:21am (UTC)", "resets 10am (Europe/Berlin)", "resets Dec 3,
// 1:55pm (UTC)", "resets Jan 5, 2027, 9am (UTC)", "resets Dec 3 (UTC)".
var afResetRE = regexp.MustCompile(`resets\s+` +
	`(?:([A-Z][a-z]{2})\s+(\d{1,2})(?:,\s*(\d{4}))?(?:,\s*|\s+|$))?` +
	`(?:(\d{1,2})(?::(\d{2}))?\s*([ap]m))?` +
	`\s*(?:\(([^()\s]+)\))?`)

var afMonths = map[string]time.Month{"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6,
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
	m := afResetRE.FindStringSubmatch(text)
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
		hour = afAtoi(hourS)
		if hour < 1 || hour > 12 {
			return time.Time{}, false
		}
		hour %= 12
		if ampm == "pm" {
			hour += 12
		}
		if minS != "" {
			minute = afAtoi(minS)
			if minute > 59 {
				return time.Time{}, false
			}
		}
	}
	local := now.In(loc)
	if monName != "" {
		mon, ok := afMonths[monName]
		day := afAtoi(dayS)
		if !ok || day < 1 || day > 31 {
			return time.Time{}, false
		}
		year := local.Year()
		if yearS != "" {
			year = afAtoi(yearS)
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
		if yearS == "" && !t.After(now) {
			t = time.Date(year+1, mon, day, hour, minute, 0, 0, loc)
		}
		return t, true
	}
	t := time.Date(local.Year(), local.Month(), local.Day(), hour, minute, 0, 0, loc)
	if !t.After(now) {
		t = time.Date(local.Year(), local.Month(), local.Day()+1, hour, minute, 0, 0, loc)
	}
	return t, true
}

func afAtoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' || n > 1e6 {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func afStr(v any) string { s, _ := v.(string); return s }

// afNumber reads a JSON number (float64 from encoding/json, or an int).
func afNumber(v any) (float64, bool) {
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

func afErrorsText(result map[string]any) string {
	list, _ := result["errors"].([]any)
	var parts []string
	for _, e := range list {
		if s, ok := e.(string); ok && s != "" {
			parts = append(parts, s)
		}
	}
	return afOneLine(strings.Join(parts, "; "))
}

func afFirst(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// afOneLine folds text into one line of at most 300 bytes.
func afOneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		cut := 300
		for cut > 0 && !afUTF8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func afUTF8Start(b byte) bool { return b&0xC0 != 0x80 }
