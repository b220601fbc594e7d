package healthcheck

import (
	"os"
	"path/filepath"
	"testing"
)

func TestEventTailReadsOnlyWholeNewLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	old := `{"kind":"state","server":"old"}` + "\n"
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	tail := EventTail{Path: path}
	tail.SkipToEnd()
	if got := tail.Next(); len(got) != 0 {
		t.Fatalf("an earlier night's events were read: %+v", got)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, _ = f.WriteString(`{"kind":"state","server":"a"}` + "\n" + `{"kind":"blocked","server":"b"`)
	got := tail.Next()
	if len(got) != 1 || got[0].Server != "a" {
		t.Fatalf("want the one whole new line, got %+v", got)
	}
	_, _ = f.WriteString("}\n")
	if got := tail.Next(); len(got) != 1 || got[0].Server != "b" {
		t.Fatalf("the finished line was not read: %+v", got)
	}
}
