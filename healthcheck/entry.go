// Package healthcheck is the only place a server's health is decided: the
// cache entry kept outside the model's context, the gates that decide a call
// without a probe (healthy within TTL, unhealthy within backoff, one trial
// call when half-open), passive outlier counting from real calls, the
// failure classes with the reconnect policy beside them, and every
// transition announced to the events file. The state machine's rules
// (state.go) are pure: time is passed in.
package healthcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
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

// Entry is one server's record. The first nine fields are the article's
// version-1 format; the rest are nightwatch's, and fields neither knows are
// kept as they were.
type Entry struct {
	Status       Status `json:"status"`
	CheckedAt    Millis `json:"checkedAt"`
	ExpiresAt    Millis `json:"expiresAt"`
	FailureCount int    `json:"failureCount"`
	LastError    string `json:"lastError"`
	// LastFailureCode is nightwatch's class of the last failure (auth,
	// unavailable, …). On disk it is two fields: the article's
	// lastFailureCode holds its ArticleCode (401, 403, 429, 503 or
	// "transport") and failureClass holds the class itself. A file written
	// by the previous release, which put the class in lastFailureCode,
	// still loads.
	LastFailureCode FailureCode `json:"-"`
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
	// Era and ProtocolVersion are how the server last spoke to a probe
	// (modern: server/discover, 2026-07-28; legacy: initialize), and
	// SupportedVersions what it listed; SlowDiscover: it left
	// server/discover unanswered (each 2.1.332 session waits ~3 s for it);
	// LegacySSE: a type http URL that serves the legacy SSE transport
	// (2.1.197 cannot use it).
	Era               string   `json:"era,omitempty"`
	ProtocolVersion   string   `json:"protocolVersion,omitempty"`
	SupportedVersions []string `json:"supportedVersions,omitempty"`
	SlowDiscover      bool     `json:"slowDiscover,omitempty"`
	LegacySSE         bool     `json:"legacySSE,omitempty"`
	// TrialAt is when one trial call was last let through an open server
	// (half-open): only a real call can show that an outage the probe
	// cannot see (an upstream, a session's credentials) is over.
	TrialAt Millis `json:"trialAt,omitempty"`
	// ConsecutiveFailures counts failed calls in a row whose texts name a
	// server or upstream condition (passive outlier detection, Envoy's
	// consecutive_5xx). A successful call and every change of state reset
	// it.
	ConsecutiveFailures int `json:"consecutiveFailures,omitempty"`
	// Witness says what saw the current outage, and so what may end it:
	// WitnessProbe (a handshake sees it; a healthy probe clears it) or
	// WitnessCalls (only real calls see it; only a trial call clears it).
	Witness Witness `json:"witness,omitempty"`
	// HoldGaveUpAt is when a call held for this outage waited its whole
	// hold and the server did not come back: later calls are denied at
	// once until the outage ends, so a server that stays down costs one
	// hold, not one per call.
	HoldGaveUpAt Millis `json:"holdGaveUpAt,omitempty"`
	// RefusedAt is when, in the current outage or the last one (a healthy
	// entry keeps it until the next outage begins), the server's address
	// was first seen refusing connections, and RefusedBy what saw it
	// (Failure.RefusedBy): nothing listened there, so an HTTP server that
	// answers again is a new listener (HTTPRestart).
	RefusedAt Millis `json:"refusedAt,omitempty"`
	RefusedBy By     `json:"refusedBy,omitempty"`

	// articleCode is the lastFailureCode read from the file, kept so that a
	// hand-written 403 is not rewritten as 401.
	articleCode ArticleCode

	Extra map[string]json.RawMessage `json:"-"`
}

// ArticleCode is the article's lastFailureCode for this entry.
func (e *Entry) ArticleCode() ArticleCode {
	if e.LastFailureCode == "" {
		return ""
	}
	if e.articleCode != "" && ClassOfStored(string(e.articleCode)) == e.LastFailureCode {
		return e.articleCode
	}
	return ArticleCodeOf(e.LastFailureCode, e.LastError)
}

// entryKnownKeys are the JSON keys Entry decodes itself, read from its
// struct tags so that a new field can never be mistaken for an unknown one
// (and kept in Extra); lastFailureCode, lastError and failureClass are
// decoded by hand. Read on first use: a hook process that decodes no entry
// (a tool that is not MCP) spends no reflection on it.
var entryKnownKeys = sync.OnceValue(func() map[string]bool {
	keys := map[string]bool{"failureClass": true, "lastFailureCode": true, "lastError": true}
	t := reflect.TypeOf(Entry{})
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
})

type entryFields Entry // no methods: plain struct decoding

