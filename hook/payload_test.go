package hook

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A PostToolUseFailure payload exactly as Claude Code 2.1.197 sent it.
const realFailure = `{"session_id":"f2bf3b2d-a068-4e56-81b2-3e557a88a044","transcript_path":"/home/u/.claude/projects/-home-u-work/f2bf3b2d.jsonl","cwd":"/home/u/work","prompt_id":"e033a359","permission_mode":"default","effort":{"level":"high"},"hook_event_name":"PostToolUseFailure","tool_name":"mcp__stub__rpcerr","tool_input":{"message":"c"},"tool_use_id":"toolu_01","error":"MCP error -32603: STUB rpc failure message","is_interrupt":false,"duration_ms":5}`

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Payload
	}{
		{"real failure payload", realFailure, Payload{Event: "PostToolUseFailure", ToolName: "mcp__stub__rpcerr",
			SessionID: "f2bf3b2d-a068-4e56-81b2-3e557a88a044", Cwd: "/home/u/work", ToolUseID: "toolu_01",
			Error: "MCP error -32603: STUB rpc failure message", HasError: true}},
		{"tool_input before tool_name, nested and escaped", `{"tool_input":{"a":[1,{"b":"x\"}y"}],"c":"\\"},"tool_name":"mcp__a__b","hook_event_name":"PreToolUse"}`,
			Payload{Event: "PreToolUse", ToolName: "mcp__a__b"}},
		{"escapes in kept strings", `{"cwd":"/tmp/a\u00e9\ud83d\ude00\n","tool_name":"mcp__x\/y"}`,
			Payload{Cwd: "/tmp/aé😀\n", ToolName: "mcp__x/y"}},
		{"lone surrogate", `{"cwd":"\ud800x"}`, Payload{Cwd: "\uFFFDx"}},
		{"tool_response string", `{"tool_response":"all good","tool_name":"mcp__a__b"}`, Payload{ToolName: "mcp__a__b", HasToolResponse: true}},
		{"tool_response array", `{"tool_response":[{"type":"text","text":"ok"}]}`, Payload{HasToolResponse: true}},
		{"non-string known key is skipped", `{"tool_name":42,"error":{"x":1}}`, Payload{HasError: true}},
		{"whitespace everywhere", " \n{ \"tool_name\" : \"mcp__a__b\" , \"x\" : [ true , null , -1.5e3 ] } \n", Payload{ToolName: "mcp__a__b"}},
		{"empty object", `{}`, Payload{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if *got != tt.want {
				t.Errorf("got %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, in := range []string{``, `[]`, `"x"`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":"x`, `{"a":tru}`, `{"cwd":"\q"}`,
		`{"a":[1,2}`, `{"a":{"b" 1}}`, `{"tool_name":"a` + "\x01" + `"}`, `{a:1}`} {
		if _, err := Decode(strings.NewReader(in)); err == nil {
			t.Errorf("Decode(%q) succeeded, want an error", in)
		}
	}
}

// hugeReader streams a payload whose tool_input holds n bytes of text with
// escapes, without ever holding it in memory.
type hugeReader struct {
	head, tail []byte
	n          int
	pos        int
}

func (h *hugeReader) Read(p []byte) (int, error) {
	total := len(h.head) + h.n + len(h.tail)
	if h.pos >= total {
		return 0, io.EOF
	}
	i := 0
	for i < len(p) && h.pos < total {
		switch {
		case h.pos < len(h.head):
			p[i] = h.head[h.pos]
		case h.pos < len(h.head)+h.n:
			// a repeating run with escaped quotes and backslashes
			p[i] = `ab\"c\\d `[(h.pos-len(h.head))%9]
		default:
			p[i] = h.tail[h.pos-len(h.head)-h.n]
		}
		i++
		h.pos++
	}
	return i, nil
}

func TestDecodeFiftyMiBToolInput(t *testing.T) {
	r := &hugeReader{
		head: []byte(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"mcp__notes__write","tool_input":{"content":"`),
		n:    50 << 20 / 9 * 9,
		tail: []byte(`"},"tool_use_id":"toolu_9","cwd":"/w"}`),
	}
	p, err := Decode(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.ToolName != "mcp__notes__write" || p.ToolUseID != "toolu_9" || p.Cwd != "/w" {
		t.Fatalf("decoded %+v", p)
	}
}

func TestLongKeptFieldsAreCut(t *testing.T) {
	long := strings.Repeat("é", MaxErrorBytes)
	in, _ := json.Marshal(map[string]string{"error": long, "cwd": "/x"})
	p, err := Decode(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Error) > MaxErrorBytes || !strings.HasPrefix(long, p.Error) || p.Cwd != "/x" {
		t.Fatalf("error kept %d bytes (max %d), cwd %q", len(p.Error), MaxErrorBytes, p.Cwd)
	}
}

// FuzzDecode checks the streaming decoder against encoding/json: it never
// panics, and where encoding/json reads an object, the fields agree.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(realFailure))
	f.Add([]byte(`{"tool_input":{"a":[1,{"b":"x\"}y"}]},"tool_name":"mcp__a__b"}`))
	f.Add([]byte(`{"cwd":"\ud83d\ude00","error":"\u0000"}`))
	f.Add([]byte(`{"mcp_server":{"name":"a.b","source":"dynamic","x":[{}]},"tool_name":"mcp__a_b__c"}`))
	f.Add([]byte(`{"mcp_server":"plain","mcp_server":{}}`))
	if files, _ := filepath.Glob(filepath.Join("testdata", "payloads", "*.json")); len(files) > 0 {
		for _, name := range files {
			if b, err := os.ReadFile(name); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(bytes.NewReader(data))
		var ref map[string]any
		if json.Unmarshal(data, &ref) != nil || ref == nil {
			return
		}
		if err != nil {
			t.Fatalf("encoding/json reads %q but Decode failed: %v", data, err)
		}
		check := func(key, got string, limit int) {
			want, ok := ref[key].(string)
			if !ok {
				return
			}
			if len(want) <= limit && got != want && !strings.ContainsRune(want, '\uFFFD') {
				t.Errorf("%s: got %q want %q", key, got, want)
			}
		}
		check("tool_name", p.ToolName, MaxFieldBytes)
		check("hook_event_name", p.Event, MaxFieldBytes)
		check("cwd", p.Cwd, MaxFieldBytes)
		check("error", p.Error, MaxErrorBytes)
		if ms, ok := ref["mcp_server"].(map[string]any); ok {
			// encoding/json keeps the last of repeated keys; so does Decode
			// only when both are objects, hence the single-key check.
			if n, ok := ms["name"].(string); ok && strings.Count(string(data), `"mcp_server"`) == 1 && strings.Count(string(data), `"name"`) == 1 {
				check2 := func(got, want string) {
					if len(want) <= MaxFieldBytes && got != want && !strings.ContainsRune(want, '\uFFFD') {
						t.Errorf("mcp_server.name: got %q want %q", got, want)
					}
				}
				check2(p.Server, n)
			}
		}
	})
}

func BenchmarkDecodeRealPayload(b *testing.B) {
	for b.Loop() {
		if _, err := Decode(strings.NewReader(realFailure)); err != nil {
			b.Fatal(err)
		}
	}
}

// A deeply nested tool_input is read through like any other value: the
// old recursive skip refused more than 10000 levels, which turned the
// payload into "cannot parse" and let a call to a dead server through.
func TestDecodeDeepToolInput(t *testing.T) {
	const n = 200000
	deep := strings.Repeat(`[{"a":`, n) + `"x"` + strings.Repeat(`}]`, n)
	for _, in := range []string{
		`{"tool_input":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `,"tool_name":"mcp__a__b","hook_event_name":"PreToolUse"}`,
		`{"tool_input":` + deep + `,"tool_name":"mcp__a__b","hook_event_name":"PreToolUse"}`,
		`{"tool_input":[` + strings.Repeat(`[1],`, n) + `[[[1],{"k":[2]}]]],"tool_name":"mcp__a__b","hook_event_name":"PreToolUse"}`,
	} {
		got, err := Decode(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if got.ToolName != "mcp__a__b" || got.Event != "PreToolUse" {
			t.Errorf("got %+v", *got)
		}
	}
	for _, in := range []string{
		`{"tool_input":` + strings.Repeat("[", n) + strings.Repeat("]", n-1) + `}`,
		`{"tool_input":` + strings.Repeat("[", n) + strings.Repeat("}", n) + `}`,
		`{"tool_input":[{"a":1},{"b"}]}`, `{"tool_input":{"a":[1,}]}`, `{"tool_input":[1 2]}`,
	} {
		if _, err := Decode(strings.NewReader(in)); err == nil {
			t.Errorf("Decode(%.40q…) succeeded, want an error", in)
		}
	}
}

// Numbers in tool_input are checked against JSON's grammar with no length
// limit: a 66-digit number (valid JSON) once failed the decode and let a
// call to a dead server through unchecked.
func TestDecodeNumbers(t *testing.T) {
	long := strings.Repeat("1", 1<<20)
	for _, n := range []string{"0", "-0", "1", "-12", "1.5", "0.25e-3", "1E+9", "100000000000000000000000000000000000000000000000000000000000000000",
		long, "-" + long + "." + long + "e" + long} {
		p, err := Decode(strings.NewReader(`{"tool_input":[` + n + `,{"a":` + n + `}],"tool_name":"mcp__a__b"}`))
		if err != nil || p.ToolName != "mcp__a__b" {
			t.Errorf("%.40s…: %v %+v", n, err, p)
		}
	}
	for _, n := range []string{"-", "01", "1.", ".5", "1e", "1e+", "+1", "0x10", "Inf", "NaN", "1_000", "--1", "1.2.3", "tru", "nul", "falsey", "truex"} {
		if _, err := Decode(strings.NewReader(`{"tool_input":[` + n + `]}`)); err == nil {
			t.Errorf("Decode accepted the number %q", n)
		}
	}
}

// DecodeInput keeps tool_input's raw JSON (any shape, wherever the key
// sits) and hashes all of it; Decode keeps nothing of it.
func TestDecodeInput(t *testing.T) {
	for _, in := range []string{
		`{"a":[1,{"b":"x\"}y"}],"c":"\\","n":-1.5e3,"t":true,"z":null}`,
		`"just a string"`,
		`12`,
		`{}`,
	} {
		payload := `{"tool_name":"mcp__a__b","tool_input": ` + in + ` ,"hook_event_name":"PreToolUse"}`
		got, err := DecodeInput(strings.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		if got.Input != in || got.InputCut || got.ToolName != "mcp__a__b" || got.Event != "PreToolUse" {
			t.Errorf("DecodeInput(%s) = %+v", payload, *got)
		}
		plain, err := Decode(strings.NewReader(payload))
		if err != nil || plain.Input != "" {
			t.Errorf("Decode kept tool_input: %+v, %v", plain, err)
		}
	}
	big := `{"s":"` + strings.Repeat("x", MaxInputBytes) + `"}`
	got, err := DecodeInput(strings.NewReader(`{"tool_input":` + big + `}`))
	if err != nil || !got.InputCut || got.Input != "" || got.InputSum != sha256.Sum256([]byte(big)) {
		t.Errorf("an input over MaxInputBytes: cut %v, %d bytes kept, %v", got.InputCut, len(got.Input), err)
	}
}
