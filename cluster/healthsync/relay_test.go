package healthsync

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const batch = "night"

// host is one host of a test cluster: a state folder of its own, its
// cache, its own pool of connections and its relay.
type host struct {
	name  string
	dir   string
	store *healthcheck.Store
	db    *clusterdb.DB
	relay *Relay
	warns *warnings
	poll  time.Duration // Options.Poll (0: the default)
}

type warnings struct {
	mu  sync.Mutex
	all []string
}

func (w *warnings) add(s string) { w.mu.Lock(); w.all = append(w.all, s); w.mu.Unlock() }
func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.all, "\n")
}

// newDB is a fresh, migrated database of the shared test server.
func newDB(t testing.TB) string {
	t.Helper()
	dsn := pgtest.New(t)
	db := openDB(t, dsn)
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return dsn
}

func openDB(t testing.TB, dsn string) *clusterdb.DB {
	t.Helper()
	db, err := clusterdb.Open(context.Background(), dsn, batch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// newHost prepares a host without starting its relay.
func newHost(t testing.TB, dsn, name string) *host {
	t.Helper()
	dir := t.TempDir()
	return &host{name: name, dir: dir, store: &healthcheck.Store{Path: statedir.Cache(dir)}, db: openDB(t, dsn), warns: &warnings{}}
}

func (h *host) start(t testing.TB, servers ...string) {
	t.Helper()
	if len(servers) == 0 {
		servers = []string{"notes"}
	}
	r, err := Start(context.Background(), h.db, h.store, Options{Host: h.name, Servers: servers, Warn: h.warns.add, Poll: h.poll})
	if err != nil {
		t.Fatal(err)
	}
	h.relay = r
	t.Cleanup(r.Close)
}

func startHost(t testing.TB, dsn, name string, servers ...string) *host {
	h := newHost(t, dsn, name)
	h.start(t, servers...)
	return h
}

func (h *host) checker(opts healthcheck.Options) *healthcheck.Checker {
	return healthcheck.New(h.store, healthcheck.DefaultSettings(), opts)
}

func (h *host) entry(t testing.TB, server string) *healthcheck.Entry {
	t.Helper()
	f, err := h.store.Read()
	if err != nil {
		t.Fatal(err)
	}
	return f.Entry(server)
}

// waitFor polls until cond holds and returns how long that took, for a
// log; it fails after a minute, which only a relay that never delivers
// runs out (the goal, within a second, is measured by the benchmark, not
// asserted here).
func waitFor(t testing.TB, what string, cond func() bool) time.Duration {
	t.Helper()
	const never = time.Minute
	start := time.Now()
	for time.Since(start) < never {
		if cond() {
			return time.Since(start)
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%s: never came (%s)", what, never)
	return 0
}

func rowOf(t testing.TB, db *clusterdb.DB, server string) clusterdb.HealthRow {
	t.Helper()
	row, ok, err := db.HealthRowOf(context.Background(), server)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return clusterdb.HealthRow{}
	}
	return row
}

// runHook runs the real nightwatch binary as Claude Code does: one
// process per hook event, payload on stdin.
func runHook(t testing.TB, bin string, h *host, payload string, socket bool) (int, string, string) {
	t.Helper()
	return runHookEnv(t, bin, h, payload, socket)
}

// runHookEnv is runHook with env added to the hook's environment.
func runHookEnv(t testing.TB, bin string, h *host, payload string, socket bool, env ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "hook")
	cmd.Env = append([]string{"HOME=" + h.dir, "PATH=" + os.Getenv("PATH"), "NIGHTWATCH_STATE_PATH=" + h.store.Path,
		"NIGHTWATCH_EVENTS=" + statedir.Events(h.dir)}, env...)
	if socket {
		cmd.Env = append(cmd.Env, h.relay.Environ())
	}
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(payload), &out, &errb
	proc.Prepare(cmd, time.Second)
	if err := proc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	err := proc.Wait(cmd)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func hookPayload(event, tool, extra string) string {
	return `{"session_id":"s1","cwd":"/nonexistent/project","hook_event_name":"` + event +
		`","tool_name":"` + tool + `","tool_input":{"x":1}` + extra + `}`
}

// The proof: a server marked down by one host's hook is blocked
// by the other host's hook, through the table and the two relays, within
// a second (measured; asserted with room for a loaded machine). The
// revision then stops: B does not push A's verdict back.
func TestDownOnOneHostIsBlockedOnTheOther(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	dsn := newDB(t)
	a, b := startHost(t, dsn, "host-a"), startHost(t, dsn, "host-b")

	// Both hooks run with the cluster configured, as sessions will.
	code, _, stderr := runHook(t, bin, a, hookPayload("PostToolUseFailure", "mcp__notes__add",
		`,"error":"MCP error -32000: Connection closed"`), true)
	if code != 0 {
		t.Fatalf("A's failure hook exited %d: %s", code, stderr)
	}
	if e := a.entry(t, "notes"); e == nil || e.Status != healthcheck.StatusUnhealthy {
		t.Fatalf("A's hook did not mark notes down: %+v", e)
	}
	took := waitFor(t, "A's verdict in B's cache", func() bool {
		e := b.entry(t, "notes")
		return e != nil && e.Status == healthcheck.StatusUnhealthy
	})
	t.Logf("A's hook → B's cache: %s", took)

	dialed := b.relay.accepted.Load()
	code, stdout, stderr := runHook(t, bin, b, hookPayload("PreToolUse", "mcp__notes__search", ""), true)
	if code != 2 || !strings.Contains(stdout, `"deny"`) {
		t.Fatalf("B's hook let the call through: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if n := b.relay.accepted.Load() - dialed; n != 0 {
		t.Errorf("B's hook blocked from its cache but dialed the relay %d times", n)
	}
	if !strings.Contains(stderr, "notes") {
		t.Errorf("B's block message does not name the server: %s", stderr)
	}

	// No ping-pong: one write, by A; B remembered what it pulled.
	row := rowOf(t, a.db, "notes")
	time.Sleep(1500 * time.Millisecond)
	again := rowOf(t, a.db, "notes")
	if row.Rev != 1 || again.Rev != 1 || again.Host != "host-a" {
		t.Fatalf("revision %d then %d by %s: the verdict was written back and forth", row.Rev, again.Rev, again.Host)
	}
	if w := a.warns.String() + b.warns.String(); w != "" {
		t.Errorf("warnings: %s", w)
	}
}

// A server's entries other than the batch's are not shared; changes go
// both ways and the newer verdict wins on both hosts.
func TestBothWaysAndOnlyTheBatchsServers(t *testing.T) {
	dsn := newDB(t)
	a, b := startHost(t, dsn, "host-a", "notes", "search"), startHost(t, dsn, "host-b", "notes", "search")
	ca, cb := a.checker(healthcheck.Options{}), b.checker(healthcheck.Options{})

	ca.RecordClientStatus("notes", nil, "failed", "connection refused")
	ca.RecordClientStatus("private", nil, "failed", "not the batch's")
	waitFor(t, "notes down on B", func() bool { e := b.entry(t, "notes"); return e != nil && e.Status == healthcheck.StatusUnhealthy })

	time.Sleep(5 * time.Millisecond) // a later millisecond: B's verdict is the newer
	cb.RecordSuccess("notes", nil)
	waitFor(t, "notes back up on A", func() bool { e := a.entry(t, "notes"); return e != nil && e.Status == healthcheck.StatusHealthy })
	cb.RecordClientStatus("search", nil, "needs-auth", "login expired")
	waitFor(t, "search down on A", func() bool { e := a.entry(t, "search"); return e != nil && e.LastFailureCode == healthcheck.CodeAuth })

	if e := b.entry(t, "private"); e != nil {
		t.Fatalf("an entry outside the batch's servers was shared: %+v", e)
	}
	if row := rowOf(t, a.db, "private"); row.Rev != 0 {
		t.Fatalf("an entry outside the batch's servers reached the table: %+v", row)
	}
	if g, _ := ca.Gate("notes"); g != healthcheck.GateAllow {
		t.Fatalf("A's gate for notes after B's success: %s", g)
	}
}

// A host that joins late gets the current picture when its relay starts,
// before any notice; a host's own newer entry is pushed when it joins.
func TestLateJoinerGetsThePicture(t *testing.T) {
	dsn := newDB(t)
	a := startHost(t, dsn, "host-a", "notes", "search")
	a.checker(healthcheck.Options{}).RecordClientStatus("notes", nil, "failed", "connection refused")
	waitFor(t, "the row", func() bool { return rowOf(t, a.db, "notes").Rev == 1 })

	b := newHost(t, dsn, "host-b")
	time.Sleep(5 * time.Millisecond)
	b.checker(healthcheck.Options{}).RecordClientStatus("search", nil, "failed", "B saw it before joining")
	b.start(t, "notes", "search")
	if e := b.entry(t, "notes"); e == nil || e.Status != healthcheck.StatusUnhealthy {
		t.Fatalf("B joined without A's verdict: %+v", e)
	}
	if row := rowOf(t, b.db, "search"); row.Host != "host-b" {
		t.Fatalf("B's own verdict was not pushed when it joined: %+v", row)
	}
	waitFor(t, "B's verdict on A", func() bool { e := a.entry(t, "search"); return e != nil && e.Status == healthcheck.StatusUnhealthy })
}

// The LISTEN connection killed by the server: the relay reconnects,
// re-reads every row (a change made meanwhile is not lost) and listens on.
func TestListenConnectionKilledRecovers(t *testing.T) {
	dsn := newDB(t)
	a, b := startHost(t, dsn, "host-a"), startHost(t, dsn, "host-b")
	ca := a.checker(healthcheck.Options{})
	pid := b.relay.listenPID.Load()
	var killed bool
	if err := a.db.Pool.QueryRow(context.Background(), "SELECT pg_terminate_backend($1)", int32(pid)).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminate B's listener %d: %v %v", pid, killed, err)
	}
	ca.RecordClientStatus("notes", nil, "failed", "while B was not listening")
	waitFor(t, "the change made while B reconnected", func() bool {
		e := b.entry(t, "notes")
		return e != nil && e.Status == healthcheck.StatusUnhealthy
	})
	waitFor(t, "a new listener", func() bool { return b.relay.listenPID.Load() != pid && b.relay.listenPID.Load() != 0 })

	time.Sleep(5 * time.Millisecond)
	ca.RecordSuccess("notes", nil)
	waitFor(t, "a change after the reconnect", func() bool {
		e := b.entry(t, "notes")
		return e != nil && e.Status == healthcheck.StatusHealthy
	})
	if !strings.Contains(b.warns.String(), "reconnecting") {
		t.Errorf("the lost connection was not said: %q", b.warns.String())
	}
}

// Close ends every goroutine the relay started and removes its socket.
func TestCloseLeavesNothing(t *testing.T) {
	dsn := newDB(t)
	h := newHost(t, dsn, "host-a")
	before := runtime.NumGoroutine()
	h.start(t)
	path := h.relay.SocketPath()
	h.relay.Close()
	h.relay.Close() // twice is fine
	waitFor(t, "the relay's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("the socket %s outlived its relay: %v", path, err)
	}
	_ = filepath.Base(path)
}

// Two state folders of one machine under the same host name are two hosts
// all the same: each gets the other's verdicts.
func TestSameHostNameTwoFolders(t *testing.T) {
	dsn := newDB(t)
	a, b := startHost(t, dsn, "same"), startHost(t, dsn, "same")
	a.checker(healthcheck.Options{}).RecordClientStatus("notes", nil, "failed", "connection refused")
	waitFor(t, "the verdict in the other folder", func() bool {
		e := b.entry(t, "notes")
		return e != nil && e.Status == healthcheck.StatusUnhealthy
	})
}

// Health is the batch's: a host of another batch on the same database
// neither gets nor gives verdicts.
func TestHealthIsPerBatch(t *testing.T) {
	dsn := newDB(t)
	a, b := startHost(t, dsn, "host-a"), startHost(t, dsn, "host-b")
	other := newHost(t, dsn, "host-c")
	odb, err := clusterdb.Open(context.Background(), dsn, "another-night")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(odb.Close)
	other.db = odb
	other.start(t)
	other.checker(healthcheck.Options{}).RecordClientStatus("notes", nil, "needs-auth", "another batch's login")
	a.checker(healthcheck.Options{}).RecordClientStatus("notes", nil, "failed", "connection refused")
	waitFor(t, "A's verdict on B", func() bool {
		e := b.entry(t, "notes")
		return e != nil && e.LastFailureCode == healthcheck.CodeTransport
	})
	time.Sleep(300 * time.Millisecond)
	if e := other.entry(t, "notes"); e == nil || e.LastFailureCode != healthcheck.CodeAuth {
		t.Fatalf("another batch's host took this batch's verdict: %+v", e)
	}
	if row := rowOf(t, odb, "notes"); row.Host != "host-c" || row.Rev != 1 {
		t.Fatalf("another batch's row: %+v", row)
	}
}

// A notice of an older verdict than the one in this host's cache leaves
// the cache as it is (the merge rule on the way in), and the next look at
// the file pushes this host's verdict (the rule on the way out).
func TestOlderNoticeDoesNotOverwrite(t *testing.T) {
	dsn := newDB(t)
	a := startHost(t, dsn, "host-a")
	b := newHost(t, dsn, "host-b")
	b.poll = time.Hour // B pushes only when told to
	b.start(t)
	newer := &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, CheckedAt: healthcheck.MillisOf(time.Now().Add(time.Minute)),
		NextRetryAt: healthcheck.MillisOf(time.Now().Add(2 * time.Minute)), FailureCount: 1,
		LastFailureCode: healthcheck.CodeAuth, LastError: "B's newer verdict"}
	seedEntry(t, b, "notes", newer)
	a.checker(healthcheck.Options{}).RecordClientStatus("notes", nil, "failed", "A's older verdict")
	waitFor(t, "A's row", func() bool { return rowOf(t, a.db, "notes").Rev == 1 })
	time.Sleep(300 * time.Millisecond) // B reads the row and keeps its own
	if e := b.entry(t, "notes"); e == nil || e.LastError != "B's newer verdict" {
		t.Fatalf("an older verdict replaced B's: %+v", e)
	}
	if !b.relay.onSync(context.Background(), func() { b.relay.scan(b.relay.ctx, false) }) {
		t.Fatal("B's relay is gone")
	}
	waitFor(t, "B's verdict on A", func() bool { e := a.entry(t, "notes"); return e != nil && e.LastError == "B's newer verdict" })
	if row := rowOf(t, a.db, "notes"); row.Rev != 2 || row.Host != "host-b" {
		t.Fatalf("the row after B's push: rev %d by %s", row.Rev, row.Host)
	}
}
