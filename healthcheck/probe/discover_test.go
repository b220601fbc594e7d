package probe

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestJudgeDiscover(t *testing.T) {
	tests := []struct {
		name       string
		answer     string
		modern     bool
		modernErr  int64
		supported  []string
		serverName string
		legacy     string
	}{
		{name: "go-sdk stdio", modern: true,
			answer:    `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1"}}}}`,
			supported: []string{"2026-07-28", "2025-11-25"}, serverName: "srv"},
		{name: "stateful go-sdk HTTP lists only legacy versions",
			answer:    `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25","2025-06-18"],"capabilities":{}}}`,
			supported: []string{"2025-11-25", "2025-06-18"}, legacy: "lists no version"},
		{name: "only a future modern version",
			answer:    `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2027-01-01"]}}`,
			supported: []string{"2027-01-01"}, legacy: "lists no version"},
		{name: "TypeScript SDK method not found", answer: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`,
			legacy: "JSON-RPC error -32601"},
		{name: "invalid params", answer: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`, legacy: "-32602"},
		{name: "server not initialized", answer: `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"Server not initialized"}}`, legacy: "-32000"},
		{name: "unsupported version is modern", modernErr: codeUnsupportedProtocolVersion,
			answer:    `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2027-01-01",7,""],"requested":"2026-07-28"}}}`,
			supported: []string{"2027-01-01"}},
		{name: "header mismatch is modern", modernErr: codeHeaderMismatch,
			answer: `{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch"}}`},
		{name: "missing capability is modern", modernErr: codeMissingRequiredClientCapability,
			answer: `{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"needs elicitation"}}`},
		{name: "an empty result is not a discover result", answer: `{"jsonrpc":"2.0","id":1,"result":{}}`, legacy: "not a discover result"},
		{name: "an initialize result is not a discover result",
			answer: `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","serverInfo":{"name":"x"}}}`, legacy: "not a discover result"},
		{name: "versions not strings", answer: `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":[1,2]}}`, legacy: "not a discover result"},
		{name: "capabilities not an object",
			answer: `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":[]}}`, legacy: "not a discover result"},
		{name: "result not an object", answer: `{"jsonrpc":"2.0","id":1,"result":"ok"}`, legacy: "not a discover result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, ok := parseMessages([]byte(tt.answer))
			if !ok {
				t.Fatalf("test answer does not parse")
			}
			d := judgeDiscover(&msgs[0])
			if d.modern != tt.modern || (d.modernError != nil) != (tt.modernErr != 0) {
				t.Fatalf("got %+v", d)
			}
			if tt.modernErr != 0 && d.modernError.Code != tt.modernErr {
				t.Errorf("modern error %d, want %d", d.modernError.Code, tt.modernErr)
			}
			if tt.modern && d.negotiated != ModernProtocolVersion {
				t.Errorf("negotiated %q", d.negotiated)
			}
			if !reflect.DeepEqual(d.supported, tt.supported) || d.serverName != tt.serverName {
				t.Errorf("supported %q name %q, want %q %q", d.supported, d.serverName, tt.supported, tt.serverName)
			}
			if (tt.legacy == "") != (d.legacy == "") || !strings.Contains(d.legacy, tt.legacy) {
				t.Errorf("legacy %q, want %q", d.legacy, tt.legacy)
			}
		})
	}
}

func TestDiscoverWait(t *testing.T) {
	for timeout, want := range map[time.Duration]time.Duration{
		time.Second:            250 * time.Millisecond,
		2 * time.Second:        500 * time.Millisecond,
		5 * time.Second:        time.Second,
		2 * time.Minute:        time.Second,
		100 * time.Millisecond: 250 * time.Millisecond,
	} {
		if got := discoverWait(timeout); got != want {
			t.Errorf("discoverWait(%s) = %s, want %s", timeout, got, want)
		}
	}
}

// FuzzJudgeDiscover feeds server/discover answers a server might send: the
// judge must never panic, and what it keeps stays bounded.
func FuzzJudgeDiscover(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"}}}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"x","data":{"supported":["2026-07-28"]}}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"x","data":"nope"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":null}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["a","b"],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":5}}}}`,
		`[{"jsonrpc":"2.0","id":1,"result":{}}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, ok := parseMessages(data)
		if !ok {
			// Not JSON-RPC: the result parser alone must still cope.
			_, _ = parseDiscoverResult(json.RawMessage(data))
			return
		}
		for i := range msgs {
			d := judgeDiscover(&msgs[i])
			if len(d.supported) > maxVersions || len(d.serverName) > 100+len("…") {
				t.Fatalf("unbounded: %+v", d)
			}
			for _, v := range d.supported {
				if len(v) > versionLength+len("…") {
					t.Fatalf("version too long: %q", v)
				}
			}
			if d.modern == (d.legacy != "") && d.modernError == nil {
				t.Fatalf("neither or both eras: %+v", d)
			}
		}
	})
}
