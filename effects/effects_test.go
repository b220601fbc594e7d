package effects

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestKeyCanonicalJSON(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"key order", `{"a":1,"b":"x"}`, `{"b":"x","a":1}`, true},
		{"spaces", `{"a": [1, 2], "b": {"c": null}}`, `{"a":[1,2],"b":{"c":null}}`, true},
		{"nested order", `{"o":{"y":1,"x":2}}`, `{"o":{"x":2,"y":1}}`, true},
		{"escapes", `{"s":"\u00e9\/"}`, `{"s":"é/"}`, true},
		{"empty is empty object", ``, `{}`, true},
		{"different value", `{"a":1}`, `{"a":2}`, false},
		{"number as written", `{"a":1}`, `{"a":1.0}`, false},
		{"string vs number", `{"a":"1"}`, `{"a":1}`, false},
		{"array order matters", `{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{"extra key", `{"a":1}`, `{"a":1,"b":null}`, false},
		{"large number kept exact", `{"n":12345678901234567890}`, `{"n":12345678901234567891}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Key([]byte(tt.a)) == Key([]byte(tt.b)); got != tt.same {
				t.Errorf("Key(%s) == Key(%s) is %v, want %v", tt.a, tt.b, got, tt.same)
			}
		})
	}
	if k := Key([]byte("not json")); !strings.HasPrefix(k, "raw:") {
		t.Errorf("a non-JSON input is keyed %q, want by its bytes", k)
	}
}

func TestRecordAndEarlier(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job", FileName)
	yes := true
	if err := Prepare(path, map[string]map[string]Hints{"files": {"peek": {ReadOnly: &yes}}}, false); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c, err := Record(path, 1, "files", "record", Input{Raw: []byte(`{"text":"one","file":"/x"}`)}, now)
	if err != nil || c == nil || c.N != 1 {
		t.Fatalf("Record: %+v, %v", c, err)
	}
	if c, err := Record(path, 1, "files", "peek", Input{Raw: []byte(`{"file":"/x"}`)}, now); err != nil || c != nil {
		t.Fatalf("a read-only tool was recorded: %+v, %v", c, err)
	}
	l, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Calls) != 1 {
		t.Fatalf("calls: %+v", l.Calls)
	}
	key := Key([]byte(`{"file":"/x","text":"one"}`))
	if l.Earlier(1, "files", "record", key) != nil {
		t.Error("a call of the same attempt counts as earlier")
	}
	if e := l.Earlier(2, "files", "record", key); e == nil || e.Attempt != 1 {
		t.Errorf("attempt 2 does not see attempt 1's call: %+v", e)
	}
	if l.Earlier(2, "files", "record", Key([]byte(`{"file":"/x","text":"two"}`))) != nil {
		t.Error("a different input counts as the same call")
	}
	if l.Earlier(2, "other", "record", key) != nil {
		t.Error("another server's tool counts as the same call")
	}
	told := Told(l, 2)
	if !strings.Contains(told, "mcp__files__record") || !strings.Contains(told, `"text":"one"`) {
		t.Errorf("Told: %q", told)
	}
	if Told(l, 1) != "" {
		t.Errorf("attempt 1 is told of its own calls: %q", Told(l, 1))
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("ledger mode: %v, %v", fi, err)
	}
}

func TestDigestRedacts(t *testing.T) {
	d := Digest([]byte(`{"token":"sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789","note":"hunter2-secret-value"}`), "hunter2-secret-value")
	if strings.Contains(d, "abcdefghijklmnop") || strings.Contains(d, "hunter2-secret-value") {
		t.Errorf("the digest leaks a secret: %q", d)
	}
	long := Digest([]byte(`{"text":"` + strings.Repeat("a", 1000) + `"}`))
	if len(long) > DigestLen+4 {
		t.Errorf("digest not bounded: %d bytes", len(long))
	}
}

// Parallel hooks of one session record at once: no call is lost, and each
// gets its own number.
func TestRecordConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := Record(path, 1, "s", "t", Input{Raw: fmt.Appendf(nil, `{"i":%d}`, i)}, time.Now())
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	l, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Calls) != n {
		t.Fatalf("%d calls recorded, want %d", len(l.Calls), n)
	}
	seen := map[int]bool{}
	for _, c := range l.Calls {
		if seen[c.N] {
			t.Errorf("number %d given twice", c.N)
		}
		seen[c.N] = true
	}
}

