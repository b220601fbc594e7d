package probe

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

func TestParseMessages(t *testing.T) {
	tests := []struct {
		in      string
		ok      bool
		answers int64 // id the first message answers, 0 for none
		nullID  bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, true, 1, false},
		{`  {"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}` + "\r\n", true, 1, false},
		{`{"jsonrpc":"2.0","id":"1","result":{}}`, true, 1, false}, // numeric match, as the TypeScript SDK
		{`{"jsonrpc":"2.0","id":1.0,"result":{}}`, true, 1, false},
		{`{"jsonrpc":"2.0","id":"one","result":{}}`, true, 0, false},
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, true, 0, false},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`, true, 0, true},
		{`{"jsonrpc":"2.0","error":{"code":-32000,"message":"bad"}}`, true, 0, true},
		{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, true, 0, false},
		{`{"jsonrpc":"2.0","id":1,"method":"roots/list"}`, true, 0, false}, // a request from the server
		{`[{"jsonrpc":"2.0","method":"x"},{"jsonrpc":"2.0","id":1,"result":{}}]`, true, 0, false},
		{`{"jsonrpc":"1.0","id":1,"result":{}}`, false, 0, false},
		{`{"id":1,"result":{}}`, false, 0, false},
		{`{"jsonrpc":"2.0","id":1}`, false, 0, false},
		{`{"hello":"world"}`, false, 0, false},
		{`hello from server`, false, 0, false},
		{`[]`, false, 0, false},
		{`[{"jsonrpc":"2.0","id":1,"result":{}}, 3]`, false, 0, false},
		{``, false, 0, false},
	}
	for _, tt := range tests {
		msgs, ok := parseMessages([]byte(tt.in))
		if ok != tt.ok {
			t.Errorf("parseMessages(%q) ok = %v, want %v", tt.in, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		if got := msgs[0].answers(1); got != (tt.answers == 1) {
			t.Errorf("%q answers(1) = %v", tt.in, got)
		}
		if got := msgs[0].hasNullID(); got != tt.nullID {
			t.Errorf("%q hasNullID() = %v", tt.in, got)
		}
	}
	batch, _ := parseMessages([]byte(`[{"jsonrpc":"2.0","method":"x"},{"jsonrpc":"2.0","id":1,"result":{}}]`))
	if len(batch) != 2 || !batch[1].answers(1) {
		t.Errorf("batch = %+v", batch)
	}
}

func TestEventReader(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []event
	}{
		{"typical", "event: message\nid: 1\ndata: {\"a\":1}\n\n",
			[]event{{Type: "message", ID: "1", Data: `{"a":1}`}}},
		{"default type, no space after colon", "data:{}\n\n", []event{{Type: "message", Data: "{}"}}},
		{"multi-line data", "data: line1\ndata: line2\n\n", []event{{Type: "message", Data: "line1\nline2"}}},
		{"CRLF and CR endings", "event: endpoint\r\ndata: /m?s=1\r\n\r\ndata: x\r\rdata: y\n\n",
			[]event{{Type: "endpoint", Data: "/m?s=1"}, {Type: "message", Data: "x"}, {Type: "message", Data: "y"}}},
		{"comments and events without data", ": keep-alive\n\nevent: ping\n\ndata: z\n\n", []event{{Type: "message", Data: "z"}}},
		{"pending event at EOF", "data: last", []event{{Type: "message", Data: "last"}}},
		{"BOM and unknown fields", "\uFEFFretry: 10\nfoo\ndata: ok\n\n", []event{{Type: "message", Data: "ok"}}},
		{"empty data line", "data\n\n", []event{{Type: "message", Data: ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte at a time: a CR at a read boundary must not split
			// a CRLF into two line ends.
			r := newEventReader(iotest.OneByteReader(strings.NewReader(tt.stream)))
			var got []event
			for {
				ev, err := r.next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("events %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("event %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestClip(t *testing.T) {
	if got := clip("a\n  b\tc", 10); got != "a b c" {
		t.Errorf("clip = %q", got)
	}
	if got := clip("ééé", 3); got != "é…" {
		t.Errorf("clip = %q", got)
	}
}

// FuzzParseMessages feeds arbitrary server output (a stdout line, an HTTP
// body, an event's data) to the JSON-RPC parser.
func FuzzParseMessages(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`,
		`[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}]`,
		`{"jsonrpc":"2.0","id":1e400,"result":1}`,
		`hello from server`,
		`{"jsonrpc":"2.0","id":[1],"result":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, ok := parseMessages(data)
		if ok != (len(msgs) > 0) {
			t.Fatalf("ok=%v with %d messages", ok, len(msgs))
		}
		for i := range msgs {
			_ = msgs[i].answers(1)
			_ = msgs[i].hasNullID()
			if msgs[i].JSONRPC != "2.0" {
				t.Fatalf("accepted jsonrpc %q", msgs[i].JSONRPC)
			}
		}
	})
}

// FuzzEventReader feeds arbitrary bytes to the event-stream reader: it
// must end (EOF or error) without panicking and never return CR or LF in
// an event type.
func FuzzEventReader(f *testing.F) {
	for _, seed := range []string{
		"event: endpoint\ndata: /message?sessionId=1\n\n",
		"data: a\r\ndata: b\r\r\n: c\n\nid: \x00\ndata\n",
		"\uFEFFevent:message\rdata:{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\r",
		"data: unterminated",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := newEventReader(strings.NewReader(string(data)))
		for i := 0; ; i++ {
			ev, err := r.next()
			if err != nil {
				return
			}
			if strings.ContainsAny(ev.Type, "\r\n") || strings.ContainsAny(ev.ID, "\r\n\x00") {
				t.Fatalf("bad event %+v", ev)
			}
			if i > len(data) {
				t.Fatalf("more events than input bytes")
			}
		}
	})
}

// probeGoroutines lists goroutines running probe code other than tests.
// One caught in runtime.goexit1 has returned and is only being torn down.
func probeGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "nightwatch/healthcheck/probe.") && !strings.Contains(g, "_test.go") &&
			!strings.Contains(g, "runtime.goexit1(") {
			found = append(found, g)
		}
	}
	return found
}
