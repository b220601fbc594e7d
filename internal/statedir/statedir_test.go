package statedir

import "testing"

func TestLayout(t *testing.T) {
	const root = "/s"
	for got, want := range map[string]string{
		Cache(root):                   "/s/cache.json",
		Events(root):                  "/s/events.jsonl",
		Journal(root, "r1"):           "/s/runs/r1.jsonl",
		Journals(root):                "/s/runs/*.jsonl",
		Attempt(root, "r1", "job", 2): "/s/runs/r1/job/attempt-2",
		AttemptFiles(root, "r1", AttemptMCPConfig): "/s/runs/r1/*/attempt-*/mcp.json",
		Log(root, "r1"):                            "/s/logs/r1.log",
		Report(root, "r1", ".html"):                "/s/reports/r1.html",
		Lock(root, "nightly"):                      "/s/nightly.lock",
		RunID("/s/runs/20261201T020000Z-ab.jsonl"): "20261201T020000Z-ab",
		SpooledEnd(root, "r1", "a.b", 3):           "/s/spool/r1.a.b.attempt-3.json",
		SpooledEnds(root):                          "/s/spool/*.attempt-*.json",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

func TestAttemptOfReadsAttemptBack(t *testing.T) {
	dir := Attempt("/var/lib/nw", "20261202T010000Z-ab12", "digest", 3)
	run, job, attempt, ok := AttemptOf(dir)
	if !ok || run != "20261202T010000Z-ab12" || job != "digest" || attempt != 3 {
		t.Errorf("AttemptOf(%q) = %q, %q, %d, %v", dir, run, job, attempt, ok)
	}
	for _, bad := range []string{"", "/tmp", "/x/runs/r/j/attempt-0", "/x/runs/r/j/attempt-2x", "/x/other/r/j/attempt-1", "/x/runs/r/j/try-1"} {
		if _, _, _, ok := AttemptOf(bad); ok {
			t.Errorf("AttemptOf(%q) read an attempt", bad)
		}
	}
}
