package jobs

import "testing"

// The night's fields for a failing API: api_retries, resume, keep_awake.
func TestLoadAPIFields(t *testing.T) {
	sb := newSandbox(t)
	tests := []struct {
		name, yaml        string
		retries           int
		resume, keepAwake bool
		wantErr           bool
	}{
		{"defaults", "", DefaultAPIRetries, true, true, false},
		{"set", "api_retries: 5\nresume: false\nkeep_awake: false\n", 5, false, false, false},
		{"no CLI retries", "api_retries: 0\n", 0, true, true, false},
		{"too many", "api_retries: 1000\n", 0, false, false, true},
		{"negative", "api_retries: -1\n", 0, false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, sb.dir, "b.yaml", "version: 1\nname: b\n"+tt.yaml+"jobs:\n  - {name: only, prompt: hi}\n")
			b, err := Load(path, environ(sb.env))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("loaded %+v, want an error", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.APIRetries != tt.retries || b.Resume != tt.resume || b.KeepAwake != tt.keepAwake {
				t.Errorf("api_retries %d resume %v keep_awake %v, want %d %v %v", b.APIRetries, b.Resume, b.KeepAwake,
					tt.retries, tt.resume, tt.keepAwake)
			}
		})
	}
}
