package healthcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// searchAll makes every Snapshot of the test search its file, however
// small.
func searchAll(t testing.TB) {
	old := searchFrom
	searchFrom = 0
	t.Cleanup(func() { searchFrom = old })
}

// TestSnapshotSearch: a Snapshot that searches a file in Layout with
// positioned reads finds every entry a whole read finds, and no other,
// with one server or many, lines longer than a read step, and names that
// are escaped in JSON or sort before and after each other.
func TestSnapshotSearch(t *testing.T) {
	searchAll(t)
	long := json.RawMessage(`"` + strings.Repeat("x", 3*searchWindow) + `"`)
	tricky := []string{"    \"servers\": {", "a", "a\": b", "quote\"and\\slash", "<html>&", "z", "ünïcode \u2028 name", "~"}
	many := make([]string, 0, 300)
	for i := range 300 {
		many = append(many, fmt.Sprintf("server-%05d", i*7))
	}
	cases := []struct {
		name   string
		names  []string
		long   bool // every entry has a field longer than a read step
		extra  bool // the file has a top-level field of another tool
		absent []string
	}{
		{name: "one server", names: []string{"only"}, absent: []string{"", "a", "only2", "zz"}},
		{name: "two servers", names: []string{"a", "b"}, absent: []string{"", "0", "aa", "c"}},
		{name: "tricky names", names: tricky, extra: true, absent: []string{"", "b", "servers", "\"", "zz"}},
		{name: "many servers", names: many, absent: []string{"server-00001", "server-99999", "server", "a", "~"}},
		{name: "long lines", names: many[:40], long: true, extra: true, absent: []string{"server-00006", "zzz"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &Store{Path: filepath.Join(t.TempDir(), "cache.json")}
			if err := s.Update(func(f *File) error {
				for i, n := range c.names {
					e := &Entry{Status: StatusHealthy, CheckedAt: Millis(1_800_000_000_000 + i), LastError: "for " + n}
					if c.long {
						e.Extra = map[string]json.RawMessage{"other": long}
					}
					f.Servers[n] = e
				}
				if c.extra {
					f.Extra = map[string]json.RawMessage{"zz": long}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			whole, err := s.Read()
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range append(append([]string{}, c.names...), c.absent...) {
				sn := s.Snapshot()
				if sn.search == nil {
					t.Fatalf("the file in Layout is not searched")
				}
				got, want := sn.Entry(n), whole.Entry(n)
				if !reflect.DeepEqual(compactExtra(got), compactExtra(want)) {
					t.Errorf("entry %q: searched %+v, whole read %+v", n, got, want)
				}
				if sn.Has(n) != (want != nil) {
					t.Errorf("Has(%q) = %v", n, !(want != nil))
				}
				if sn.search == nil || !sn.layout {
					t.Errorf("lookup of %q gave up the search", n)
				}
				sn.Close()
			}
			sn := s.Snapshot()
			defer sn.Close()
			if got, want := sn.Names(), whole.sortedNames(); !reflect.DeepEqual(got, want) {
				t.Errorf("Names = %q, want %q", got, want)
			}
		})
	}
}

// TestSnapshotSearchDefault: a cache of a thousand servers is larger
// than searchFrom, so a hook's Snapshot searches it.
func TestSnapshotSearchDefault(t *testing.T) {
	s := layoutCache(t, 1000)
	sn := s.Snapshot()
	defer sn.Close()
	if sn.search == nil {
		t.Fatalf("a cache of 1,000 servers is read whole")
	}
	if sn.Entry("server-00500") == nil || sn.Has("server-01000") {
		t.Errorf("the search does not find what the cache has")
	}
}

// TestSnapshotSearchUnsorted: a file that states Layout to the byte but
// whose lines are out of order (made by hand) is read whole when the
// search meets the disorder, so its entries are still found.
func TestSnapshotSearchUnsorted(t *testing.T) {
	searchAll(t)
	s := layoutCache(t, 50)
	data, err := os.ReadFile(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	// Swap the names of the first and the last entry: same size.
	swapped := bytes.Replace(data, []byte(`"server-00000"`), []byte(`"server-XXXXX"`), 1)
	swapped = bytes.Replace(swapped, []byte(`"server-00049"`), []byte(`"server-00000"`), 1)
	swapped = bytes.Replace(swapped, []byte(`"server-XXXXX"`), []byte(`"server-00049"`), 1)
	if err := os.WriteFile(s.Path, swapped, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"server-00000", "server-00049"} {
		sn := s.Snapshot()
		if sn.search == nil {
			t.Fatalf("not searched")
		}
		if sn.Entry(n) == nil {
			t.Errorf("entry %q of the unsorted file not found", n)
		}
		sn.Close()
	}
}

// entryLinesSorted says whether the entry lines of a file in Layout are
// in strictly increasing order of name, as Store writes them.
func entryLinesSorted(data []byte) bool {
	at := bytes.Index(data, entriesHead)
	if at < 0 {
		return false
	}
	var prev *string
	for _, line := range bytes.Split(data[at+len(entriesHead):], []byte("\n")) {
		key, _, entry := entryLineKey(line)
		if !entry {
			break
		}
		if prev != nil && key <= *prev {
			return false
		}
		prev = &key
	}
	return true
}

// FuzzSnapshotSearch: any content after a Layout head that states the
// file's size is searched without a panic, and what the search finds is
// what a whole read finds (for a file whose entry lines are sorted, as
// Store writes them; a hand-made file may hide an entry from the search).
//
//	go test -run '^$' -fuzz FuzzSnapshotSearch -fuzztime 60s ./healthcheck/
func FuzzSnapshotSearch(f *testing.F) {
	searchAll(f)
	s := layoutCache(f, 5)
	data, _ := os.ReadFile(s.Path)
	body := data[len(layoutHead)+sizeDigits+len(entriesHead):]
	f.Add(body, "server-00002")
	f.Add(body, "server-00009")
	f.Add([]byte("    \"a\": {\"status\":\"healthy\"},\n    \"b\\\"\": {}\n  }\n}\n"), "b\"")
	f.Add([]byte("  }\n}\n"), "a")
	f.Fuzz(func(t *testing.T, body []byte, name string) {
		searchFrom = 0
		head := len(layoutHead) + sizeDigits + len(entriesHead)
		b := make([]byte, 0, head+len(body))
		b = append(b, layoutHead...)
		b = append(b, fmt.Sprintf("%0*d", sizeDigits, head+len(body))...)
		b = append(b, entriesHead...)
		b = append(b, body...)
		if n, _ := strconv.Atoi(string(b[len(layoutHead) : len(layoutHead)+sizeDigits])); n != len(b) {
			t.Fatalf("bad head")
		}
		st := &Store{Path: filepath.Join(t.TempDir(), "c.json")}
		if err := os.WriteFile(st.Path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		sn := st.Snapshot()
		defer sn.Close()
		got, has := sn.Entry(name), sn.Has(name)
		_ = sn.Names()
		whole, err := st.Read()
		if err != nil || strings.Count(string(b), "\n    "+string(entryKey(name))) > 1 || !entryLinesSorted(b) {
			return
		}
		want := whole.Entry(name)
		if got != nil && want != nil {
			got, want = compactExtra(got), compactExtra(want)
		}
		if got == nil && want != nil {
			t.Fatalf("entry %q: searched %+v, whole read %+v", name, got, want)
		}
		if got != nil && want != nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("entry %q: searched %+v, whole read %+v", name, got, want)
		}
		if has != (got != nil) && got != nil {
			t.Fatalf("Has(%q) = %v, Entry %+v", name, has, got)
		}
	})
}
