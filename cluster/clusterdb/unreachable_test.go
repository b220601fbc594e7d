package clusterdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/nightwatch-dev/nightwatch/internal/testkit/pgtest"
)

// What passes (the database down, restarting, starting up) is
// Unreachable; what waiting does not change is not.
func TestUnreachable(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"starting up", fmt.Errorf("start River: %w", &pgconn.PgError{Code: "57P03"}), true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"wrong password", &pgconn.PgError{Code: "28P01"}, false},
		{"no such database", &pgconn.PgError{Code: "3D000"}, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"connection dropped", fmt.Errorf("worker heartbeat: %w", io.ErrUnexpectedEOF), true},
		{"network", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{"newer schema", errors.New("the cluster's schema is at version 9, newer than this nightwatch's 3"), false},
	} {
		if got := Unreachable(c.err); got != c.want {
			t.Errorf("%s: Unreachable(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// The errors Open really returns: a server that is down is unreachable;
// a database that does not exist on a live server is not.
func TestUnreachableFromOpen(t *testing.T) {
	srv, dsn := pgtest.Own(t)
	ctx := context.Background()
	missing := strings.Replace(dsn, "/nw_own", "/nw_missing", 1)
	if _, err := Open(ctx, missing, "b"); err == nil || Unreachable(err) {
		t.Errorf("a database that does not exist: Open = %v, Unreachable %v; want an error that is not unreachable", err, Unreachable(err))
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, dsn, "b"); err == nil || !Unreachable(err) {
		t.Errorf("a server that is down: Open = %v, Unreachable %v; want an unreachable error", err, Unreachable(err))
	}
}
