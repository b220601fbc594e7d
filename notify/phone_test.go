package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/rs/zerolog"
)

// TestNotifyReachesAPhone is the README's ntfy example with the host
// swapped for a local one: the topic comes from the env_file, and the push
// service gets its template (tpl, title, m={{.text}}) in the query and the
// summary as the body's text, which ntfy makes the notification's message.
func TestNotifyReachesAPhone(t *testing.T) {
	const topic = "nightwatch-7f3k9q2xw8"
	type got struct {
		path string
		q    url.Values
		text string
	}
	ch := make(chan got, 1)
	ntfy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Text string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		ch <- got{r.URL.Path, r.URL.Query(), body.Text}
	}))
	defer ntfy.Close()
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "night.env"), []byte("NTFY_TOPIC="+topic+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable() // an agent that exists on every platform; it never runs
	if err != nil {
		t.Fatal(err)
	}
	// As in the README, but for the host.
	webhook := strings.Replace(`"https://ntfy.sh/${NTFY_TOPIC}?tpl=1&t=nightwatch&m={{.text}}"`, "https://ntfy.sh", ntfy.URL, 1)
	path := filepath.Join(d, "batch.yaml")
	quoted, _ := json.Marshal(self)
	if err := os.WriteFile(path, fmt.Appendf(nil, "version: 1\nname: phone\nstate_dir: ./state\nenv_file: night.env\nagent: {command: %s}\n"+
		"notify:\n  webhook: %s\njobs:\n  - {name: a, prompt: a}\n", quoted, webhook), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := jobs.Load(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if errs := Send(context.Background(), b.Notify, "nightwatch: batch phone finished\n\n1 done", zerolog.Nop()); len(errs) > 0 {
		t.Fatal(errs)
	}
	g := <-ch
	if g.path != "/"+topic || g.q.Get("tpl") != "1" || g.q.Get("t") != "nightwatch" || g.q.Get("m") != "{{.text}}" {
		t.Errorf("the push service got %s ?%v, want /%s with the template", g.path, g.q, topic)
	}
	if !strings.Contains(g.text, "batch phone finished") {
		t.Errorf("body text %q", g.text)
	}
}
