// Package mcpserver is an MCP test server built with the go-sdk that fails
// on demand: it exits, hangs, prints garbage, demands auth or answers with
// HTTP errors, as the servers nightwatch watches do at 2 a.m. Tests run it
// in-process over HTTP (NewHTTPHandler) or as the nwtestserver binary over
// stdio or HTTP.
package mcpserver

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Mode is the set of faults the server injects now. It is written as a
// list of words separated by commas or newlines, e.g.
// "noisy-stdout,ignore-sigterm":
//
// stdio:
//
//	healthy                  no fault (also the empty string); server/discover is answered
//	                         by the go-sdk: a modern (2026-07-28) server
//	exit-at-start            print an error on stderr and exit 1 at once
//	exit-during-handshake    read the first handshake request (server/discover or initialize),
//	                         print "Error: NOTES_API_KEY is not set", exit 1
//	require-env=NAME         like exit-during-handshake, only when NAME is unset or empty
//	never-answer             read stdin forever, answer nothing, survive stdin EOF
//	slow-start=DUR           sleep DUR (a Go duration) before serving
//	noisy-stdout             print "hello from server" on stdout before serving
//	ignore-sigterm           ignore SIGTERM, so only SIGKILL ends the process
//	linger                   keep running after stdin EOF (like server-everything)
//	spawn-child              start a child process (same process group) that ignores SIGTERM
//
//	die-on-discover          exit 1 when server/discover arrives (Claude Code then respawns the
//	                         server and sends initialize, which the next process answers)
//	answer-task              answer every tools/call with a 2026-07-28 task ("resultType":"task",
//	                         status working) that nobody can follow: the tasks extension's
//	                         answer, sent whether or not the client declared it
//
// stdio and HTTP:
//
//	discover-only            answer initialize with JSON-RPC error -32601, like a 2026-07-28 server
//	legacy                   answer server/discover at once with JSON-RPC error -32601 (HTTP: 400
//	                         with it), like a 2025 SDK server: clients fall back to initialize
//	ignore-discover          never answer server/discover (HTTP: hold the POST until the client
//	                         leaves), like a server that drops unknown requests
//	slow-handshake=DUR       warm up for DUR from the first handshake request (server/discover or
//	                         initialize): it, and any other arriving meanwhile, are answered only
//	                         then, like a server that needs DUR before its first answer
//
// HTTP:
//
//	NNN                      answer every request with status NNN (401 carries WWW-Authenticate,
//	                         429 carries Retry-After: 7)
//	429=N, 429=date+N        429 with Retry-After: N seconds, or as an HTTP-date N seconds ahead
//	rpc-body                 error statuses carry a JSON-RPC error body, as the TypeScript SDK sends
//	hang                     never answer
//	html                     200 text/html
//	require-header=Name:Value  401 unless the request has that header value
type Mode struct {
	ExitAtStart         bool
	ExitDuringHandshake bool
	RequireEnv          string
	NeverAnswer         bool
	SlowStart           time.Duration
	NoisyStdout         bool
	IgnoreSIGTERM       bool
	Linger              bool
	SpawnChild          bool

	DiscoverOnly   bool
	Legacy         bool
	IgnoreDiscover bool
	DieOnDiscover  bool
	AnswerTask     bool
	SlowHandshake  time.Duration

	Status int
	// RetryAfter is the literal Retry-After value sent with a 429.
	RetryAfter string
	// RetryAfterDate, when set, sends Retry-After as the HTTP-date this far
	// ahead of the answer instead.
	RetryAfterDate time.Duration
	RPCBody        bool
	Hang           bool
	HTML           bool
	RequireHeader  string // header name
	RequireValue   string // and the value it must have
}

// defaultRetryAfter is sent with a bare "429".
const defaultRetryAfter = "7"

// ParseMode reads a mode list. Unknown words are errors, so a typo in a
// test does not silently test the healthy server.
func ParseMode(s string) (Mode, error) {
	var m Mode
	// Commas and newlines separate words; spaces may sit in a value
	// ("require-header=Authorization:Bearer abc").
	for _, word := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		word = strings.TrimSpace(word)
		if word == "" {
			continue
		}
		name, arg, hasArg := strings.Cut(word, "=")
		if err := m.apply(name, arg, hasArg); err != nil {
			return Mode{}, fmt.Errorf("mode %q: %w", word, err)
		}
	}
	return m, nil
}

