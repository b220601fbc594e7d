package jobs

import (
	"strings"
	"testing"
)

// TestHookTransport: hook_transport is auto when absent, one of auto,
// command, http when given, and anything else is a problem with its line.
func TestHookTransport(t *testing.T) {
	tests := []struct {
		top     string
		want    HookTransport
		wantErr string
	}{
		{"", HookAuto, ""},
		{"hook_transport: auto\n", HookAuto, ""},
		{"hook_transport: command\n", HookCommand, ""},
		{"hook_transport: http\n", HookHTTP, ""},
		{"hook_transport: HTTP\n", "", `:3: hook_transport: "HTTP" is not one of auto, command, http`},
		{"hook_transport: [http]\n", "", "hook_transport"},
	}
	for _, tt := range tests {
		t.Run(tt.top, func(t *testing.T) {
			sb := newSandbox(t)
			yaml := "version: 1\nname: t\n" + tt.top + "jobs:\n  - {name: a, prompt: hi}\n"
			b, err := Load(writeFile(t, sb.dir, "b.yaml", yaml), environ(sb.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.HookTransport != tt.want {
				t.Fatalf("HookTransport = %q, want %q", b.HookTransport, tt.want)
			}
		})
	}
}
