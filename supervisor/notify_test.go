package supervisor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
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
	b := loadNight(t, d, fmt.Sprintf("version: 1\nname: hostile\nstate_dir: ./state\nenv_file: night.env\nagent: {command: %s}\n"+
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
