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

// A server of the test's own goes away (clients are disconnected and new
// ones refused) and comes back on its port with its data.
func TestOwnServerPausesAndResumes(t *testing.T) {
	s, dsn := Own(t)
	db := dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")]
	if out, err := s.psql(db, "CREATE TABLE t (x int); INSERT INTO t VALUES (7)"); err != nil {
		t.Fatalf("psql: %v: %s", err, out)
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.psql(db, "SELECT 1"); err == nil {
		t.Fatal("a paused server answered")
	}
	if err := s.Pause(); err == nil {
		t.Error("pausing a paused server did not say so")
	}
	port := s.Port
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if s.Port != port {
		t.Errorf("the server came back on port %d, want %d", s.Port, port)
	}
	out, err := s.psql(db, "SELECT x FROM t")
	if err != nil || !strings.Contains(out, "7") {
		t.Fatalf("after Resume: %v: %s, want the row written before", err, out)
	}
}
