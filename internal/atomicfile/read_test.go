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

// Holds compares the bytes on every platform: a file written by WriteFile
// holds them; another content, another length or no file does not.
func TestHoldsTheBytesWritten(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	data := []byte(`{"hooks": {}}` + "\n")
	if Holds(path, data) {
		t.Error("a missing file holds the bytes")
	}
	if err := WriteFileVolatile(path, data, Mode); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want bool
	}{
		{"the bytes written", data, true},
		{"another content", []byte(`{"hooks": []}` + "\n"), false},
		{"fewer bytes", data[:len(data)-1], false},
		{"more bytes", append(append([]byte{}, data...), ' '), false},
	} {
		if got := Holds(path, tc.data); got != tc.want {
			t.Errorf("%s: Holds = %v, want %v", tc.name, got, tc.want)
		}
	}
}
