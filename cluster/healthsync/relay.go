// Package healthsync is a cluster's shared health: it keeps every host's
// local cache file and the batch's nightwatch_health table in step, so that
// a server one host finds down is blocked on every host within a second
// while the hook's hot path stays a read of the local file, with no
// database. It also grants the cross-host claims (the one probe, the one
// half-open trial of a server) that a host's hooks ask for over a unix
// socket (cluster/peers is their client).
//
// One Relay runs per host (a host is one state folder, one cache file),
// inside a long-lived process: the worker or the coordinator.
//
//	outbound  the cache file is polled (its size, time and identity); each
//	          changed entry of the batch's servers is merged into its row
//	          (SELECT … FOR UPDATE, healthcheck.Merge) and NOTIFY'd in the
//	          same transaction
//	inbound   a dedicated connection LISTENs; another host's notice makes
//	          the relay read the row and merge it into the cache through
//	          Store.Update, under the cache lock; what it merged is
//	          remembered, so it is never pushed back (no ping-pong)
//	joining   every row is pulled when the relay starts and whenever the
//	          LISTEN connection was lost (notices sent meanwhile are gone)
//
// Deleting an entry (`nightwatch reset`) is not a verdict and is not
// shared: the table's row stays, and the next notice of it comes back.
// A verdict that arrives from another host is not announced to this
// host's events file: the host that reached it announced it, once.
//
// Use, in the worker and in the coordinator:
//
//	r, err := healthsync.Start(ctx, db, &healthcheck.Store{Path: statedir.Cache(stateDir)},
//		healthsync.Options{Host: host, Servers: names, Warn: warn})
//	if err != nil { … }
//	defer r.Close()
//	sessionEnv = append(sessionEnv, r.Environ()) // the hooks' way to the claims
package healthsync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/cluster/peers"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
)

// Options configure a Relay.
type Options struct {
	// Host is this host's name in the table and in claims
	// (clusterdb.Host() when empty). Each state folder must have its own.
	Host string
	// Servers are the batch's server names: only their entries are
	// shared; a cache's other entries stay local.
	Servers []string
	// Warn receives what must not stay silent (discarded when nil).
	Warn func(string)
	// Poll is how often the cache file is looked at (100 ms): half the
	// time a change waits before it leaves the host.
	Poll time.Duration
	// SocketDir is the folder of the claims socket (a nightwatch-<uid>
	// folder of the system's temporary folder when empty). It must be
	// ours and closed to everyone else (0700); it is created so.
	SocketDir string
}

// SocketEnv names the variable that gives a session's hooks the relay's
// SocketPath (the hook reads it through cluster/peers).
const SocketEnv = peers.SocketEnv

// DefaultPoll is Options.Poll's default.
const DefaultPoll = 100 * time.Millisecond

// Relay is one host's end of the shared health.
type Relay struct {
	db     *clusterdb.DB
	store  *healthcheck.Store
	host   string
	poll   time.Duration
	warn   func(string)
	shared map[string]bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	notices chan clusterdb.HealthNotice
	repull  chan struct{}
	// jobs run on the sync goroutine for the claims socket (see onSync).
	jobs chan func()

	// Owned by the sync goroutine (and by Start before it runs).
	known    map[string][]byte // the entry the table and this cache agree on, as JSON
	revs     map[string]int64  // the newest revision seen of each row
	stamp    fileStamp
	dirty    bool // a push failed: look again even if the file did not change
	needPull bool // a pull of every row failed: try again at the next poll

	listener  *pgx.Conn
	listenPID atomic.Uint32

	sock     net.Listener
	sockPath string
	connMu   sync.Mutex
	conns    map[net.Conn]struct{}
	// accepted counts the socket's connections: the benchmark checks
	// with it that a decision the cache makes never dials.
	accepted atomic.Int64

	warnMu   sync.Mutex
	lastWarn map[string]time.Time
}

