package launch

import (
	"slices"
	"testing"
	"time"
)

func TestEnvironmentIsBasePlusKept(t *testing.T) {
	env := []string{"PATH=/bin", "HOME=/h", "NOTES_API_KEY=notes-key", "OTHER_TOKEN=other", "ANTHROPIC_API_KEY=sk-ant", "EMPTY="}
	got := Environment(env, []string{"NOTES_API_KEY", "EMPTY", "UNSET", "PATH"})
	want := []string{"PATH=/bin", "HOME=/h", "NOTES_API_KEY=notes-key", "EMPTY="}
	if !slices.Equal(got, want) {
		t.Errorf("Environment = %q, want %q", got, want)
	}
}

func TestParseKeepAndArgs(t *testing.T) {
	names, err := ParseKeep("A,B_2,A")
	if err != nil || !slices.Equal(names, []string{"A", "B_2"}) {
		t.Errorf("ParseKeep = %q, %v", names, err)
	}
	for _, bad := range []string{"A,,B", "1A", "A=B", "A B", "$(x)"} {
		if _, err := ParseKeep(bad); err == nil {
			t.Errorf("ParseKeep(%q) accepted", bad)
		}
	}
	if got := Args("notes", []string{"K"}, Bounds{}, []string{"npx", "-y", "srv"}); !slices.Equal(got, []string{"exec-server", "--server", "notes", "--keep", "K", "--", "npx", "-y", "srv"}) {
		t.Errorf("Args = %q", got)
	}
	if got := Args("notes", nil, Bounds{NoHang: true}, []string{"srv", "--no-hang-check"}); !slices.Equal(got, []string{"exec-server", "--server", "notes", "--no-hang-check", "--", "srv", "--no-hang-check"}) {
		t.Errorf("Args with bounds = %q", got)
	}
}

// A server's restart: bounds become exec-server's flags; what the batch
// left unwritten is left to exec-server's defaults.
func TestBoundsFlags(t *testing.T) {
	zero, three := 0, 3
	tests := []struct {
		name string
		b    Bounds
		want []string
	}{
		{"defaults", Bounds{}, nil},
		{"never restarted", Bounds{Restarts: &zero}, []string{"--restarts", "0"}},
		{"all", Bounds{Restarts: &three, Within: 5 * time.Minute, HangAfter: 10 * time.Minute, PingTimeout: 30 * time.Second},
			[]string{"--restarts", "3", "--window", "5m0s", "--hang-after", "10m0s", "--ping-timeout", "30s"}},
		{"hang check off wins over a bound", Bounds{HangAfter: time.Minute, NoHang: true}, []string{"--no-hang-check"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.Flags(); !slices.Equal(got, tt.want) {
				t.Errorf("Flags = %q, want %q", got, tt.want)
			}
		})
	}
}
