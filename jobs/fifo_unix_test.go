//go:build unix

package jobs

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO given where a file should be (the batch file, its env_file, a
// prompt_file) is refused at once with its path; it used to hang the load
// until something wrote to it.
func TestLoadRefusesAFIFOAtOnce(t *testing.T) {
	dir := t.TempDir()
	fifo := func(name string) string {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := map[string]string{
		"batch file": fifo("batch.yaml"),
		"env_file": writeFile(t, dir, "env-batch.yaml", "version: 1\nname: n\nenv_file: "+fifo("night.env")+
			"\nagent: {command: /bin/true}\njobs:\n  - {name: a, prompt: hi}\n"),
		"prompt_file": writeFile(t, dir, "prompt-batch.yaml", "version: 1\nname: n\nagent: {command: /bin/true}\njobs:\n"+
			"  - {name: a, prompt_file: "+fifo("prompt.md")+"}\n"),
	}
	for what, batch := range cases {
		t.Run(what, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := Load(batch, noEnv); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), "FIFO") {
					t.Fatalf("Load error %v, want a refusal that names a FIFO", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Load blocked on a FIFO")
			}
		})
	}
}
