package clusterdb

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// Counter counts the statements that the pools opened while it is
// installed (CountStatements) send to Postgres, River's included, each
// statement of a batch as one: what a benchmark of the cluster's cost per
// job measures.
type Counter struct {
	mu sync.Mutex
	n  int
	by map[string]int
}

var counter atomic.Pointer[Counter]

// CountStatements installs a new Counter for the pools Open makes from now
// on, until uninstall is called.
func CountStatements() (c *Counter, uninstall func()) {
	c = &Counter{by: map[string]int{}}
	counter.Store(c)
	return c, func() { counter.CompareAndSwap(c, nil) }
}

// N is how many statements were sent.
func (c *Counter) N() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Reset starts counting from zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n, c.by = 0, map[string]int{}
}

// By is how many times each statement was sent, by its first words.
func (c *Counter) By() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.by))
	for k, v := range c.by {
		out[k] = v
	}
	return out
}

func (c *Counter) add(sql string) {
	key := strings.Join(strings.Fields(sql), " ")
	if len(key) > 70 {
		key = key[:70]
	}
	c.mu.Lock()
	c.n++
	c.by[key]++
	c.mu.Unlock()
}

// TraceQueryStart counts one statement (pgx.QueryTracer).
func (c *Counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.add(d.SQL)
	return ctx
}

func (c *Counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *Counter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

// TraceBatchQuery counts one statement of a batch (pgx.BatchTracer).
func (c *Counter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.add(d.SQL)
}

func (c *Counter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
