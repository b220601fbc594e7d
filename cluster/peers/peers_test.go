package peers

import (
	"strings"
	"testing"
)

func TestParseRequest(t *testing.T) {
	ok := []string{
		`{"op":"ping"}`,
		`{"op":"claim","server":"notes","kind":"probe","ttl_ms":15000}`,
		`{"op":"release","server":"notes","kind":"trial","token":"abc"}`,
	}
	for _, l := range ok {
		if _, err := ParseRequest([]byte(l)); err != nil {
			t.Errorf("%s: %v", l, err)
		}
	}
	bad := []string{
		``, `null`, `[]`, `{"op":"claim"}`, `{"op":"rm -rf"}`,
		`{"op":"claim","server":"notes","kind":"probe"}`,
		`{"op":"claim","server":"notes","kind":"probe","ttl_ms":-1}`,
		`{"op":"claim","server":"notes","kind":"probe","ttl_ms":99999999999}`,
		`{"op":"claim","server":"notes","kind":"lock","ttl_ms":1}`,
		`{"op":"claim","server":"","kind":"probe","ttl_ms":1}`,
		`{"op":"release","server":"notes","kind":"probe"}`,
		`{"op":"ping","extra":1}`,
		`{"op":"ping"} {"op":"ping"}`,
		`{"op":"claim","server":"` + strings.Repeat("x", 600) + `","kind":"probe","ttl_ms":1}`,
		strings.Repeat(" ", MaxLine+1),
	}
	for _, l := range bad {
		if r, err := ParseRequest([]byte(l)); err == nil {
			t.Errorf("%.60s: accepted as %+v", l, r)
		}
	}
}

// FuzzParseRequest: no line makes the parser panic, and what it accepts
// is within the protocol's limits.
//
//	go test -run '^$' -fuzz FuzzParseRequest -fuzztime 30s ./cluster/peers/
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"op":"claim","server":"notes","kind":"probe","ttl_ms":15000}`))
	f.Add([]byte(`{"op":"release","server":"notes","kind":"trial","token":"abc"}`))
	f.Add([]byte(`{"op":"ping"}`))
	f.Add([]byte(`{"op":"claim","server":"\u0000","kind":"probe","ttl_ms":1e400}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseRequest(line)
		if err != nil {
			return
		}
		switch r.Op {
		case OpPing:
		case OpClaim, OpRelease:
			if r.Server == "" || len(r.Server) > MaxServer || (r.Kind != "probe" && r.Kind != "trial") {
				t.Fatalf("accepted %+v", r)
			}
			if r.Op == OpClaim && (r.TTLMs <= 0 || r.TTLMs > MaxTTL.Milliseconds()) {
				t.Fatalf("accepted ttl %d", r.TTLMs)
			}
		default:
			t.Fatalf("accepted op %q", r.Op)
		}
	})
}
