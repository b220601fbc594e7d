package hookexe

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o700); err != nil {
		t.Fatal(err)
	}
}

// TestPathFor: the sibling is named for the platform nightwatch runs on.
func TestPathFor(t *testing.T) {
	for _, tc := range []struct{ nightwatch, goos, want string }{
		{"/usr/local/bin/nightwatch", "linux", "/usr/local/bin/nightwatch-hook"},
		{"/Users/me/bin/nightwatch", "darwin", "/Users/me/bin/nightwatch-hook"},
		{filepath.Join("C:", "tools", "nightwatch.exe"), "windows", filepath.Join("C:", "tools", "nightwatch-hook.exe")},
	} {
		if got := PathFor(tc.nightwatch, tc.goos); got != tc.want {
			t.Errorf("PathFor(%q, %s) = %q, want %q", tc.nightwatch, tc.goos, got, tc.want)
		}
		// The hook hands calls to the nightwatch it was injected beside.
		if got := WholeFor(tc.want, tc.goos); got != tc.nightwatch {
			t.Errorf("WholeFor(%q, %s) = %q, want %q", tc.want, tc.goos, got, tc.nightwatch)
		}
	}
	if got, want := Path("/x/nightwatch"), PathFor("/x/nightwatch", runtime.GOOS); got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
}

// TestCheckHandoff: the whole hook says so when the hook executable that
// handed it a call is another build, and says nothing otherwise.
func TestCheckHandoff(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		says bool
	}{
		{"not handed on", nil, false},
		{"same build", map[string]string{HandoffEnv: ID()}, false},
		{"other build", map[string]string{HandoffEnv: "nightwatch-hook cache=v1/lines-0 protocol=1"}, true},
	} {
		msg := CheckHandoff(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		if (msg != "") != tc.says {
			t.Errorf("%s: %q", tc.name, msg)
		}
	}
}

