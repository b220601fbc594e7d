package jobs

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// The cluster: section and a job's hosts: strictly decoded, the connection
// string never in the file, rescue_after longer than every job's timeout.
func TestLoadCluster(t *testing.T) {
	sb := newSandbox(t)
	tests := []struct {
		name, top, job string
		want           *Cluster // Line is not compared
		hosts          []string
		line           int
		field, msg     string
	}{
		{name: "no section: one host", want: nil},
		{name: "empty section: defaults", top: "cluster:\n",
			want: &Cluster{DatabaseEnv: DefaultDatabaseEnv, RescueAfter: DefaultTimeout + rescueMargin}},
		{name: "set", top: "cluster:\n  database_env: NW_PG\n  rescue_after: 2h\n", job: ", hosts: [mac, linux-1]",
			want: &Cluster{DatabaseEnv: "NW_PG", RescueAfter: 2 * time.Hour}, hosts: []string{"mac", "linux-1"}},
		{name: "a connection string in the file", top: "cluster:\n  database_env: postgres://u:pw@db/nw\n",
			line: 4, field: "cluster.database_env", msg: "not the string itself"},
		{name: "a bad variable name", top: "cluster:\n  database_env: 9LIVES\n", line: 4, field: "cluster.database_env", msg: "not a variable name"},
		{name: "unknown field", top: "cluster:\n  url: x\n", line: 4, field: "cluster.url", msg: "unknown field"},
		{name: "rescue before a live attempt ends", top: "cluster:\n  rescue_after: 10m\n", line: 3, field: "cluster.rescue_after", msg: "job only's timeout"},
		{name: "hosts without a cluster", job: ", hosts: [mac]", line: 4, field: "jobs[0].hosts", msg: "no cluster: section"},
		{name: "a bad host label", top: "cluster:\n", job: ", hosts: [\"a/b\"]", line: 5, field: "jobs[0].hosts[0]", msg: "host label name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, sb.dir, "b.yaml", "version: 1\nname: b\n"+tt.top+"jobs:\n  - {name: only, prompt: hi"+tt.job+"}\n")
			b, err := Load(path, environ(sb.env))
			if tt.line != 0 {
				var le *LoadError
				if !errors.As(err, &le) {
					t.Fatalf("loaded %+v (%v), want a problem at line %d", b, err, tt.line)
				}
				for _, p := range le.Problems {
					if p.Line == tt.line && p.Field == tt.field && strings.Contains(p.Message, tt.msg) {
						if !strings.Contains(err.Error(), fmt.Sprintf("%s:%d: ", path, tt.line)) {
							t.Errorf("error text lacks file:line: %v", err)
						}
						if strings.Contains(err.Error(), "pw@") {
							t.Errorf("the error repeats the connection string: %v", err)
						}
						return
					}
				}
				t.Fatalf("no problem at line %d field %q with %q; got %v", tt.line, tt.field, tt.msg, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == nil && b.Cluster != nil:
				t.Fatalf("cluster = %+v, want none", b.Cluster)
			case tt.want != nil && (b.Cluster == nil || b.Cluster.DatabaseEnv != tt.want.DatabaseEnv || b.Cluster.RescueAfter != tt.want.RescueAfter):
				t.Fatalf("cluster = %+v, want %+v", b.Cluster, tt.want)
			}
			if !slices.Equal(b.Jobs[0].Hosts, tt.hosts) {
				t.Errorf("hosts = %v, want %v", b.Jobs[0].Hosts, tt.hosts)
			}
		})
	}
}
