package modelapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The check asks /v1/messages without credentials, and any answer below
// 500 is an API that answers.
func TestCheckAPI(t *testing.T) {
	tests := []struct {
		name   string
		status int
		ok     bool
		why    string
	}{
		{"401 without a key: up", http.StatusUnauthorized, true, ""},
		{"400 without a model: up", http.StatusBadRequest, true, ""},
		{"529 overloaded: down", 529, false, "the API answered 529"},
		{"503: down", http.StatusServiceUnavailable, false, "the API answered 503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
					t.Errorf("%s %s, want POST /v1/messages", r.Method, r.URL.Path)
				}
				if r.Header.Get("x-api-key") != "" || r.Header.Get("authorization") != "" {
					t.Error("the check sent credentials")
				}
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			ok, why := Check(context.Background(), srv.URL)
			if ok != tt.ok || why != tt.why {
				t.Errorf("Check = %v, %q; want %v, %q", ok, why, tt.ok, tt.why)
			}
		})
	}
	t.Run("unreachable: down", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		base := srv.URL
		srv.Close()
		if ok, why := Check(context.Background(), base); ok || why == "" {
			t.Errorf("Check of a closed server = %v, %q; want false and why", ok, why)
		}
	})
}

func TestAPIBase(t *testing.T) {
	tests := []struct {
		env  []string
		want string
	}{
		{nil, "https://api.anthropic.com"},
		{[]string{"ANTHROPIC_BASE_URL=  "}, "https://api.anthropic.com"},
		{[]string{"ANTHROPIC_BASE_URL= http://127.0.0.1:8080/ "}, "http://127.0.0.1:8080"},
	}
	for _, tt := range tests {
		if got := Base(tt.env); got != tt.want {
			t.Errorf("Base(%q) = %q, want %q", strings.Join(tt.env, " "), got, tt.want)
		}
	}
}