// Start connects the cache of store to the batch's shared health: it
// LISTENs, pulls every row into the cache, pushes what the cache knows
// that the table does not, opens the claims socket, and keeps all of it
// going until Close.
func Start(ctx context.Context, db *clusterdb.DB, store *healthcheck.Store, opts Options) (*Relay, error) {
	if db == nil || store == nil || store.Path == "" {
		return nil, errors.New("shared health needs the cluster's database and a cache file")
	}
	r := &Relay{
		db: db, store: store, host: opts.Host, poll: opts.Poll, warn: opts.Warn,
		shared:  map[string]bool{},
		notices: make(chan clusterdb.HealthNotice, 256),
		repull:  make(chan struct{}, 1),
		jobs:    make(chan func()),
		known:   map[string][]byte{}, revs: map[string]int64{},
		conns: map[net.Conn]struct{}{}, lastWarn: map[string]time.Time{},
	}
	if r.host == "" {
		r.host = clusterdb.Host()
	}
	if r.poll <= 0 {
		r.poll = DefaultPoll
	}
	if r.warn == nil {
		r.warn = func(string) {}
	}
	for _, s := range opts.Servers {
		r.shared[s] = true
	}
	if len(r.shared) == 0 {
		r.warn("nightwatch: shared health: the batch names no MCP servers, so no health is shared between hosts")
	}
	// The relay's goroutines live as long as the relay, not as the
	// caller's start-up context; Close ends them.
	r.ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))

	sock, path, err := listenSocket(opts.SocketDir, store.Path, r.host)
	if err != nil {
		r.cancel()
		return nil, err
	}
	r.sock, r.sockPath = sock, path

	conn, err := r.listen(ctx)
	if err != nil {
		r.cancel()
		_ = sock.Close()
		return nil, err
	}
	r.listener = conn
	if err := r.pullAll(ctx); err != nil {
		r.cancel()
		_ = sock.Close()
		_ = conn.Close(context.Background())
		return nil, err
	}
	r.scan(ctx, true)

	r.wg.Add(3)
	go r.listenLoop()
	go r.syncLoop()
	go r.serve()
	return r, nil
}

// SocketPath is where the host's hooks ask for claims (peers.SocketEnv).
func (r *Relay) SocketPath() string { return r.sockPath }

// Environ is the one variable a session's environment needs for its
// hooks to claim through this relay: SocketEnv=SocketPath(). It is not a
// secret.
func (r *Relay) Environ() string { return SocketEnv + "=" + r.sockPath }

// Host is the relay's name in the cluster.
func (r *Relay) Host() string { return r.host }

// Close stops every goroutine of the relay and waits for them; the socket
// is removed.
func (r *Relay) Close() {
	r.once.Do(func() {
		r.cancel()
		_ = r.sock.Close()
		r.connMu.Lock()
		for c := range r.conns {
			_ = c.Close()
		}
		r.connMu.Unlock()
		r.wg.Wait()
		_ = os.Remove(r.sockPath)
	})
}

// warnf says msg, at most once per 10 s for the same key: a database that
// is down would otherwise be reported ten times a second.
func (r *Relay) warnf(key, format string, args ...any) {
	msg := redact.String(fmt.Sprintf(format, args...))
	r.warnMu.Lock()
	last, seen := r.lastWarn[key]
	now := time.Now()
	if seen && now.Sub(last) < 10*time.Second {
		r.warnMu.Unlock()
		return
	}
	r.lastWarn[key] = now
	r.warnMu.Unlock()
	r.warn("nightwatch: shared health: " + msg)
}

// listen takes a connection out of the pool for LISTEN alone (a pooled
// connection would be handed to others between notices).
func (r *Relay) listen(ctx context.Context) (*pgx.Conn, error) {
	pc, err := r.db.Pool.Acquire(ctx)
	if err != nil {
		return nil, clusterdb.Redacted("shared health: connect to listen for changes: ", err)
	}
	conn := pc.Hijack()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{clusterdb.HealthChannel}.Sanitize()); err != nil {
		_ = conn.Close(context.Background())
		return nil, clusterdb.Redacted("shared health: listen for changes: ", err)
	}
	r.listenPID.Store(conn.PgConn().PID())
	return conn, nil
}

