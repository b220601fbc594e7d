// Package clusterdb is a cluster's connection to its Postgres and the
// schema it keeps there: River's tables (migrated by rivermigrate) and
// nightwatch's own (migrations/*.sql, versioned in nightwatch_schema).
// nightwatch creates and migrates the schema itself, under an advisory lock
// so that hosts starting together migrate once.
package clusterdb

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// DB is one process's pool of connections to the cluster's Postgres.
type DB struct {
	Pool *pgxpool.Pool
	// Batch is the batch whose night this is: every row nightwatch writes
	// is the batch's.
	Batch string
}

// ErrNoDSN: the variable the batch names holds no connection string.
var ErrNoDSN = errors.New("no connection string")

// DSN is the batch's connection string: the variable cluster.database_env
// names, from the environment first, then env_file (Batch.Env). It is
// remembered as a secret, so that no log or report repeats it.
func DSN(b *jobs.Batch, getenv func(string) (string, bool)) (string, error) {
	if b.Cluster == nil {
		return "", errors.New("the batch has no cluster: section")
	}
	name := b.Cluster.DatabaseEnv
	v, ok := "", false
	if getenv != nil {
		v, ok = getenv(name)
	}
	if !ok || v == "" {
		v, ok = b.Env[name]
	}
	if !ok || strings.TrimSpace(v) == "" {
		return "", fmt.Errorf("%w: %s:%d: cluster.database_env names %s, which is not set in the environment or in env_file; "+
			"set it to the Postgres connection string (postgres://user:password@host:5432/db)", ErrNoDSN, b.File, b.Cluster.Line, name)
	}
	// The whole string and its password, not its user name: a user
	// named like a word ("nightwatch") would be hidden from every text.
	redact.Remember(v)
	if cfg, err := pgx.ParseConfig(v); err == nil && cfg.Password != "" {
		redact.Remember(cfg.Password)
	}
	return v, nil
}

// Open connects to the cluster's Postgres and checks that it answers. The
// error never holds the connection string.
func Open(ctx context.Context, dsn, batch string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("the cluster's connection string cannot be read: %v", redact.String(err.Error(), dsn))
	}
	cfg.MaxConns = 8
	cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	if c := counter.Load(); c != nil {
		cfg.ConnConfig.Tracer = c
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, connectError(cfg, dsn, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, connectError(cfg, dsn, err)
	}
	return &DB{Pool: pool, Batch: batch}, nil
}

// redactedError says its cause's text without the connection string and
// keeps the cause for errors.As (Unreachable reads it).
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }

func connectError(cfg *pgxpool.Config, dsn string, err error) error {
	return &redactedError{msg: fmt.Sprintf("connect to the cluster's Postgres at %s: %v", where(cfg), redact.String(err.Error(), dsn)), cause: err}
}

// Redacted is err said after prefix with every remembered secret removed
// (redact.String); errors.As and errors.Is still find err (Unreachable
// reads it).
func Redacted(prefix string, err error) error {
	return &redactedError{msg: prefix + redact.String(err.Error()), cause: err}
}

// where names the server of cfg without its password.
func where(cfg *pgxpool.Config) string {
	return fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
}

// Close ends the pool.
func (db *DB) Close() { db.Pool.Close() }

// Host is this host's name in the cluster's tables: NIGHTWATCH_HOST, else
// the host name.
func Host() string {
	if h := os.Getenv("NIGHTWATCH_HOST"); h != "" {
		return h
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown-host"
	}
	return h
}

// migrationLock is the advisory lock key under which one process migrates.
const migrationLock = 0x6e77_6d69_6772 // "nwmigr"

// Version is the schema version this nightwatch writes and reads.
func Version() int { return len(migrations()) }

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() []migration {
	entries, _ := migrationFiles.ReadDir("migrations")
	var out []migration
	for _, e := range entries {
		n, err := strconv.Atoi(strings.SplitN(e.Name(), "_", 2)[0])
		if err != nil {
			continue
		}
		b, _ := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		out = append(out, migration{n, e.Name(), string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out
}

// Migrate brings the schema up to date: River's migrations, then
// nightwatch's, each once, in one transaction each, under an advisory lock.
// A database whose nightwatch schema is newer than this binary's is refused.
func (db *DB) Migrate(ctx context.Context) error {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate the cluster's schema: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLock)); err != nil {
		return fmt.Errorf("migrate the cluster's schema: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrationLock))

	migrator, err := rivermigrate.New(riverpgxv5.New(db.Pool), nil)
	if err != nil {
		return fmt.Errorf("River's migrations: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("River's migrations: %w", err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS nightwatch_schema (
		version integer PRIMARY KEY, name text NOT NULL, migrated_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("nightwatch's schema table: %w", err)
	}
	have, err := schemaVersion(ctx, conn)
	if err != nil {
		return err
	}
	if have > Version() {
		return fmt.Errorf("the cluster's schema is at version %d, newer than this nightwatch's %d: upgrade nightwatch on this host", have, Version())
	}
	for _, m := range migrations() {
		if m.version <= have {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO nightwatch_schema (version, name) VALUES ($1, $2)", m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("nightwatch migration %s: %w", m.name, err)
		}
	}
	return nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func schemaVersion(ctx context.Context, q querier) (int, error) {
	var v int
	if err := q.QueryRow(ctx, "SELECT COALESCE(max(version), 0) FROM nightwatch_schema").Scan(&v); err != nil {
		return 0, fmt.Errorf("read nightwatch's schema version: %w", err)
	}
	return v, nil
}

// SchemaVersion is the nightwatch schema version the database has (0: not
// migrated yet) and whether River's tables are there.
func (db *DB) SchemaVersion(ctx context.Context) (version int, river bool, err error) {
	var exists bool
	if err := db.Pool.QueryRow(ctx, "SELECT to_regclass('nightwatch_schema') IS NOT NULL").Scan(&exists); err != nil {
		return 0, false, err
	}
	if exists {
		if version, err = schemaVersion(ctx, db.Pool); err != nil {
			return 0, false, err
		}
	}
	if err := db.Pool.QueryRow(ctx, "SELECT to_regclass('river_job') IS NOT NULL").Scan(&river); err != nil {
		return 0, false, err
	}
	return version, river, nil
}
