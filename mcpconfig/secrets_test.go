package mcpconfig

import (
	"slices"
	"testing"
)

func TestServerSecrets(t *testing.T) {
	s := &Server{
		Env:     map[string]string{"NOTES_API_KEY": "sk-notes-123456"},
		Headers: map[string]string{"Authorization": " Bearer tok-987654 ", "X-Plain": "plainvalue"},
	}
	got := s.Secrets()
	for _, want := range []string{"sk-notes-123456", " Bearer tok-987654 ", "tok-987654", "plainvalue"} {
		if !slices.Contains(got, want) {
			t.Errorf("Secrets() = %q lacks %q", got, want)
		}
	}
	if len((&Server{}).Secrets()) != 0 {
		t.Error("a server without env or headers has no secrets")
	}
}