// listenLoop hands other hosts' notices to the sync goroutine, and
// reconnects (then asks for a pull of everything) when the connection is
// lost.
func (r *Relay) listenLoop() {
	defer r.wg.Done()
	conn := r.listener
	defer func() {
		if conn != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = conn.Close(cctx)
			cancel()
		}
	}()
	for {
		n, err := conn.WaitForNotification(r.ctx)
		if err == nil {
			var notice clusterdb.HealthNotice
			// This relay's own notices are not filtered by host name (two
			// state folders of one machine may share it): the sync
			// goroutine already holds their revision and skips them.
			if json.Unmarshal([]byte(n.Payload), &notice) != nil || notice.Batch != r.db.Batch || !r.shared[notice.Server] {
				continue
			}
			select {
			case r.notices <- notice:
			case <-r.ctx.Done():
				return
			}
			continue
		}
		if r.ctx.Err() != nil {
			return
		}
		r.warnf("listen", "lost the connection that listens for other hosts' changes (%v); reconnecting", err)
		_ = conn.Close(context.Background())
		conn = nil
		for wait := 50 * time.Millisecond; conn == nil; wait = min(wait*2, 5*time.Second) {
			select {
			case <-r.ctx.Done():
				return
			case <-time.After(wait):
			}
			c, err := r.listen(r.ctx)
			if err != nil {
				if r.ctx.Err() != nil {
					return
				}
				r.warnf("listen", "%v; trying again", err)
				continue
			}
			conn = c
		}
		// Notices sent while nobody listened are lost: read every row.
		select {
		case r.repull <- struct{}{}:
		default:
		}
	}
}

// syncLoop is the one goroutine that reads and writes the cache and the
// table for the relay, so its memory of what was pushed and pulled needs
// no lock and no change overtakes another.
func (r *Relay) syncLoop() {
	defer r.wg.Done()
	t := time.NewTicker(r.poll)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case n := <-r.notices:
			r.onNotice(n)
		case <-r.repull:
			r.needPull = true
			r.retryPull()
		case <-t.C:
			if r.needPull {
				r.retryPull()
			}
			r.scan(r.ctx, false)
		case job := <-r.jobs:
			job()
		}
	}
}

