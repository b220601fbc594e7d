package pgtest

import (
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestServerAnswersAndEachTestHasItsOwnDatabase(t *testing.T) {
	a, b := New(t), New(t)
	if a == b {
		t.Fatalf("two tests got the same database %s", a)
	}
	if !strings.HasPrefix(a, "postgres://nightwatch@127.0.0.1:") {
		t.Fatalf("DSN %s is not on loopback", a)
	}
	out, err := shared.psql(a[strings.LastIndex(a, "/")+1:strings.Index(a, "?")], "CREATE TABLE t (x int); INSERT INTO t VALUES (1)")
	if err != nil {
		t.Fatalf("psql: %v: %s", err, out)
	}
}
