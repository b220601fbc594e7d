package report

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// The HTML report in a real headless browser (Chromium), at a desktop's
// width and a phone's: the page never scrolls sideways (a 300-character
// word in a verify's output included), no cell reaches past the screen's
// edge, every text is at least minFontPX on screen (the timeline's labels
// too: on a phone the timeline keeps its width and scrolls in its own box),
// and the reconnect's own words are on the page. The screenshots are kept
// for a person to look at: in $NIGHTWATCH_SCREENSHOTS when set, else in a
// folder kept when the test fails; the test logs their paths.
//
// The browser is Chromium (chromium, chromium-browser, google-chrome, or
// $NIGHTWATCH_CHROMIUM); scripts/test.sh installs it. Without one the test
// fails, saying how to install it: a layout nobody checked is not a pass.

// minFontPX is the smallest text the page may show, in CSS pixels.
const minFontPX = 10

// The widths the page is checked at: a laptop's window and a phone's
// (an iPhone 12–15 is 390 CSS pixels wide).
var browserWidths = []struct {
	name          string
	width, height int
}{
	{"desktop", 1280, 2200},
	{"phone", 390, 2600},
}

// measureScript is added to a copy of the page (the report itself runs no
// script): once laid out, it writes what the test asserts into the DOM,
// which Chromium's --dump-dom prints.
const measureScript = `<script>
addEventListener('load', () => {
  const vw = window.innerWidth;
  let minFont = 1e9, minWhere = '', texts = 0;
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const t = walk.currentNode, el = t.parentElement;
    if (!t.textContent.trim() || el.closest('title, script')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    let px = parseFloat(getComputedStyle(el).fontSize);
    if (el instanceof SVGElement) { const m = el.getScreenCTM(); if (m) px *= Math.hypot(m.a, m.b); }
    texts++;
    if (px < minFont) { minFont = px; minWhere = el.tagName + ' "' + t.textContent.trim().slice(0, 40) + '"'; }
  }
  const clipped = [];
  document.querySelectorAll('td, li, p, pre, h1, h2, .timeline').forEach(e => {
    const r = e.getBoundingClientRect();
    if (r.right > vw + 0.5 || r.left < -0.5) clipped.push(e.tagName + ' "' + e.textContent.trim().slice(0, 50) + '" right=' + Math.round(r.right));
  });
  const out = {viewport: vw, scrollWidth: document.documentElement.scrollWidth, minFont, minWhere, texts, clipped,
    text: document.body.innerText};
  const pre = document.createElement('pre');
  pre.id = 'nw-measure';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>`

// minWindow is the narrowest window headless Chromium makes.
const minWindow = 500

// frameHTML shows a page in a frame of a phone's width (%d×%d px): the
// page, and a script.
const frameHTML = `<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">
<iframe id="f" src="%[3]s" style="border:0;display:block;width:%[1]dpx;height:%[2]dpx"></iframe>%[4]s</body></html>`

// frameScript copies the framed page's measurements into the outer page,
// which --dump-dom prints (Chromium runs with --allow-file-access-from-files,
// so the two files may see each other).
const frameScript = `<script>
document.getElementById('f').addEventListener('load', () => {
  const m = document.getElementById('f').contentDocument.getElementById('nw-measure');
  const pre = document.createElement('pre');
  pre.id = 'nw-measure';
  pre.textContent = m ? m.textContent : '{}';
  document.body.appendChild(pre);
});
</script>`

type layout struct {
	Viewport    float64  `json:"viewport"`
	ScrollWidth float64  `json:"scrollWidth"`
	MinFont     float64  `json:"minFont"`
	MinWhere    string   `json:"minWhere"`
	Texts       int      `json:"texts"`
	Clipped     []string `json:"clipped"`
	Text        string   `json:"text"`
}