// onSync runs job on the sync goroutine and waits for it (false: the relay
// closed or ctx ended first).
func (r *Relay) onSync(ctx context.Context, job func()) bool {
	done := make(chan struct{})
	select {
	case r.jobs <- func() { job(); close(done) }:
	case <-ctx.Done():
		return false
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// onSyncWithin is onSync for the claims socket: bounded well within the
// client's own timeout (2 s), so that a sync goroutine stuck on a slow
// database delays a claim's answer, never loses it.
func (r *Relay) onSyncWithin(ctx context.Context, job func()) {
	ctx, cancel := context.WithTimeout(ctx, 750*time.Millisecond)
	defer cancel()
	r.onSync(ctx, job)
}

// pullOne merges server's row into the cache now.
func (r *Relay) pullOne(server string) {
	row, ok, err := r.db.HealthRowOf(r.ctx, server)
	if err != nil {
		r.warnf("read", "%v", err)
		return
	}
	if ok {
		r.absorb(row)
	}
}

func (r *Relay) retryPull() {
	if err := r.pullAll(r.ctx); err != nil {
		if r.ctx.Err() == nil {
			r.warnf("pull", "%v; trying again", err)
		}
		return
	}
	r.needPull = false
}

func (r *Relay) onNotice(n clusterdb.HealthNotice) {
	if n.Rev <= r.revs[n.Server] {
		return // already seen (a pull overtook the notice)
	}
	row, ok, err := r.db.HealthRowOf(r.ctx, n.Server)
	if err != nil {
		if r.ctx.Err() == nil {
			r.warnf("read", "%v", err)
		}
		return
	}
	if ok {
		r.absorb(row)
	}
}

// pullAll merges every row of the batch's servers into the cache.
func (r *Relay) pullAll(ctx context.Context) error {
	rows, err := r.db.HealthRows(ctx)
	if err != nil {
		return clusterdb.Redacted("shared health: ", err)
	}
	var mine []clusterdb.HealthRow
	for _, row := range rows {
		if r.shared[row.Server] {
			mine = append(mine, row)
		}
	}
	r.absorb(mine...)
	return nil
}

// errUnchanged aborts a Store.Update that would write the same file.
var errUnchanged = errors.New("unchanged")

// absorb merges rows into the cache under its lock, by healthcheck.Merge:
// a row that is newer replaces the entry and is remembered as agreed (so
// it is not pushed back); an entry that is newer stays, and the next scan
// pushes it.
func (r *Relay) absorb(rows ...clusterdb.HealthRow) {
	type in struct {
		row   clusterdb.HealthRow
		entry *healthcheck.Entry
	}
	var ins []in
	for _, row := range rows {
		var e healthcheck.Entry
		if err := json.Unmarshal(row.Entry, &e); err != nil {
			r.warnf("decode:"+row.Server, "the shared health of %s (written by %s) is unreadable, kept this host's: %v", row.Server, row.Host, err)
			continue
		}
		ins = append(ins, in{row, &e})
	}
	if len(ins) == 0 {
		return
	}
	agreed := map[string][]byte{}
	err := r.store.Update(func(f *healthcheck.File) error {
		clear(agreed)
		changed := false
		for _, it := range ins {
			local := f.Entry(it.row.Server)
			switch {
			case healthcheck.Newer(it.entry, local):
				c := *it.entry
				f.Servers[it.row.Server] = &c
				agreed[it.row.Server] = encode(&c)
				changed = true
			case !healthcheck.Newer(local, it.entry):
				agreed[it.row.Server] = encode(local) // the same verdict
			}
		}
		if !changed {
			return errUnchanged
		}
		return nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		r.warnf("absorb", "cannot merge other hosts' health into %s: %v", r.store.Path, err)
		return
	}
	for _, it := range ins {
		r.revs[it.row.Server] = max(r.revs[it.row.Server], it.row.Rev)
	}
	for s, b := range agreed {
		r.known[s] = b
	}
}

func encode(e *healthcheck.Entry) []byte {
	b, _ := json.Marshal(e)
	return b
}

// fileStamp is what tells, without reading it, that the cache file
// changed: every write renames a new file into place (a new identity),
// and the size and time are checked as well.
type fileStamp struct {
	fi os.FileInfo
}

func (s fileStamp) same(fi os.FileInfo) bool {
	return s.fi != nil && fi != nil && os.SameFile(s.fi, fi) && s.fi.Size() == fi.Size() && s.fi.ModTime().Equal(fi.ModTime())
}

// scan pushes the entries of the batch's servers that changed in the cache
// since they were last pushed or pulled.
func (r *Relay) scan(ctx context.Context, force bool) {
	fi, err := os.Stat(r.store.Path)
	if err != nil {
		fi = nil
	}
	if !force && !r.dirty && r.stamp.same(fi) {
		return
	}
	r.stamp = fileStamp{fi}
	if fi == nil {
		return
	}
	f, err := r.store.Read()
	if err != nil {
		r.warnf("readcache", "%v", err)
		return
	}
	r.dirty = false
	for server := range r.shared {
		e := f.Entry(server)
		if e == nil {
			continue
		}
		b := encode(e)
		if bytes.Equal(b, r.known[server]) {
			continue
		}
		if err := r.push(ctx, server, e, b); err != nil {
			if ctx.Err() == nil {
				r.warnf("push", "%v", err)
			}
			r.dirty = true
		}
	}
}

// push merges one entry of this cache into its row, under the row's lock.
func (r *Relay) push(ctx context.Context, server string, e *healthcheck.Entry, b []byte) error {
	remoteNewer := false
	row, wrote, err := r.db.PutHealth(ctx, r.host, server, func(cur []byte) ([]byte, error) {
		remoteNewer = false
		if cur == nil {
			return b, nil
		}
		var remote healthcheck.Entry
		if err := json.Unmarshal(cur, &remote); err != nil {
			r.warnf("decode:"+server, "the shared health of %s is unreadable; replacing it with this host's: %v", server, err)
			return b, nil
		}
		if healthcheck.Newer(e, &remote) {
			return b, nil
		}
		remoteNewer = healthcheck.Newer(&remote, e)
		return nil, nil
	})
	if err != nil {
		return errors.New(redact.String(err.Error()))
	}
	switch {
	case wrote:
		r.known[server] = b
		r.revs[server] = max(r.revs[server], row.Rev)
	case remoteNewer:
		r.absorb(row) // this host missed it: take it now
	default:
		r.known[server] = b // the table has the same verdict
		r.revs[server] = max(r.revs[server], row.Rev)
	}
	return nil
}
