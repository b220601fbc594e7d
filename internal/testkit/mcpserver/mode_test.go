package mcpserver

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestParseMode(t *testing.T) {
	tests := []struct {
		in   string
		want Mode
	}{
		{"", Mode{}},
		{"healthy", Mode{}},
		{"exit-at-start", Mode{ExitAtStart: true}},
		{"exit-during-handshake", Mode{ExitDuringHandshake: true}},
		{"require-env=NOTES_API_KEY", Mode{RequireEnv: "NOTES_API_KEY"}},
		{"never-answer", Mode{NeverAnswer: true}},
		{"slow-start=1.5s", Mode{SlowStart: 1500 * time.Millisecond}},
		{"noisy-stdout, ignore-sigterm", Mode{NoisyStdout: true, IgnoreSIGTERM: true}},
		{"linger\nspawn-child\n", Mode{Linger: true, SpawnChild: true}},
		{"discover-only", Mode{DiscoverOnly: true}},
		{"legacy", Mode{Legacy: true}},
		{"ignore-discover,die-on-discover", Mode{IgnoreDiscover: true, DieOnDiscover: true}},
		{"slow-handshake=8s", Mode{SlowHandshake: 8 * time.Second}},
		{"401", Mode{Status: 401}},
		{"406,rpc-body", Mode{Status: 406, RPCBody: true}},
		{"429", Mode{Status: 429, RetryAfter: "7"}},
		{"429=120", Mode{Status: 429, RetryAfter: "120"}},
		{"429=date+60", Mode{Status: 429, RetryAfterDate: time.Minute}},
		{"hang", Mode{Hang: true}},
		{"html", Mode{HTML: true}},
		{"require-header=Authorization:Bearer abc", Mode{RequireHeader: "Authorization", RequireValue: "Bearer abc"}},
		{" require-header=X-Api-Key:k1 ,, healthy ", Mode{RequireHeader: "X-Api-Key", RequireValue: "k1"}},
	}
	for _, tt := range tests {
		got, err := ParseMode(tt.in)
		if err != nil {
			t.Errorf("ParseMode(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseMode(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestParseModeErrors(t *testing.T) {
	for _, in := range []string{
		"helthy", "exit-at-start=1", "require-env", "require-env=", "slow-start=fast", "slow-start=-1s",
		"require-header=NoColon", "slow-handshake", "slow-handshake=later", "legacy=1", "require-header=:v", "429=soon", "429=date+x", "401=2", "99", "600",
	} {
		if m, err := ParseMode(in); err == nil {
			t.Errorf("ParseMode(%q) = %+v, want an error", in, m)
		}
	}
}

func TestControlFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mode")
	fallback := Mode{NoisyStdout: true}
	var reported []error
	modes := ControlFile(path, fallback, func(err error) { reported = append(reported, err) })

	steps := []struct {
		content *string
		want    Mode
	}{
		{nil, fallback}, // no file yet
		{ptr("503"), Mode{Status: 503}},
		{ptr("  \n"), fallback},
		{ptr("no-such-mode"), fallback},
		{ptr("hang"), Mode{Hang: true}},
	}
	for _, step := range steps {
		if step.content != nil {
			if err := os.WriteFile(path, []byte(*step.content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := modes(); !reflect.DeepEqual(got, step.want) {
			t.Errorf("content %v: mode %+v, want %+v", step.content, got, step.want)
		}
	}
	if len(reported) != 1 || errors.Unwrap(reported[0]) == nil {
		t.Errorf("reported %v, want the one bad file", reported)
	}
}

func ptr(s string) *string { return &s }