func (m *Mode) apply(name, arg string, hasArg bool) error {
	needArg := func() error {
		if !hasArg || arg == "" {
			return fmt.Errorf("needs a value (%s=…)", name)
		}
		return nil
	}
	noArg := func() error {
		if hasArg {
			return fmt.Errorf("takes no value")
		}
		return nil
	}
	flag := func(f *bool) error {
		*f = true
		return noArg()
	}
	switch name {
	case "healthy":
		return noArg()
	case "exit-at-start":
		return flag(&m.ExitAtStart)
	case "exit-during-handshake":
		return flag(&m.ExitDuringHandshake)
	case "never-answer":
		return flag(&m.NeverAnswer)
	case "noisy-stdout":
		return flag(&m.NoisyStdout)
	case "ignore-sigterm":
		return flag(&m.IgnoreSIGTERM)
	case "linger":
		return flag(&m.Linger)
	case "spawn-child":
		return flag(&m.SpawnChild)
	case "discover-only":
		return flag(&m.DiscoverOnly)
	case "legacy":
		return flag(&m.Legacy)
	case "ignore-discover":
		return flag(&m.IgnoreDiscover)
	case "die-on-discover":
		return flag(&m.DieOnDiscover)
	case "answer-task":
		return flag(&m.AnswerTask)
	case "slow-handshake":
		if err := needArg(); err != nil {
			return err
		}
		d, err := time.ParseDuration(arg)
		if err != nil || d < 0 {
			return fmt.Errorf("want a duration like 8s")
		}
		m.SlowHandshake = d
		return nil
	case "rpc-body":
		return flag(&m.RPCBody)
	case "hang":
		return flag(&m.Hang)
	case "html":
		return flag(&m.HTML)
	case "require-env":
		m.RequireEnv = arg
		return needArg()
	case "slow-start":
		if err := needArg(); err != nil {
			return err
		}
		d, err := time.ParseDuration(arg)
		if err != nil || d < 0 {
			return fmt.Errorf("want a duration like 300ms")
		}
		m.SlowStart = d
		return nil
	case "require-header":
		if err := needArg(); err != nil {
			return err
		}
		header, value, ok := strings.Cut(arg, ":")
		if !ok || header == "" {
			return fmt.Errorf("want Name:Value")
		}
		m.RequireHeader, m.RequireValue = header, value
		return nil
	}
	code, err := strconv.Atoi(name)
	if err != nil || code < 100 || code > 599 {
		return fmt.Errorf("unknown mode")
	}
	m.Status = code
	if code != 429 {
		return noArg()
	}
	m.RetryAfter = defaultRetryAfter
	if !hasArg {
		return nil
	}
	if secs, ok := strings.CutPrefix(arg, "date+"); ok {
		n, err := strconv.Atoi(secs)
		if err != nil || n < 0 {
			return fmt.Errorf("want 429=date+SECONDS")
		}
		m.RetryAfter, m.RetryAfterDate = "", time.Duration(n)*time.Second
		return nil
	}
	if _, err := strconv.Atoi(arg); err != nil {
		return fmt.Errorf("want 429=SECONDS or 429=date+SECONDS")
	}
	m.RetryAfter = arg
	return nil
}

// ModeSource says which faults to inject now; the server asks on every
// request, so a test can change its behaviour while it runs.
type ModeSource func() Mode

// Fixed always returns m.
func Fixed(m Mode) ModeSource { return func() Mode { return m } }

// ControlFile re-reads path on every call. A missing or empty file means
// fallback; so does a file that does not parse (the error goes to report,
// when not nil), so a half-written file does not crash the server.
func ControlFile(path string, fallback Mode, report func(error)) ModeSource {
	return func() Mode {
		data, err := os.ReadFile(path)
		if err != nil || strings.TrimSpace(string(data)) == "" {
			return fallback
		}
		m, err := ParseMode(string(data))
		if err != nil {
			if report != nil {
				report(fmt.Errorf("control file %s: %w", path, err))
			}
			return fallback
		}
		return m
	}
}