// entryWire is an entry as written, decoded in one pass: the three
// fields read by hand are kept raw (they shadow entryFields' own).
type entryWire struct {
	entryFields
	LastError       json.RawMessage `json:"lastError"`
	LastFailureCode json.RawMessage `json:"lastFailureCode"`
	FailureClass    json.RawMessage `json:"failureClass"`
}

// UnmarshalJSON reads one entry. An entry whose keys are all nightwatch's
// or the article's, spelled exactly (every file a program wrote), is
// decoded in one pass; any other key (a field of another tool, a key in
// another case, an escaped key) takes the general path, which keeps
// unknown fields in Extra.
func (e *Entry) UnmarshalJSON(b []byte) error {
	if onlyKnownKeys(b) {
		var w entryWire
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
		*e = Entry(w.entryFields)
		e.LastError = ""
		if len(w.LastError) > 0 {
			var s *string
			if err := json.Unmarshal(w.LastError, &s); err != nil {
				e.LastError = string(w.LastError)
			} else if s != nil {
				e.LastError = *s
			}
		}
		var article ArticleCode
		var class string
		if len(w.LastFailureCode) > 0 {
			if err := json.Unmarshal(w.LastFailureCode, &article); err != nil {
				return fmt.Errorf("lastFailureCode: %w", err)
			}
		}
		if len(w.FailureClass) > 0 {
			if err := json.Unmarshal(w.FailureClass, &class); err != nil {
				return fmt.Errorf("failureClass: %w", err)
			}
		}
		e.setCodes(article, class)
		return nil
	}
	return e.unmarshalGeneral(b)
}

// onlyKnownKeys reports whether b is an object whose top-level keys are
// all in entryKnownKeys, spelled exactly and without escapes. It decides
// only which path decodes b: anything it does not follow (invalid JSON
// included) answers false, and the general path reports it.
func onlyKnownKeys(b []byte) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) {
		if b[i] != '"' {
			return false
		}
		end := i + 1
		for end < len(b) && b[end] != '"' {
			if b[end] == '\\' {
				return false
			}
			end++
		}
		if end >= len(b) || !entryKnownKeys()[string(b[i+1:end])] {
			return false
		}
		i = skipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipValue(b, skipSpace(b, i+1))
		if i < 0 {
			return false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(b, i+1)
		default:
			return false
		}
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just after the JSON value starting at i, or
// -1. It follows strings and nesting only; json.Unmarshal validates.
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			i++
			for i < len(b) && b[i] != '"' {
				if b[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(b) {
				return -1
			}
			i++
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i
			}
			i++
		default:
			i++
		}
		if depth == 0 && i < len(b) && (b[i] == ',' || b[i] == '}' || b[i] == ']' || b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
			return i
		}
	}
	if depth == 0 {
		return i
	}
	return -1
}

// setCodes sets the failure class from the stored codes: failureClass
// wins; without it (the article's file, or the previous release's) the
// class is read from lastFailureCode.
func (e *Entry) setCodes(article ArticleCode, class string) {
	e.articleCode = article
	if class != "" {
		e.LastFailureCode = ClassOfStored(class)
	} else {
		e.LastFailureCode = ClassOfStored(string(article))
	}
	switch e.articleCode {
	case Article401, Article403, Article429, Article503:
	default:
		e.articleCode = "" // derived again from the class when written
	}
}

func (e *Entry) unmarshalGeneral(b []byte) error {
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
		if entryKnownKeys()[k] {
			known[k] = v
			delete(raw, k)
		}
	}
	var codes struct {
		Article ArticleCode `json:"lastFailureCode"`
		Class   string      `json:"failureClass"`
	}
	for _, k := range []string{"lastFailureCode", "failureClass"} {
		if v, ok := known[k]; ok {
			one, _ := json.Marshal(map[string]json.RawMessage{k: v})
			if err := json.Unmarshal(one, &codes); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			delete(known, k)
		}
	}
	kb, _ := json.Marshal(known)
	var f entryFields
	if err := json.Unmarshal(kb, &f); err != nil {
		return err
	}
	*e = Entry(f)
	e.LastError = lastError
	e.setCodes(codes.Article, codes.Class)
	if len(raw) > 0 {
		e.Extra = raw
	}
	return nil
}

func (e Entry) MarshalJSON() ([]byte, error) {
	type wire struct {
		entryFields
		LastError       *string     `json:"lastError"`
		LastFailureCode ArticleCode `json:"lastFailureCode"`
		FailureClass    FailureCode `json:"failureClass,omitempty"`
	}
	w := wire{entryFields: entryFields(e), LastFailureCode: e.ArticleCode(), FailureClass: e.LastFailureCode}
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
		if !entryKnownKeys()[k] {
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
