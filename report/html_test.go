package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// svgFacts is what checkHTML found in the page's timeline.
type svgFacts struct {
	svgs      int
	outages   int            // rect.outage inside the svg
	byServer  map[string]int // outage bands per data-server
	bars      map[string]int // job bars by class (done, retried, …)
	texts     []string       // every text node inside the svg
	deferrals int
}

// checkHTML walks the page with encoding/xml in its lenient HTML mode
// (there is no HTML parser in the standard library) and fails the test on
// anything a self-contained, script-free page must not have.
func checkHTML(t *testing.T, page []byte) svgFacts {
	t.Helper()
	f := svgFacts{byServer: map[string]int{}, bars: map[string]int{}}
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict, d.AutoClose, d.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	depth := 0 // > 0 inside the svg
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the page does not parse: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			name := strings.ToLower(tok.Name.Local)
			attrs := map[string]string{}
			for _, a := range tok.Attr {
				attrs[strings.ToLower(a.Name.Local)] = a.Value
				k := strings.ToLower(a.Name.Local)
				// A link to a job's own files (file://) loads nothing
				// until the reader follows it; any other URL is refused.
				if name == "a" && k == "href" && strings.HasPrefix(a.Value, "file:///") {
					continue
				}
				if k == "src" || k == "href" || strings.HasPrefix(k, "on") || strings.Contains(a.Value, "://") {
					t.Errorf("<%s %s=%q>: a self-contained page loads nothing and runs nothing", name, k, a.Value)
				}
			}
			switch name {
			case "script", "link", "iframe", "img", "object":
				t.Errorf("<%s> in a self-contained page", name)
			case "svg":
				f.svgs++
				depth++
				continue
			}
			if depth == 0 {
				continue
			}
			depth++
			classes := strings.Fields(attrs["class"])
			switch {
			case name == "rect" && has(classes, "outage"):
				f.outages++
				f.byServer[attrs["data-server"]]++
			case name == "rect" && len(classes) == 1 && classes[0] != "lane":
				f.bars[classes[0]]++
			case name == "circle" && has(classes, "defer"):
				f.deferrals++
			}
		case xml.EndElement:
			if depth > 0 {
				depth--
			}
		case xml.CharData:
			if depth > 0 {
				if s := strings.TrimSpace(string(tok)); s != "" {
					f.texts = append(f.texts, s)
				}
			}
		}
	}
	if f.svgs != 1 {
		t.Errorf("%d <svg> elements, want one timeline", f.svgs)
	}
	low := strings.ToLower(string(page))
	// Text may quote a URL (escaped, it is only text); markup may not.
	for _, bad := range []string{"<script", "url(", "@import"} {
		if strings.Contains(low, bad) {
			t.Errorf("the page contains %q: it must be self-contained", bad)
		}
	}
	return f
}

func has(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestHTMLFixture(t *testing.T) {
	n := buildFixture(t)
	var b bytes.Buffer
	if err := n.HTML(&b); err != nil {
		t.Fatal(err)
	}
	f := checkHTML(t, b.Bytes())
	if f.outages != n.Totals.Outages || f.byServer["notes"] != 1 {
		t.Errorf("outage bands %d (%v), want %d, one for notes", f.outages, f.byServer, n.Totals.Outages)
	}
	// One bar per attempt, coloured by how it ended.
	if f.bars["done"] != 5 || f.bars["retried"] != 1 || len(f.bars) != 2 {
		t.Errorf("bars %v, want 5 done and 1 retried", f.bars)
	}
	if f.deferrals != 1 {
		t.Errorf("%d deferral marks, want 1", f.deferrals)
	}
	texts := strings.Join(f.texts, "\n")
	for _, want := range []string{"notes down", "triage #2", "03:00", "07:00", "weekly skipped: the deadline 07:30 passed"} {
		if !strings.Contains(texts, want) {
			t.Errorf("the timeline lacks %q in:\n%s", want, texts)
		}
	}
	page := b.String()
	for _, want := range []string{"6 jobs: 5 done, 1 skipped · $0.42 · 02:00–07:47 · 1 outage", "back by reconnect; 4 calls blocked"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "SECRETSECRET") {
		t.Error("a credential reached the page")
	}
}

// Every name and reason comes from files an attacker may influence (a
// batch, a server's error text): the page must show them, not run them.
func TestHTMLEscapes(t *testing.T) {
	start := time.Date(2027, 1, 14, 2, 0, 0, 0, time.UTC)
	evil := `<script>alert(1)</script><img src="https://evil.example/x.png" onerror="x()">`
	n := &Night{RunID: "r1", Batch: evil, Started: start, Ended: start.Add(time.Hour), Finished: true,
		Jobs: []Job{{Name: evil, Status: "failed", Reason: evil, Attempts: 1,
			tries: []attempt{{n: 1, from: start, to: start.Add(time.Minute), outcome: "failed", reason: evil, ended: true}}}},
		Servers: []Server{{Name: `a"b<c`, Outages: []Outage{{From: start, Reason: evil}}}}}
	n.total()
	var b bytes.Buffer
	if err := n.HTML(&b); err != nil {
		t.Fatal(err)
	}
	f := checkHTML(t, b.Bytes())
	if f.outages != 1 || f.byServer[`a"b<c`] != 1 {
		t.Errorf("outage bands %v", f.byServer)
	}
}

func TestTicks(t *testing.T) {
	loc := time.FixedZone("+0530", 5*3600+1800)
	from := time.Date(2027, 1, 14, 1, 47, 0, 0, loc)
	got := ticks(from, from.Add(6*time.Hour))
	if len(got) != 6 || got[0].Format("15:04") != "02:00" || got[5].Format("15:04") != "07:00" {
		t.Errorf("ticks %v", got)
	}
	if got := ticks(from, from.Add(20*time.Minute)); len(got) != 4 || got[0].Format("15:04") != "01:50" {
		t.Errorf("short night ticks %v", got)
	}
}
