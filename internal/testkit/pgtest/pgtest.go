// Package pgtest starts a real PostgreSQL server for tests: the Debian
// packages' initdb and postgres, in a temporary folder, listening on a free
// loopback port only, as a non-root user (postgres refuses to run as
// root). One server serves a whole test binary (Main); each test gets a
// database of its own (New).
//
// Without PostgreSQL installed the tests that need it say so and are
// skipped, and the rest of the suite runs; with NIGHTWATCH_REQUIRE_POSTGRES=1
// (scripts/test.sh sets it, after installing the packages) they fail
// instead, so CI never passes without them.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

// Server is one running PostgreSQL.
type Server struct {
	Port int
	dir  string
	bin  string
	cred *credential
	cmd  *exec.Cmd
	stop context.CancelFunc
	done chan struct{}
}

var (
	shared    *Server
	sharedErr error
	once      sync.Once
	dbs       atomic.Int64
)

// Main runs the package's tests and stops the shared server, if one was
// started: func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	return code
}

// Required reports whether the tests must fail without PostgreSQL.
func Required() bool { return os.Getenv("NIGHTWATCH_REQUIRE_POSTGRES") == "1" }

// New returns the DSN of a fresh, empty database on the shared server,
// starting it on first use. Without PostgreSQL it skips t, saying why (or
// fails it, when Required).
func New(t testing.TB) string {
	t.Helper()
	once.Do(func() { shared, sharedErr = Start() })
	unavailable(t, sharedErr)
	name := fmt.Sprintf("nw_%d_%d", os.Getpid(), dbs.Add(1))
	if out, err := shared.psql("postgres", "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v: %s", name, err, out)
	}
	return shared.DSN(name)
}

// unavailable skips t, or fails it, when the server could not start.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if runtime.GOOS == "windows" {
		// The cluster's tests run on Linux and macOS (the Wine gate
		// sets NIGHTWATCH_REQUIRE_POSTGRES for the whole suite).
		t.Skipf("PostgreSQL: %v", err)
	}
	if Required() || !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("PostgreSQL: %v", err)
	}
	t.Skipf("PostgreSQL is not installed here (%v): the cluster tests did not run; `apt-get install postgresql` (scripts/test.sh does) runs them", err)
}

// DSN is the connection string of database name.
func (s *Server) DSN(name string) string {
	return fmt.Sprintf("postgres://nightwatch@127.0.0.1:%d/%s?sslmode=disable", s.Port, name)
}

// ErrNotInstalled: no initdb and postgres binaries were found.
var ErrNotInstalled = errors.New("no PostgreSQL server binaries (initdb, postgres)")

// binDir finds the folder of initdb and postgres: $PATH, then the
// Debian packages' /usr/lib/postgresql/<version>/bin, newest first.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "postgres")); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", ErrNotInstalled
}

// Start initialises a cluster in a new temporary folder and starts it on a
// free loopback port, as the current user, or as a non-root one (postgres,
// else nobody) when the tests run as root.
func Start() (*Server, error) {
	if runtime.GOOS == "windows" {
		return nil, fmt.Errorf("%w: the cluster tests run on Linux and macOS", ErrNotInstalled)
	}
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "nightwatch-pg-")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return nil, err
	}
	if cred != nil {
		for _, p := range []string{dir, data} {
			if err := os.Chown(p, int(cred.uid), int(cred.gid)); err != nil {
				return nil, fmt.Errorf("hand %s to uid %d: %w", p, cred.uid, err)
			}
		}
	}
	s := &Server{dir: dir, bin: bin, cred: cred}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "nightwatch",
		"--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C")
	cred.apply(initdb)
	proc.Prepare(initdb, time.Second)
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		err = s.start(port)
		if err == nil {
			return s, nil
		}
		if attempt == 3 {
			os.RemoveAll(dir)
			return nil, err
		}
	}
}

func (s *Server) start(port int) error {
	bin, data, cred := s.bin, filepath.Join(s.dir, "data"), s.cred
	ctx, stop := context.WithCancel(context.Background())
	// fsync off and a small footprint: a test server, thrown away after.
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "postgres"), "-D", data,
		"-c", "listen_addresses=127.0.0.1", "-c", "port="+strconv.Itoa(port),
		"-c", "unix_socket_directories="+s.dir, "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB",
		"-c", "log_min_messages=warning")
	cred.apply(cmd)
	logf, err := os.OpenFile(filepath.Join(s.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		stop()
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	proc.Prepare(cmd, 5*time.Second)
	// The package's server outlives its tests' nights, and its backends
	// die with it: it must not be taken as the owner of what a night's
	// session leaves behind (proc.Subreaper's rule).
	proc.LeavesNothing(cmd)
	if err := proc.Start(cmd); err != nil {
		stop()
		logf.Close()
		return fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan struct{})
	s.cmd, s.stop, s.Port, s.done = cmd, stop, port, exited
	go func() { _ = proc.Wait(cmd); logf.Close(); close(exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
			stop()
			return fmt.Errorf("postgres exited at start: %s", strings.TrimSpace(string(log)))
		default:
		}
		if _, err := s.psql("postgres", "SELECT 1"); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	<-exited
	return errors.New("postgres did not accept connections within 30s")
}

// psql runs one statement in database db.
func (s *Server) psql(db, sql string) (string, error) {
	bin, err := binDir()
	if err != nil {
		return "", err
	}
	psql := filepath.Join(bin, "psql")
	if _, err := os.Stat(psql); err != nil {
		if p, err := exec.LookPath("psql"); err == nil {
			psql = p
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
		"-p", strconv.Itoa(s.Port), "-U", "nightwatch", "-d", db, "-c", sql)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=2")
	proc.Prepare(cmd, time.Second)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Stop ends the server and removes its folder.
func (s *Server) Stop() {
	if s.stop != nil {
		s.stop()
		<-s.done
	}
	os.RemoveAll(s.dir)
}

// Own starts a server of t's own (stopped when t ends), for a test that
// takes the database away (Pause) without taking it from the tests that
// share the binary's server, and returns it with the DSN of an empty
// database on it.
func Own(t testing.TB) (*Server, string) {
	t.Helper()
	s, err := Start()
	unavailable(t, err)
	t.Cleanup(s.Stop)
	if out, err := s.psql("postgres", "CREATE DATABASE nw_own"); err != nil {
		t.Fatalf("create database nw_own: %v: %s", err, out)
	}
	return s, s.DSN("nw_own")
}

// Pause stops the server as an operator's fast shutdown does (every
// client is disconnected, then new connections are refused) and keeps
// its data; Resume starts it again on the same port.
func (s *Server) Pause() error {
	if s.cmd == nil {
		return errors.New("the server is not running")
	}
	select {
	case <-s.done:
		return errors.New("the server is not running")
	default:
	}
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		return fmt.Errorf("stop postgres: %w", err)
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.stop()
		<-s.done
	}
	s.stop()
	return nil
}

// Resume starts a paused server again, on its port and with its data.
func (s *Server) Resume() error {
	select {
	case <-s.done:
	default:
		return errors.New("the server is running")
	}
	return s.start(s.Port)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type credential struct{ uid, gid uint32 }

// runAs is nil for a non-root user; as root, the postgres user, else nobody.
func runAs() (*credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &credential{uint32(uid), uint32(gid)}, nil
	}
	return nil, errors.New("running as root, and there is no postgres or nobody user to run PostgreSQL as")
}
