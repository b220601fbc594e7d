package supervisor

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// watchEvents signals each growth of the events file (a missing file
// that appears included), coalescing what comes between two reads, and
// ends when told to.
func TestWatchEvents(t *testing.T) {
	tests := []struct {
		name   string
		before string // the file's content at the start ("": no file)
		change func(path string) error
	}{
		{"a line appended", "{}\n", func(p string) error {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString(`{"kind":"server-lost"}` + "\n")
			return err
		}},
		{"the file appears", "", func(p string) error { return os.WriteFile(p, []byte("{}\n"), 0o600) }},
		{"the file replaced", "{}\n{}\n", func(p string) error {
			tmp := p + ".new"
			if err := os.WriteFile(tmp, []byte("{}\n"), 0o600); err != nil {
				return err
			}
			return os.Rename(tmp, p)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.jsonl")
			if tt.before != "" {
				if err := os.WriteFile(path, []byte(tt.before), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			grew, stop, done := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
			since := fileSize(path)
			go func() { defer close(done); watchEvents(path, since, 5*time.Millisecond, grew, stop) }()
			// Many looks at the unchanged file signal nothing.
			time.Sleep(50 * time.Millisecond)
			select {
			case <-grew:
				t.Fatal("signalled before the file changed")
			default:
			}
			if err := tt.change(path); err != nil {
				t.Fatal(err)
			}
			select {
			case <-grew:
			case <-time.After(30 * time.Second):
				t.Fatal("no signal after the file changed")
			}
			close(stop)
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the watcher did not end when told to")
			}
		})
	}
}