func TestBadFilesRefused(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"garbage":       "not json",
		"wrong version": `{"version":2}`,
		"unknown field": `{"version":1,"surprise":true}`,
		"bad call":      `{"version":1,"calls":[{"n":1,"attempt":1,"server":"","tool":"t","key":"k"}]}`,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := Read(path); !errors.Is(err, ErrBadFile) {
				t.Errorf("Read: %v, want ErrBadFile", err)
			}
			if _, err := Record(path, 1, "s", "t", Input{Raw: []byte(`{}`)}, time.Now()); err == nil {
				t.Error("Record wrote over a bad file")
			}
		})
	}
	t.Run("a folder", func(t *testing.T) {
		path := filepath.Join(dir, "folder")
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(path); err == nil {
			t.Error("a folder read as a ledger")
		}
	})
	if l, err := Read(filepath.Join(dir, "missing.json")); err != nil || len(l.Calls) != 0 {
		t.Errorf("a missing ledger: %+v, %v; want empty", l, err)
	}
}

// TestInterrupted: whether a call interrupted with its server can simply
// be made again comes from its tool's hints alone: read-only or
// idempotent, yes; anything else, unhinted included, may have taken
// effect. The ledger and the environment give the hints.
func TestInterrupted(t *testing.T) {
	yes, no := true, false
	const again, check = "the call can be made again", "it may have taken effect: check before repeating it"
	tests := []struct {
		name string
		h    Hints
		want string
	}{
		{"no hints", Hints{}, check},
		{"idempotent", Hints{Idempotent: &yes}, again},
		{"not idempotent", Hints{Idempotent: &no}, check},
		{"read-only", Hints{ReadOnly: &yes}, again},
		{"destructive and idempotent", Hints{Destructive: &yes, Idempotent: &yes}, again},
		{"not read-only", Hints{ReadOnly: &no}, check},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.h.Interrupted(); got != tt.want {
				t.Errorf("Interrupted = %q, want %q", got, tt.want)
			}
			if got := tt.h.CanRepeat(); got != (tt.want == again) {
				t.Errorf("CanRepeat = %v", got)
			}
		})
	}

	path := filepath.Join(t.TempDir(), FileName)
	if err := Prepare(path, map[string]map[string]Hints{"notes": {"put": {Idempotent: &yes}}}, false); err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, c := range []struct {
		getenv       func(string) (string, bool)
		server, tool string
		want         bool
	}{
		{env(map[string]string{PathEnv: path}), "notes", "put", true},
		{env(map[string]string{PathEnv: path}), "notes", "other", false},
		{env(map[string]string{PathEnv: path}), "search", "put", false},
		{env(nil), "notes", "put", false},
		{env(map[string]string{PathEnv: filepath.Join(t.TempDir(), "missing.json")}), "notes", "put", false},
	} {
		if got := HintsFrom(c.getenv, c.server, c.tool).CanRepeat(); got != c.want {
			t.Errorf("HintsFrom(%s, %s) can repeat = %v, want %v", c.server, c.tool, got, c.want)
		}
	}
}

// Another host's calls merged into a host's ledger: each once (a call it
// holds already, even at a time a database kept to the microsecond, is
// not added again), numbered after its own; a repeat of a merged call in
// a later attempt is then found (Earlier) and told.
func TestMergeAddsEachCallOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	at := time.Date(2026, 12, 3, 1, 2, 3, 456789123, time.UTC)
	own, err := Record(path, 1, "notes", "append", Input{Raw: []byte(`{"line":"a"}`)}, at)
	if err != nil || own == nil {
		t.Fatalf("Record = %v, %v", own, err)
	}
	fromDB := *own
	fromDB.N = 7
	fromDB.At = at.Truncate(time.Microsecond)
	other := Call{N: 1, Attempt: 2, Server: "notes", Tool: "append", Key: Key([]byte(`{"line":"b"}`)), Digest: `{"line":"b"}`, At: at.Add(time.Minute)}
	for round, want := range []int{1, 0} {
		added, err := Merge(path, []Call{other, fromDB})
		if err != nil || added != want {
			t.Fatalf("merge %d: added %d (%v), want %d", round+1, added, err, want)
		}
	}
	l, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Calls) != 2 || l.Calls[1].N != 2 || l.Calls[1].Attempt != 2 {
		t.Fatalf("the ledger holds %+v, want its own call and the merged one as number 2", l.Calls)
	}
	if c := l.Earlier(3, "notes", "append", Key([]byte(`{"line":"b"}`))); c == nil || c.Attempt != 2 {
		t.Errorf("a repeat in attempt 3 of the merged call is not found: %+v", c)
	}
	if got := l.Of(2); len(got) != 1 || got[0].Key != other.Key {
		t.Errorf("Of(2) = %+v", got)
	}
	if told := Told(l, 3); !strings.Contains(told, `{"line":"b"}`) || !strings.Contains(told, `{"line":"a"}`) {
		t.Errorf("attempt 3 is not told of both calls: %q", told)
	}
}

