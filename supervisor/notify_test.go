package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/rs/zerolog"
)

// A session's failure text reaches the console summary, the notify
// command's stdin and the webhook: each gets it redacted (an env_file
// value echoed by the agent), without terminal escapes, and the webhook
// without Slack's control sequences (<!channel>, disguised links).
func TestNotifyAndSummaryCarryOutsideTextSafely(t *testing.T) {
	const secret = "envfile-secret-value-4242"
	d := t.TempDir()
	var got atomic.Value
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Text string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		got.Store(body.Text)
	}))
	defer hook.Close()
	agent := filepath.Join(d, "agent")
	hostile := `token ` + secret + ` <!channel> <https://evil.example|the docs> ` + "\x1b[2J\x1b[31mred"
	if err := os.WriteFile(agent, []byte(fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' %q >&2\nexit 3\n", hostile)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "night.env"), []byte("SOME_TOKEN="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	received := filepath.Join(d, "received")
	sink := filepath.Join(d, "sink.sh")
	if err := os.WriteFile(sink, []byte("#!/bin/sh\ncat > \"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	b := testkit.LoadBatch(t, d, fmt.Sprintf("version: 1\nname: hostile\nstate_dir: ./state\nenv_file: night.env\nagent: {command: %s}\n"+
		"notify: {webhook: %s, command: [%s, %s]}\njobs:\n  - {name: a, prompt: a, retries: 0}\n",
		jsonString(agent), jsonString(hook.URL), jsonString(sink), jsonString(received)))
	s := runScripted(t, b, nil)
	if s.Failed != 1 {
		t.Fatalf("want the job failed, got %+v", s.Jobs)
	}
	var console bytes.Buffer
	PrintSummary(&console, s)
	cmdText, _ := os.ReadFile(received)
	webhook, _ := got.Load().(string)
	for name, out := range map[string]string{"console": console.String(), "command": string(cmdText), "webhook": webhook} {
		if !strings.Contains(out, "exit 3") {
			t.Errorf("%s: the failure is not there:\n%s", name, out)
		}
		if strings.Contains(out, secret) {
			t.Errorf("%s shows the env_file value:\n%s", name, out)
		}
		if strings.Contains(out, "\x1b") {
			t.Errorf("%s carries a terminal escape: %q", name, out)
		}
	}
	if strings.Contains(webhook, "<!channel>") || strings.Contains(webhook, "<https://") || !strings.Contains(webhook, "&lt;!channel&gt;") {
		t.Errorf("the webhook passes Slack's control sequences: %q", webhook)
	}
}

// A state folder another user can write into is tightened and said; a
// planted link where the journals go stops the night before it writes.
func TestNightRefusesALooseStateFolder(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows folders carry ACLs, not mode bits")
	}
	d := t.TempDir()
	state := filepath.Join(d, "state")
	if err := os.MkdirAll(state, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o777); err != nil {
		t.Fatal(err)
	}
	b := testkit.LoadBatch(t, d, fmt.Sprintf("version: 1\nname: loose\nstate_dir: ./state\nagent: {command: %s}\njobs:\n  - {name: a, prompt: a}\n",
		jsonString(scriptedAgent(t, d, "0.1"))))
	s := runScripted(t, b, nil)
	if fi, _ := os.Stat(state); !s.AllDone() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("done %v, state folder mode %v", s.AllDone(), fi.Mode())
	}
	elsewhere := t.TempDir()
	if err := os.RemoveAll(filepath.Join(state, "runs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(state, "runs")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := RunNight(ctx, b, NightOptions{Binary: "/bin/true", Env: os.Environ(), LogWriter: zerolog.NewTestWriter(t)})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("a planted runs link: %v", err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("the night wrote into the planted folder: %v", entries)
	}
}
