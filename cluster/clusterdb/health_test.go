package clusterdb

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit/pgtest"
)

func migrated(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), pgtest.New(t), "b")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

// Hosts writing a server's first row at the same moment: none fails and
// none is lost; each write sees the one before it under the row's lock,
// and each is notified with its revision.
func TestPutHealthConcurrentFirstWrites(t *testing.T) {
	db := migrated(t)
	ctx := context.Background()
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listener := conn.Hijack()
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, "LISTEN "+HealthChannel); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	var seenEmpty atomic.Int64
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = db.PutHealth(ctx, fmt.Sprintf("h%d", i), "notes", func(cur []byte) ([]byte, error) {
				if cur == nil {
					seenEmpty.Add(1)
				}
				return json.Marshal(map[string]int{"by": i})
			})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	row, ok, err := db.HealthRowOf(ctx, "notes")
	if err != nil || !ok || row.Rev != n {
		t.Fatalf("row %+v %v %v, want revision %d", row, ok, err, n)
	}
	revs := map[int64]bool{}
	for len(revs) < n {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		note, err := listener.WaitForNotification(wctx)
		cancel()
		if err != nil {
			t.Fatalf("after %d notices: %v", len(revs), err)
		}
		var hn HealthNotice
		if err := json.Unmarshal([]byte(note.Payload), &hn); err != nil || hn.Batch != "b" || hn.Server != "notes" {
			t.Fatalf("notice %q: %v", note.Payload, err)
		}
		revs[hn.Rev] = true
	}
	// A merge that keeps the row writes nothing and notifies nothing.
	if _, wrote, err := db.PutHealth(ctx, "h0", "notes", func([]byte) ([]byte, error) { return nil, nil }); err != nil || wrote {
		t.Fatalf("a kept row: wrote %v, %v", wrote, err)
	}
	if again, _, _ := db.HealthRowOf(ctx, "notes"); again.Rev != n {
		t.Fatalf("a kept row moved to revision %d", again.Rev)
	}
}

// Of many hosts claiming at once, one is granted; the others learn who;
// a release by someone else changes nothing; the holder's release and the
// end of its time free the claim.
func TestClaims(t *testing.T) {
	db := migrated(t)
	ctx := context.Background()
	var granted atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, holder, err := db.Claim(ctx, "notes", "probe", fmt.Sprintf("h%d#t", i), time.Minute)
			if err != nil {
				t.Error(err)
			}
			if ok {
				granted.Add(1)
			} else if holder == "" {
				t.Error("a denied claim does not say who holds it")
			}
		}()
	}
	wg.Wait()
	if granted.Load() != 1 {
		t.Fatalf("%d claims granted, want 1", granted.Load())
	}
	var holder string
	if err := db.Pool.QueryRow(ctx, "SELECT holder FROM nightwatch_claims WHERE kind = 'probe'").Scan(&holder); err != nil {
		t.Fatal(err)
	}
	if err := db.ReleaseClaim(ctx, "notes", "probe", "someone-else"); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := db.Claim(ctx, "notes", "probe", "late#t", time.Minute); ok {
		t.Fatal("a release by another host freed the claim")
	}
	if err := db.ReleaseClaim(ctx, "notes", "probe", holder); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := db.Claim(ctx, "notes", "probe", "next#t", 50*time.Millisecond); err != nil || !ok {
		t.Fatalf("a released claim: %v %v", ok, err)
	}
	// The kinds are separate claims.
	if ok, _, _ := db.Claim(ctx, "notes", "trial", "other#t", time.Minute); !ok {
		t.Fatal("the trial claim was taken by the probe's")
	}
	time.Sleep(100 * time.Millisecond)
	if ok, _, err := db.Claim(ctx, "notes", "probe", "after#t", time.Minute); err != nil || !ok {
		t.Fatalf("a claim whose time ran out: %v %v", ok, err)
	}
}