func TestHTMLInHeadlessBrowser(t *testing.T) {
	browser := findChromium(t)
	out := screenshotDir(t)
	n := hardNight(t)
	var page strings.Builder
	if err := n.HTML(&page); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(out, "report.html")
	measured := filepath.Join(out, "report-measure.html")
	writeFile(t, html, page.String())
	writeFile(t, measured, strings.Replace(page.String(), "</body>", measureScript+"\n</body>", 1))

	reconnectWords := "could not bind 127.0.0.1:8123: address already in use"
	for _, w := range browserWidths {
		t.Run(w.name, func(t *testing.T) {
			// Headless Chromium's window is at least 500 px wide: a
			// phone's width is a frame of that width in a page of its own,
			// whose script hands the frame's measurements out.
			window, shown, measure := w.width, html, measured
			if w.width < minWindow {
				window = minWindow
				shown = filepath.Join(out, fmt.Sprintf("frame-%d.html", w.width))
				measure = filepath.Join(out, fmt.Sprintf("frame-%d-measure.html", w.width))
				writeFile(t, shown, fmt.Sprintf(frameHTML, w.width, w.height, "report.html", ""))
				writeFile(t, measure, fmt.Sprintf(frameHTML, w.width, w.height, "report-measure.html", frameScript))
			}
			png := filepath.Join(out, fmt.Sprintf("report-%s-%d.png", w.name, w.width))
			chromium(t, browser, out, window, w.height, "--screenshot="+png, string(fileURL(shown)))
			if fi, err := os.Stat(png); err != nil || fi.Size() == 0 {
				t.Fatalf("no screenshot %s: %v", png, err)
			}
			t.Logf("screenshot at %d px: %s", w.width, png)

			dom := chromium(t, browser, out, window, w.height, "--dump-dom", string(fileURL(measure)))
			m := regexp.MustCompile(`(?s)<pre id="nw-measure">(.*?)</pre>`).FindStringSubmatch(dom)
			if m == nil {
				t.Fatalf("the page's measurements are not in the DOM Chromium printed:\n%.2000s", dom)
			}
			var l layout
			if err := json.Unmarshal([]byte(unescapeHTML(m[1])), &l); err != nil {
				t.Fatalf("measurements %q: %v", m[1], err)
			}
			if l.Viewport != float64(w.width) {
				t.Fatalf("the browser laid the page out %v px wide, want %d (is --window-size honoured?)", l.Viewport, w.width)
			}
			if l.ScrollWidth > l.Viewport {
				t.Errorf("the page is %v px wide in a %v px window: it scrolls sideways", l.ScrollWidth, l.Viewport)
			}
			for _, c := range l.Clipped {
				t.Errorf("reaches past the screen's edge: %s", c)
			}
			if l.Texts < 50 || l.MinFont < minFontPX {
				t.Errorf("smallest text %.1f px (%s) of %d texts, want at least %d px", l.MinFont, l.MinWhere, l.Texts, minFontPX)
			}
			for _, want := range []string{"What to do now", reconnectWords, "nightwatch rerun", "×4", "final message", "changed: /home/op/projects/quarterly-research"} {
				if !strings.Contains(l.Text, want) {
					t.Errorf("the page a reader sees lacks %q", want)
				}
			}
		})
	}
}

// chromium runs the headless browser at a window of width×height on url
// and returns what it printed.
func chromium(t *testing.T, browser, dir string, width, height int, args ...string) string {
	t.Helper()
	argv := append([]string{browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--no-first-run", "--disable-extensions", "--allow-file-access-from-files", "--user-data-dir=" + filepath.Join(dir, "profile"),
		"--force-device-scale-factor=1", "--virtual-time-budget=3000",
		fmt.Sprintf("--window-size=%d,%d", width, height)}, args...)
	// Its output goes to files, not pipes: a helper process Chromium
	// leaves behind a moment holds a pipe open, and the group is killed at
	// the end anyway (proc.Wait).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stdout, stderr := filepath.Join(dir, "chromium.out"), filepath.Join(dir, "chromium.err")
	cmd := proc.Command(ctx, append(os.Environ(), "HOME="+dir), proc.DefaultGrace, argv[0], argv[1:]...)
	outF, err := os.Create(stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer outF.Close()
	errF, err := os.Create(stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer errF.Close()
	cmd.Stdout, cmd.Stderr = outF, errF
	if err := proc.Start(cmd); err != nil {
		t.Fatalf("%s: %v", argv[0], err)
	}
	if err := proc.Wait(cmd); err != nil {
		msg, _ := os.ReadFile(stderr)
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, msg)
	}
	out, err := os.ReadFile(stdout)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// findChromium is the headless browser's path; the test fails without one.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("NIGHTWATCH_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no headless browser to check the HTML report's layout: install Chromium " +
		"(Debian/Ubuntu: apt-get install -y chromium; scripts/test.sh does it when run as root) " +
		"or set NIGHTWATCH_CHROMIUM to a Chrome or Chromium binary")
	return ""
}

// screenshotDir is where the page and its screenshots go: the folder
// $NIGHTWATCH_SCREENSHOTS names, else a temporary one removed only when
// the test passed.
func screenshotDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("NIGHTWATCH_SCREENSHOTS"); d != "" {
		d = filepath.Join(d, t.Name())
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d, err := os.MkdirTemp("", "nightwatch-report-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kept for a look: %s", d)
			return
		}
		_ = os.RemoveAll(d)
	})
	return d
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

var htmlEntities = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#39;", "'", "&amp;", "&")

func unescapeHTML(s string) string { return htmlEntities.Replace(s) }

