package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `nightwatch doctor night.yaml` with a cluster: section whose database
// refuses the connection: cluster-connection fails with its fix, in text
// and JSON, and neither shows the connection string or its password.
func TestDoctorClusterConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	const password = "Doctor-Cli-S3cret-19"
	dsn := fmt.Sprintf("postgres://nw_ops:%s@127.0.0.1:%d/night?connect_timeout=3", password, port)

	c := newCLI(t)
	if err := os.WriteFile(filepath.Join(c.cwd, "cluster.env"), []byte("NW_DOCTOR_DB="+dsn+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	batch := filepath.Join(c.cwd, "night.yaml")
	if err := os.WriteFile(batch, []byte(`version: 1
name: nightly
state_dir: ./state
env_file: ./cluster.env
cluster: {database_env: NW_DOCTOR_DB}
jobs:
  - {name: only, prompt: "hi"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"doctor", batch}, {"doctor", batch, "--json"}} {
		out, stderr, code := c.run(args...)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1\n%s\n%s", args, code, out, stderr)
		}
		for _, want := range []string{"cluster-connection", "NW_DOCTOR_DB", "does not answer", fmt.Sprintf("127.0.0.1:%d", port), "every host of the cluster must reach it"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: no %q in:\n%s", args, want, out)
			}
		}
		if strings.Contains(out+stderr, password) || strings.Contains(out+stderr, dsn) {
			t.Errorf("%v: the connection string or its password is shown:\n%s\n%s", args, out, stderr)
		}
	}
}
