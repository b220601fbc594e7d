package redact

import (
	"bytes"
	"strings"
	"testing"
)

// The night's log writer: a preflight line of a crashing server, written
// as zerolog writes it (one JSON line per Write, or in pieces), loses every
// remembered key, a key with a quote in it included (JSON escapes it).
func TestWriterRedactsEveryLine(t *testing.T) {
	t.Cleanup(forgetAll)
	forgetAll()
	Remember("betaH4n6Vc1Ds8Pq3Wy7", `quo"te\back1234`)
	var out bytes.Buffer
	w := NewWriter(&out)
	line := `{"level":"info","server":"alpha","reason":"exited (exit status 1): config beta_api_key is betaH4n6Vc1Ds8Pq3Wy7, other quo\"te\\back1234","message":"preflight"}` + "\n"
	if n, err := w.Write([]byte(line)); err != nil || n != len(line) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	// The same line in three pieces, the key cut across two of them.
	cut := strings.Index(line, "Vc1Ds")
	for _, piece := range []string{line[:cut], line[cut : cut+3], line[cut+3:]} {
		if _, err := w.Write([]byte(piece)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Write([]byte("no newline yet betaH4n6Vc1Ds8Pq3Wy7")); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "no newline yet") {
		t.Errorf("a partial line was written before its end: %q", out.String())
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, leak := range []string{"betaH4n6Vc1Ds8Pq3Wy7", `quo\"te\\back1234`, "Vc1Ds8"} {
		if strings.Contains(got, leak) {
			t.Errorf("the written log holds %q:\n%s", leak, got)
		}
	}
	if strings.Count(got, `"message":"preflight"`) != 2 || !strings.Contains(got, "no newline yet "+Marker) {
		t.Errorf("the lines did not come through whole:\n%s", got)
	}
}