// hardNight is a night whose report is hard to lay out: a server down all
// night whose reconnect failed with a long message of its own, a job
// deferred four times for the same reason then skipped, a job retried after
// the same failure whose verify printed a 300-character word, one skipped
// because it needed that one, one done without a server, one done and
// verified with its final message on disk.
func hardNight(t *testing.T) *Night {
	t.Helper()
	state := t.TempDir()
	runID := "20261202T010000Z-ab12"
	j, err := journal.Create(state, runID)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 2, 2, 0, 0, 0, time.Local)
	tick := func(min int) time.Time { return at.Add(time.Duration(min) * time.Minute) }
	folder := func(job string, n int) string {
		d := statedir.Attempt(state, runID, job, n)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(d, statedir.AttemptFinal), "Summarised 12 notes into digest.md.\n")
		// The session wrote a file deep in a project: a long path to show.
		writeFile(t, filepath.Join(d, statedir.AttemptStream),
			`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"w1","name":"Write","input":{"file_path":"/home/op/projects/quarterly-research/notes/2026/q4/summaries/`+job+`-summary-of-everything.md"}}]}}`+"\n"+
				`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"w1","content":"File created"}]}}`+"\n")
		return d
	}
	word := strings.Repeat("x", 300)
	down := "server notes is down since 02:01:00 (transport: MCP error -32000: Connection closed)"
	reconnect := "restart-notes.sh exited 1: notes: could not bind 127.0.0.1:8123: address already in use"
	res := func(cost float64) *journal.Result {
		return &journal.Result{Subtype: "success", NumTurns: 7, CostUSD: cost, DurationMS: 60000}
	}
	evs := []journal.Event{
		{Time: tick(0), Type: journal.RunStarted, Batch: "nightly", BatchFile: "/home/op/night shift/night.yaml"},
		{Time: tick(0), Type: journal.JobStarted, Job: "digest", Attempt: 1, Folder: folder("digest", 1)},
		{Time: tick(1), Type: journal.ServerState, Server: "notes", Status: journal.Unhealthy, Code: "transport", Reason: "MCP error -32000: Connection closed", By: "preflight"},
		{Time: tick(1), Type: journal.JobDeferred, Job: "research-the-quarterly-notes", Reason: down},
		{Time: tick(2), Type: journal.Maintenance, Server: "notes", Action: journal.Reconnect, Reason: reconnect},
		{Time: tick(2), Type: journal.JobDeferred, Job: "research-the-quarterly-notes", Reason: down},
		{Time: tick(3), Type: journal.JobFinished, Job: "digest", Attempt: 1, Status: journal.Done, Result: res(0.12),
			Verify: &journal.Verify{Command: []string{"test", "-s", "digest.md"}, OK: true}},
		{Time: tick(3), Type: journal.JobStarted, Job: "lint", Attempt: 1, Folder: folder("lint", 1)},
		{Time: tick(4), Type: journal.JobDeferred, Job: "research-the-quarterly-notes", Reason: down},
		{Time: tick(6), Type: journal.JobRetried, Job: "lint", Attempt: 1, Result: res(0.2), Reason: "verify ./check.sh exited 1: " + word,
			Verify: &journal.Verify{Command: []string{"./check.sh"}, ExitCode: 1, Output: word}},
		{Time: tick(6), Type: journal.JobStarted, Job: "lint", Attempt: 2, Folder: folder("lint", 2)},
		{Time: tick(8), Type: journal.JobDeferred, Job: "research-the-quarterly-notes", Reason: down},
		{Time: tick(9), Type: journal.JobFinished, Job: "lint", Attempt: 2, Status: journal.Failed, Result: res(0.2), Reason: "verify ./check.sh exited 1: " + word,
			Verify: &journal.Verify{Command: []string{"./check.sh"}, ExitCode: 1, Output: word}},
		{Time: tick(9), Type: journal.JobSkipped, Job: "publish", Status: journal.Skipped, Reason: "it needs lint, which failed"},
		{Time: tick(9), Type: journal.JobStarted, Job: "refactor", Attempt: 1, Folder: folder("refactor", 1)},
		{Time: tick(12), Type: journal.JobFinished, Job: "refactor", Attempt: 1, Status: journal.Done, Result: res(0.3),
			Unusable: []string{"notes"}, Reason: "ran without notes"},
		{Time: tick(70), Type: journal.JobSkipped, Job: "research-the-quarterly-notes", Status: journal.Skipped, Reason: "waited 1h0m0s for its servers: " + down},
		{Time: tick(70), Type: journal.ServerFinal, Server: "notes", Status: journal.Unhealthy},
		{Time: tick(70), Type: journal.RunFinished, Reason: "2 done, 1 failed, 2 skipped"},
	}
	for _, ev := range evs {
		ev.Run = runID
		if err := j.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	n, err := Build(statedir.Journal(state, runID), "")
	if err != nil {
		t.Fatal(err)
	}
	return n
}
