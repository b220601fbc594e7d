package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Each pause of the night on the model's API is a band over every row of
// the SVG timeline, as an outage is: placed at its time, as wide as it
// lasted (to the night's end when it had not ended), labelled with its
// class.
func TestSVGPauseBands(t *testing.T) {
	t0 := time.Date(2027, 1, 14, 2, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	// The night is 100 minutes on a plot from labelWidth to plotRight.
	xOf := func(m int) float64 { return labelWidth + float64(m)/100*(plotRight-labelWidth) }
	tests := []struct {
		name   string
		pauses []Pause
		// want is each band's x, width, class and whether it is open.
		want []pauseBand
	}{
		{name: "no pause", pauses: nil},
		{name: "a usage limit, ended", pauses: []Pause{{From: at(10), To: at(40), Until: at(40), Class: "usage-limit", Reason: "5-hour limit"}},
			want: []pauseBand{{X: xOf(10), W: xOf(40) - xOf(10), Class: "usage-limit"}}},
		{name: "an outage still open at the end", pauses: []Pause{{From: at(80), Class: "api-unavailable", Reason: "ECONNREFUSED"}},
			want: []pauseBand{{X: xOf(80), W: xOf(100) - xOf(80), Class: "api-unavailable", Open: true}}},
		{name: "two pauses", pauses: []Pause{{From: at(0), To: at(5), Class: "rate-limit"}, {From: at(50), To: at(60), Class: "api-unavailable"}},
			want: []pauseBand{{X: xOf(0), W: xOf(5) - xOf(0), Class: "rate-limit"}, {X: xOf(50), W: xOf(60) - xOf(50), Class: "api-unavailable"}}},
		{name: "a short pause is still visible", pauses: []Pause{{From: at(20), To: at(20), Class: "rate-limit"}},
			want: []pauseBand{{X: xOf(20), W: 2, Class: "rate-limit"}}},
	}
	rect := regexp.MustCompile(`<rect class="pause" data-class="([^"]*)" x="([^"]*)" y="[^"]*" width="([^"]*)"`)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := &Night{RunID: "r", Started: t0, Ended: at(100), Finished: true, Pauses: tc.pauses,
				Jobs: []Job{{Name: "a", Status: "done", Attempts: 1,
					tries: []attempt{{n: 1, from: at(1), to: at(90), outcome: "done", ended: true}}}}}
			n.total()
			tl := n.layout()
			if len(tl.Pauses) != len(tc.want) {
				t.Fatalf("bands %+v, want %d", tl.Pauses, len(tc.want))
			}
			for i, w := range tc.want {
				g := tl.Pauses[i]
				if fmt.Sprintf("%.1f %.1f", g.X, g.W) != fmt.Sprintf("%.1f %.1f", w.X, w.W) || g.Class != w.Class || g.Open != w.Open {
					t.Errorf("band %d = %+v, want x %.1f w %.1f %s open %v", i, g, w.X, w.W, w.Class, w.Open)
				}
				if !strings.Contains(g.Label, w.Class) || !strings.Contains(g.Title, clock(tc.pauses[i].From)) {
					t.Errorf("band %d label %q title %q", i, g.Label, g.Title)
				}
			}
			var b bytes.Buffer
			if err := n.HTML(&b); err != nil {
				t.Fatal(err)
			}
			checkHTML(t, b.Bytes())
			got := rect.FindAllStringSubmatch(b.String(), -1)
			if len(got) != len(tc.want) {
				t.Fatalf("the SVG has %d pause bands, want %d", len(got), len(tc.want))
			}
			for i, m := range got {
				w := tc.want[i]
				if m[1] != w.Class || m[2] != fmt.Sprintf("%.1f", w.X) || m[3] != fmt.Sprintf("%.1f", w.W) {
					t.Errorf("SVG band %d: class %s x %s width %s, want %s %.1f %.1f", i, m[1], m[2], m[3], w.Class, w.X, w.W)
				}
			}
			if open := strings.Count(b.String(), "(still paused)"); (open > 0) != (len(tc.want) > 0 && tc.want[len(tc.want)-1].Open) {
				t.Errorf("%d bands say still paused", open)
			}
		})
	}
}
