package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "cache.json")
	if err := os.WriteFile(regular, []byte(`{"version":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, 4097), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []readCase{
		{"regular", regular, 0, nil},
		{"regular within its bound", regular, 64, nil},
		{"symlink to a regular file", link, 0, nil},
		{"folder", dir, 0, ErrNotRegular},
		{"over the bound", big, 4096, ErrTooLarge},
		{"exactly the bound", big, 4097, nil},
	}
	cases = append(cases, platformReadCases(t, dir)...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := Read(c.path, c.limit); done <- err }()
			select {
			case err := <-done:
				if c.want == nil && err != nil {
					t.Fatalf("Read: %v", err)
				}
				if c.want != nil && !errors.Is(err, c.want) {
					t.Fatalf("Read error %v, want %v", err, c.want)
				}
				if err != nil && !strings.Contains(err.Error(), c.path) {
					t.Errorf("error %q does not name the path", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Read blocked")
			}
		})
	}
}

type readCase struct {
	name  string
	path  string
	limit int64
	want  error // nil = read succeeds
}
