package redact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		secrets []string
		want    string
	}{
		{
			name: "crashing server printing its env",
			in: "Error: connect ECONNREFUSED 127.0.0.1:5432\n" +
				"env: NODE_ENV=production OBSIDIAN_API_KEY=3f9a0c77d1e24b6f GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789\n" +
				"    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1607:16)",
			want: "Error: connect ECONNREFUSED 127.0.0.1:5432\n" +
				"env: NODE_ENV=production OBSIDIAN_API_KEY=[REDACTED] GITHUB_TOKEN=[REDACTED]\n" +
				"    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1607:16)",
		},
		{
			name: "curl error with a bearer token",
			in:   "curl -sS -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJsaWx5In0.c2lnbmF0dXJl' https://mcp.example.com/mcp\ncurl: (22) The requested URL returned error: 401",
			want: "curl -sS -H 'Authorization: Bearer [REDACTED]' https://mcp.example.com/mcp\ncurl: (22) The requested URL returned error: 401",
		},
		{
			name: "JSON body",
			in:   `{"jsonrpc":"2.0","params":{"client_secret":"s3cr3t value","refresh_token": "1//0gAbC-dEf","user":"lily","count":3}}`,
			want: `{"jsonrpc":"2.0","params":{"client_secret":"[REDACTED]","refresh_token": "[REDACTED]","user":"lily","count":3}}`,
		},
		{
			name:    "literal secrets, longest first, overlapping",
			in:      "token abcdef and abcd and cdef",
			secrets: []string{"abcd", "cdef", "abcdef", "ab"},
			want:    "token [REDACTED] and [REDACTED] and [REDACTED]",
		},
		{
			name:    "literal secret inside a word",
			in:      "pm2: unknown process hunter2-mcp",
			secrets: []string{"hunter2"},
			want:    "pm2: unknown process [REDACTED]-mcp",
		},
		{
			name:    "short secrets are ignored",
			in:      "on dev at 1",
			secrets: []string{"on", "dev", "1"},
			want:    "on dev at 1",
		},
		{
			name: "basic auth keeps the scheme word",
			in:   "GET /mcp Basic dXNlcjpwYXNzd29yZA== -> 403",
			want: "GET /mcp Basic [REDACTED] -> 403",
		},
		{
			name: "prose after Bearer is left alone",
			in:   "401 Unauthorized: missing Bearer token; Basic auth failed",
			want: "401 Unauthorized: missing Bearer token; Basic auth failed",
		},
		{
			name: "authorization header with an unknown scheme",
			in:   "> Authorization: Token 9a8b7c6d5e\n> Accept: */*",
			want: "> Authorization: Token [REDACTED]\n> Accept: */*",
		},
		{
			name: "authorization header without a scheme",
			in:   "Proxy-Authorization:abc123def",
			want: "Proxy-Authorization:[REDACTED]",
		},
		{
			name: "cookie header",
			in:   "Cookie: sid=abc123; theme=dark\nHost: x",
			want: "Cookie: [REDACTED]\nHost: x",
		},
		{
			name: "YAML style and quoted values",
			in:   "password: 'correct horse'\ndb_pwd: \"battery staple\"\nport: 5432",
			want: "password: '[REDACTED]'\ndb_pwd: \"[REDACTED]\"\nport: 5432",
		},
		{
			name: "URL userinfo and query parameters",
			in:   "GET https://lily:pa55w0rd@mcp.example.com/sse?token=abc123&api_key=def456&page=2 failed",
			want: "GET https://[REDACTED]@mcp.example.com/sse?token=[REDACTED]&api_key=[REDACTED]&page=2 failed",
		},
		{
			name: "query token inside a value of another key",
			in:   "url=https://h.example/cb?access_token=xyz789,next",
			want: "url=https://h.example/cb?access_token=[REDACTED],next",
		},
		{
			name: "flag with equals",
			in:   "exec mcp-server --api-key=zz99yy88 --port=8080",
			want: "exec mcp-server --api-key=[REDACTED] --port=8080",
		},
		{
			name: "token shapes",
			in: "a sk-ant-api03-AbCdEf_123 b sk-proj1234567890abcdefghij c github_pat_11ABCDEFG0123456789_abcdef " +
				"d xoxb-1234567890-abcdef e AKIAIOSFODNN7EXAMPLE f gho_0123456789abcdefghijKLMN",
			want: "a [REDACTED] b [REDACTED] c [REDACTED] d [REDACTED] e [REDACTED] f [REDACTED]",
		},
		{
			name: "token look-alikes are kept",
			in:   "task-ant-1 sk-short AKIA123 eyJ alone",
			want: "task-ant-1 sk-short AKIA123 eyJ alone",
		},
		{
			name: "private key block",
			in:   "loaded key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nBG5vbmUAAAAEbm9uZQ==\n-----END OPENSSH PRIVATE KEY-----\ndone",
			want: "loaded key:\n-----BEGIN OPENSSH PRIVATE KEY-----[REDACTED]-----END OPENSSH PRIVATE KEY-----\ndone",
		},
		{
			name: "private key block cut short",
			in:   "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
			want: "-----BEGIN PRIVATE KEY-----[REDACTED]",
		},
		{
			name: "nothing to redact",
			in:   "server obsidian exited with status 1: Cannot find module 'express'",
			want: "server obsidian exited with status 1: Cannot find module 'express'",
		},
		{
			name:    "secret that is part of the marker",
			in:      "value EDAC here",
			secrets: []string{"EDAC"},
			want:    "value *** here",
		},
		{
			name:    "secret formed across a marker's edge",
			in:      "xyz-SECRET!",
			secrets: []string{"SECRET", "ED]!"},
			want:    "xyz-[REDACTED]",
		},
		{
			name:    "crafted cascade is withheld whole",
			in:      "ok SECRET" + strings.Repeat("]", 20),
			secrets: []string{"SECRET", "ED]]"},
			want:    "[REDACTED]",
		},
		{
			name: "scheme word as the value of a sensitive key",
			in:   "AUTH_HEADER=Bearer abc123xyz",
			want: "AUTH_HEADER=Bearer [REDACTED]",
		},
		{
			name: "401 prose keeps its words",
			in:   "HTTP 401 Unauthorized: token expired",
			want: "HTTP 401 Unauthorized: token expired",
		},
		{name: "empty", in: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := String(tt.in, tt.secrets...)
			if got != tt.want {
				t.Errorf("String(%q)\n got: %q\nwant: %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSensitiveName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"OBSIDIAN_API_KEY", true},
		{"github_token", true},
		{"Client-Secret", true},
		{"DB_PASSWORD", true},
		{"MYSQL_PWD", true},
		{"passwd", true},
		{"Authorization", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", true},
		{"Set-Cookie", true},
		{"SESSION_ID", true},
		{"PATH", false},
		{"HOME", false},
		{"NODE_ENV", false},
		{"PORT", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := SensitiveName(tt.name); got != tt.want {
			t.Errorf("SensitiveName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestTail(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"fits", "hello", 5, "hello"},
		{"cut", "hello world", 8, "…world"},
		{"cut on a rune boundary", "aé日本語", 8, "…語"},
		{"tiny max drops the ellipsis", "abcdef", 2, "ef"},
		{"zero", "abc", 0, ""},
		{"negative", "abc", -1, ""},
		{"invalid UTF-8 does not eat the tail", "ab" + strings.Repeat("\x80", 10), 8, "…\x80\x80"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Tail(tt.in, tt.max)
			if got != tt.want {
				t.Errorf("Tail(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
			if tt.max >= 0 && len(got) > tt.max {
				t.Errorf("Tail(%q, %d) is %d bytes, over the bound", tt.in, tt.max, len(got))
			}
		})
	}
}

// hostileInput is a secret followed by 200 000 bytes that each begin a
// partial match of the other secret: a redactor quadratic in it would take
// minutes (BenchmarkStringHostileLargeInput measures it).
func hostileInput() string { return "SECRET" + strings.Repeat("]", 200_000) }

func TestStringOnHostileLargeInput(t *testing.T) {
	text := hostileInput()
	out := String(text, "SECRET", "ED]]")
	if strings.Contains(out, "SECRET") || strings.Contains(out, "ED]]") {
		t.Errorf("output still holds a secret: %q", Tail(out, 80))
	}
}

// BenchmarkStringHostileLargeInput: linear on hostile input; on a quiet
// machine well under a second an operation.
func BenchmarkStringHostileLargeInput(b *testing.B) {
	text := hostileInput()
	for b.Loop() {
		String(text, "SECRET", "ED]]")
	}
}

// BenchmarkString: a few KB of log with secrets, what the hook and the
// journal redact on every line; on a quiet machine well under 1 ms.
func BenchmarkString(b *testing.B) {
	text := strings.Repeat("worker 3: GET /mcp 200 in 12ms, API_KEY=abcdef123456 Bearer tok_0123456789\n", 60) // ~4.5 KB
	for b.Loop() {
		String(text, "abcdef123456", "tok_0123456789", "some-other-value")
	}
}

func FuzzString(f *testing.F) {
	f.Add("API_KEY=abcd1234 Bearer xyz", "abcd1234", "xyz")
	f.Add("aaaaaaaa", "aaaa", "aaa")
	f.Add("[REDACTED]", "REDACTED", "EDAC")
	f.Add("xyz-SECRET!", "SECRET", "D]!")
	f.Add("https://u:p@h?token=1&x=2", "u:p@", "oken")
	f.Add("-----BEGIN RSA PRIVATE KEY-----\nabc", "RSA ", "\n")
	f.Add("日本語のテキスト", "本語の", "テキ")
	f.Fuzz(func(t *testing.T, text, secret1, secret2 string) {
		out := String(text, secret1, secret2)
		for _, secret := range []string{secret1, secret2} {
			if len(secret) >= MinSecretLen && strings.Contains(out, secret) {
				t.Fatalf("String(%q, %q, %q) = %q still contains %q", text, secret1, secret2, out, secret)
			}
		}
		if utf8.ValidString(text) && !utf8.ValidString(out) && utf8.ValidString(secret1) && utf8.ValidString(secret2) {
			t.Fatalf("String(%q, %q, %q) = %q is not valid UTF-8", text, secret1, secret2, out)
		}
		for _, max := range []int{0, 3, 7, len(out) / 2} {
			if tail := Tail(out, max); len(tail) > max {
				t.Fatalf("Tail(%q, %d) = %q is over the bound", out, max, tail)
			}
		}
	})
}