// Prepare writes the ledger only when it would change, and a ledger that
// needs no change (none at all, for a job without servers) is neither
// locked nor given a folder; a change is written, calls kept.
func TestPrepareWritesOnlyAChange(t *testing.T) {
	yes := true
	hints := map[string]map[string]Hints{"files": {"peek": {ReadOnly: &yes}}}
	steps := []struct {
		name        string
		tools       map[string]map[string]Hints
		allowRepeat bool
		wantFile    bool // a ledger (and its lock) exists after the step
		wantWrite   bool // the ledger was written by the step
	}{
		{"no servers, first attempt", nil, false, false, false},
		{"the same again", nil, false, false, false},
		{"hints", hints, false, true, true},
		{"the same hints", hints, false, true, false},
		{"allow_repeat", hints, true, true, true},
		{"the same again", hints, true, true, false},
	}
	path := filepath.Join(t.TempDir(), "job", FileName)
	var before os.FileInfo
	for i, st := range steps {
		if i == 3 {
			// A call recorded between attempts is kept by a change.
			if _, err := Record(path, 1, "files", "put", Input{Raw: []byte(`{}`)}, time.Now()); err != nil {
				t.Fatal(err)
			}
			before, _ = os.Stat(path)
		} else if fi, err := os.Stat(path); err == nil {
			before = fi
		}
		if err := Prepare(path, st.tools, st.allowRepeat); err != nil {
			t.Fatalf("%d %s: %v", i, st.name, err)
		}
		fi, err := os.Stat(path)
		if (err == nil) != st.wantFile {
			t.Fatalf("%d %s: ledger: %v", i, st.name, err)
		}
		if _, err := os.Stat(filepath.Dir(path)); (err == nil) != st.wantFile {
			t.Fatalf("%d %s: the ledger's folder: %v", i, st.name, err)
		}
		if !st.wantFile {
			continue
		}
		wrote := before == nil || !os.SameFile(before, fi)
		if wrote != st.wantWrite {
			t.Errorf("%d %s: written %v, want %v", i, st.name, wrote, st.wantWrite)
		}
		l, err := Read(path)
		if err != nil || l.AllowRepeat != st.allowRepeat || !l.ReadOnly("files", "peek") {
			t.Fatalf("%d %s: ledger %+v, %v", i, st.name, l, err)
		}
		if i >= 3 && len(l.Calls) != 1 {
			t.Errorf("%d %s: %d calls, want the recorded one kept", i, st.name, len(l.Calls))
		}
	}
}

// TestRecordTaskOncePerCall: the two witnesses of one task call (exec-server
// with the task id, the hook with only the tool_use_id), in either order,
// make one task with all they know; calls without a tool_use_id, or
// another call, are tasks of their own. TaskOf finds a call's task.
func TestRecordTaskOncePerCall(t *testing.T) {
	at := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	type rec struct {
		server, tool string
		ref          TaskRef
	}
	tests := []struct {
		name string
		recs []rec
		want []Task
	}{
		{"exec-server then hook", []rec{{"s", "run", TaskRef{ID: "t-1", ToolUseID: "u1"}}, {"s", "run", TaskRef{ToolUseID: "u1"}}},
			[]Task{{N: 1, Attempt: 1, Server: "s", Tool: "run", ID: "t-1", ToolUseID: "u1", At: at}}},
		{"hook then exec-server", []rec{{"s", "run", TaskRef{ToolUseID: "u1"}}, {"s", "run", TaskRef{ID: "t-1", ToolUseID: "u1"}}},
			[]Task{{N: 1, Attempt: 1, Server: "s", Tool: "run", ID: "t-1", ToolUseID: "u1", At: at}}},
		{"two calls", []rec{{"s", "run", TaskRef{ID: "t-1", ToolUseID: "u1"}}, {"s", "run", TaskRef{ID: "t-2", ToolUseID: "u2"}}},
			[]Task{{N: 1, Attempt: 1, Server: "s", Tool: "run", ID: "t-1", ToolUseID: "u1", At: at},
				{N: 2, Attempt: 1, Server: "s", Tool: "run", ID: "t-2", ToolUseID: "u2", At: at}}},
		{"no tool_use_id", []rec{{"s", "run", TaskRef{}}, {"s", "run", TaskRef{}}},
			[]Task{{N: 1, Attempt: 1, Server: "s", Tool: "run", At: at}, {N: 2, Attempt: 1, Server: "s", Tool: "run", At: at}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			for _, r := range tt.recs {
				if err := RecordTask(path, 1, r.server, r.tool, r.ref, at); err != nil {
					t.Fatal(err)
				}
			}
			l, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(l.Tasks, tt.want) {
				t.Errorf("tasks %+v, want %+v", l.Tasks, tt.want)
			}
			if got := l.TaskOf("u1"); (got == nil) != (tt.want[0].ToolUseID == "") || (got != nil && got.ID != tt.want[0].ID) {
				t.Errorf("TaskOf(u1) = %+v", got)
			}
			if l.TaskOf("") != nil || l.TaskOf("u9") != nil {
				t.Error("TaskOf found a task for a call that made none")
			}
		})
	}
}