// TestChoose: the night and install inject the sibling hook executable
// when it is the same build as nightwatch, and `nightwatch hook` with a
// note saying why when it is missing, is something else, or was built
// from other sources.
func TestChoose(t *testing.T) {
	nw := testkit.BuildNightwatch(t)
	hookBin := testkit.BuildHook(t)
	other := filepath.Join(t.TempDir(), "other")
	if err := os.WriteFile(other, []byte("#!/bin/sh\necho 'nightwatch-hook cache=v1/lines-0 protocol=1 rev=0000'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		sibling   string // copied beside nightwatch; "" none
		dedicated bool
		note      string
	}{
		{"same build", hookBin, true, ""},
		{"missing", "", false, "is missing"},
		{"another build", other, false, "was built from other sources"},
		{"not a hook", testkit.BuildTestServer(t), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "another build" && runtime.GOOS == "windows" {
				t.Skip("a shell script stands for another build")
			}
			dir := t.TempDir()
			self := filepath.Join(dir, filepath.Base(nw))
			copyFile(t, nw, self)
			if tc.sibling != "" {
				copyFile(t, tc.sibling, Path(self))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := choose(ctx, self, Path(self))
			if c.Dedicated != tc.dedicated {
				t.Fatalf("dedicated = %v (%+v)", c.Dedicated, c)
			}
			if tc.dedicated {
				if len(c.Argv) != 1 || c.Argv[0] != Path(self) || c.Note != "" {
					t.Errorf("choice = %+v, want the sibling alone", c)
				}
				return
			}
			if len(c.Argv) != 2 || c.Argv[0] != self || c.Argv[1] != "hook" {
				t.Errorf("fallback argv = %q, want [%s hook]", c.Argv, self)
			}
			if c.Note == "" || !strings.Contains(c.Note, tc.note) || !strings.Contains(c.Note, "hook` instead") {
				t.Errorf("note = %q, want it to say %q and what is injected instead", c.Note, tc.note)
			}
		})
	}
}

// TestHookAndSupervisorAgreeOnTheCache: the hook executable decides from
// entries the supervisor's Store wrote, and the Store reads what the hook
// executable wrote: the cache format round-trips both ways between the two
// binaries.
func TestHookAndSupervisorAgreeOnTheCache(t *testing.T) {
	hookBin := testkit.BuildHook(t)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache.json")
	store := &healthcheck.Store{Path: cache}
	now := time.Now()
	// Names the layout must escape, and a field of another tool.
	up, down := "up", `we"ird.server`
	err := store.Update(func(f *healthcheck.File) error {
		f.Servers[up] = &healthcheck.Entry{Status: healthcheck.StatusHealthy, CheckedAt: healthcheck.MillisOf(now),
			ExpiresAt: healthcheck.MillisOf(now.Add(time.Minute))}
		f.Servers[down] = &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, CheckedAt: healthcheck.MillisOf(now),
			NextRetryAt: healthcheck.MillisOf(now.Add(time.Minute)), LastFailureCode: healthcheck.CodeAuth, LastError: "HTTP 401"}
		for i := range 50 {
			f.Servers[fmt.Sprintf("filler-%02d", i)] = &healthcheck.Entry{Status: healthcheck.StatusHealthy}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	run := func(payload string) (int, string) {
		cmd := exec.Command(hookBin, "--state", cache, "--max-hold", "0")
		cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
		cmd.Stdin = strings.NewReader(payload)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, out.String()
	}
	pre := func(tool, server string) string {
		ms := ""
		if server != "" {
			ms = fmt.Sprintf(`,"mcp_server":{"name":%q,"source":"user"}`, server)
		}
		return fmt.Sprintf(`{"session_id":"s","cwd":%q,"hook_event_name":"PreToolUse","tool_name":%q%s,"tool_input":{}}`, dir, tool, ms)
	}
	for _, tc := range []struct {
		name, payload string
		code          int
		says          string
	}{
		{"store's healthy entry, 2.1.197 payload", pre("mcp__up__search", ""), 0, ""},
		{"store's healthy entry, 2.1.332 payload", pre("mcp__up__search", up), 0, ""},
		{"store's blocked entry", pre("mcp__we_ird_server__search", down), 2, "failing authentication (HTTP 401)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := run(tc.payload)
			if code != tc.code || !strings.Contains(out, tc.says) {
				t.Errorf("exit %d, want %d; output:\n%s", code, tc.code, out)
			}
		})
	}
	// The other way: the hook records a failed call, the Store reads it.
	code, out := run(fmt.Sprintf(`{"session_id":"s","cwd":%q,"hook_event_name":"PostToolUseFailure","tool_name":"mcp__up__search","mcp_server":{"name":"up","source":"user"},"tool_input":{},"error":"MCP error -32000: Connection closed"}`, dir))
	if code != 0 {
		t.Fatalf("PostToolUseFailure exit %d:\n%s", code, out)
	}
	f, err := store.Read()
	if err != nil {
		t.Fatal(err)
	}
	e := f.Entry(up)
	if e == nil || e.Status != healthcheck.StatusUnhealthy || len(f.Servers) != 52 || f.Entry(down).LastError != "HTTP 401" {
		t.Fatalf("after the hook's write the store reads %d servers, %q = %+v", len(f.Servers), up, e)
	}
	sn := store.Snapshot()
	if got := sn.Entry(up); got == nil || got.Status != healthcheck.StatusUnhealthy || got.LastError != e.LastError {
		t.Errorf("the hook's write is not in the layout a snapshot reads: %+v", got)
	}
}

// Kept keeps what the hot path reads of a payload, never more than
// MaxKept, and gives the whole payload back, byte for byte, however much
// of it the hot path read: a payload of MaxKept bytes or more stops the
// hot path's reading with ErrPayloadTooLarge.
func TestKeptIsBoundedAndWhole(t *testing.T) {
	for _, size := range []int{0, 10, MaxKept - 1, MaxKept, MaxKept + 1, 3*MaxKept + 17} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			payload := make([]byte, size)
			for i := range payload {
				payload[i] = byte('a' + i%26)
			}
			k := NewKept(bytes.NewReader(payload))
			// The hot path reads through a 64 KiB buffer to the end, or
			// until it is stopped.
			buf := make([]byte, 64<<10)
			read := 0
			var err error
			for err == nil {
				var n int
				n, err = k.Read(buf)
				read += n
			}
			tooLarge := size >= MaxKept
			if (err == ErrPayloadTooLarge) != tooLarge || (!tooLarge && err != io.EOF) {
				t.Errorf("read %d bytes, then %v", read, err)
			}
			if read > MaxKept || k.kept.Len() > MaxKept || k.kept.Len() != read {
				t.Errorf("read %d bytes, kept %d; at most %d", read, k.kept.Len(), MaxKept)
			}
			whole, err := io.ReadAll(k.Payload())
			if err != nil || !bytes.Equal(whole, payload) {
				t.Errorf("Payload gave %d bytes (%v), want the %d of the payload", len(whole), err, size)
			}
		})
	}
}
