// Package healthcheck holds each MCP server's health outside the model's
// context: the cache entry, the two gates that decide a call without a probe
// (healthy within TTL, unhealthy within backoff), and the transitions that
// probes and real calls cause. Time is passed in; nothing here reads a clock.
package healthcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"
)

// Status is the state a server is in. The article's file knows two.
type Status string

const (
	StatusHealthy   Status = "healthy"
	StatusUnhealthy Status = "unhealthy"
)

// Millis is a time in Unix milliseconds, the article's unit. It reads
// integers, floats, numeric strings and null, because the file is written by
// hand (the article's reset alias) as well as by programs.
type Millis int64

// MillisOf converts t.
func MillisOf(t time.Time) Millis { return Millis(t.UnixMilli()) }

// Time converts back; zero stays the zero time.
func (m Millis) Time() time.Time {
	if m == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(m))
}

// MarshalJSON writes 0 as null, as the article does for "never".
func (m Millis) MarshalJSON() ([]byte, error) {
	if m == 0 {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, int64(m), 10), nil
}

func (m *Millis) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*m = 0
		return nil
	}
	if len(b) > 1 && b[0] == '"' {
		b = b[1 : len(b)-1]
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f > math.MaxInt64 || f < math.MinInt64 {
		return fmt.Errorf("not a time in Unix milliseconds: %s", b)
	}
	*m = Millis(f)
	return nil
}

// FailureCode says why a server was last marked unhealthy. The article
// wrote HTTP status numbers (401, 503) or "transport"; nightwatch writes
// words (auth, rate-limited, …) and reads both.
type FailureCode string

func (c *FailureCode) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*c = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = FailureCode(s)
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("lastFailureCode: %w", err)
		}
		*c = FailureCode(n.String())
	}
	return nil
}

func (c FailureCode) MarshalJSON() ([]byte, error) {
	if c == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(c))
}

// Entry is one server's record. The first nine fields are the article's
// version-1 format; the rest are nightwatch's, and fields neither knows are
// kept as they were.
type Entry struct {
	Status          Status      `json:"status"`
	CheckedAt       Millis      `json:"checkedAt"`
	ExpiresAt       Millis      `json:"expiresAt"`
	FailureCount    int         `json:"failureCount"`
	LastError       string      `json:"lastError"`
	LastFailureCode FailureCode `json:"lastFailureCode"`
	NextRetryAt     Millis      `json:"nextRetryAt"`
	LastRestoredAt  Millis      `json:"lastRestoredAt"`
	Source          string      `json:"source,omitempty"`

	// RestoredBy says how the server last came back: probe, reconnect,
	// passive (a real call worked) or reset.
	RestoredBy string `json:"restoredBy,omitempty"`
	// UnhealthySince is when the current outage began (0 when healthy).
	UnhealthySince Millis `json:"unhealthySince,omitempty"`
	// Verdict is the last probe's verdict (auth-required is healthy with a
	// note) and LatencyMs its handshake time.
	Verdict   string `json:"verdict,omitempty"`
	LatencyMs int64  `json:"latencyMs,omitempty"`
	Transport string `json:"transport,omitempty"`
	// TrialAt is when an auth-failed server was last let through for one
	// trial call: a probe cannot see the session's credentials, so only a
	// real call can show that re-authentication worked.
	TrialAt Millis `json:"trialAt,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

var entryKnownKeys = map[string]bool{}

func init() {
	for _, k := range []string{"status", "checkedAt", "expiresAt", "failureCount", "lastError",
		"lastFailureCode", "nextRetryAt", "lastRestoredAt", "source", "restoredBy",
		"unhealthySince", "verdict", "latencyMs", "transport", "trialAt"} {
		entryKnownKeys[k] = true
	}
}

type entryFields Entry // no methods: plain struct decoding

func (e *Entry) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	// lastError may be null or, in a hand-edited file, not a string at all;
	// neither should make the whole cache unreadable.
	var lastError string
	if le, ok := raw["lastError"]; ok {
		delete(raw, "lastError")
		var s *string
		if err := json.Unmarshal(le, &s); err != nil {
			lastError = string(le)
		} else if s != nil {
			lastError = *s
		}
	}
	known := map[string]json.RawMessage{}
	for k, v := range raw {
		if entryKnownKeys[k] {
			known[k] = v
			delete(raw, k)
		}
	}
	kb, _ := json.Marshal(known)
	var f entryFields
	if err := json.Unmarshal(kb, &f); err != nil {
		return err
	}
	*e = Entry(f)
	e.LastError = lastError
	if len(raw) > 0 {
		e.Extra = raw
	}
	return nil
}

func (e Entry) MarshalJSON() ([]byte, error) {
	type wire struct {
		entryFields
		LastError *string `json:"lastError"`
	}
	w := wire{entryFields: entryFields(e)}
	if e.LastError != "" {
		w.LastError = &e.LastError
	}
	b, err := json.Marshal(w)
	if err != nil || len(e.Extra) == 0 {
		return b, err
	}
	// Fields written by other tools are kept, after nightwatch's own.
	keys := make([]string, 0, len(e.Extra))
	for k := range e.Extra {
		if !entryKnownKeys[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1])
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		buf.WriteByte(',')
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(e.Extra[k])
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
