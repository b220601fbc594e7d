package clusterdb

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit/pgtest"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Hosts starting together migrate once; a second migration changes
// nothing; the version is the number of migrations.
func TestMigrateOnceFromManyHosts(t *testing.T) {
	dsn := pgtest.New(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := Open(ctx, dsn, "b")
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			errs[i] = db.Migrate(ctx)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	db, err := Open(ctx, dsn, "b")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	v, river, err := db.SchemaVersion(ctx)
	if err != nil || v != Version() || !river || v == 0 {
		t.Fatalf("schema version %d river %v (%v), want %d and River's tables", v, river, err, Version())
	}
	var rows int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM nightwatch_schema").Scan(&rows); err != nil || rows != Version() {
		t.Fatalf("nightwatch_schema has %d rows (%v), want %d: a migration ran twice", rows, err, Version())
	}
	// A schema newer than the binary is refused with what to do.
	if _, err := db.Pool.Exec(ctx, "INSERT INTO nightwatch_schema (version, name) VALUES ($1, 'future')", Version()+1); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err == nil || !strings.Contains(err.Error(), "upgrade nightwatch") {
		t.Fatalf("migrating a newer schema: %v, want a refusal", err)
	}
}

// The connection string comes from the variable the batch names, the
// environment first; the error without it names file and line, and a bad
// string's error does not repeat its password.
func TestDSNAndOpenErrors(t *testing.T) {
	b := &jobs.Batch{File: "/x/night.yaml", Cluster: &jobs.Cluster{DatabaseEnv: "NW_PG", Line: 7}, Env: map[string]string{"NW_PG": "from-env-file"}}
	got, err := DSN(b, func(k string) (string, bool) { return "", false })
	if err != nil || got != "from-env-file" {
		t.Fatalf("DSN = %q %v, want env_file's", got, err)
	}
	got, _ = DSN(b, func(k string) (string, bool) { return "from-environment", k == "NW_PG" })
	if got != "from-environment" {
		t.Fatalf("DSN = %q, want the environment's", got)
	}
	b.Env = nil
	if _, err := DSN(b, nil); err == nil || !strings.Contains(err.Error(), "/x/night.yaml:7") || !strings.Contains(err.Error(), "NW_PG") {
		t.Fatalf("no DSN: %v, want the file, line and variable", err)
	}
	_, err = Open(context.Background(), "postgres://nw:hunter2secret@127.0.0.1:1/db?connect_timeout=1", "b")
	if err == nil || strings.Contains(err.Error(), "hunter2secret") {
		t.Fatalf("open a closed port: %v, want an error without the password", err)
	}
}
