package clusterdb

import (
	"context"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/pgtest"
)

// Calls shared by two hosts come back by attempt, each once however often
// it was added, with what the host's ledger needs to find a repeat
// (effects.Same); another job's and another batch's are not among them.
func TestEffectsRoundTrip(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.New(t)
	db, err := Open(ctx, dsn, "b")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := Open(ctx, dsn, "other-batch")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	at := time.Date(2026, 12, 3, 1, 0, 0, 123456789, time.UTC)
	a1 := effects.Call{N: 1, Attempt: 1, Server: "notes", Tool: "append", Key: "k1", Digest: `{"line":"a"}`, At: at}
	a2 := effects.Call{N: 3, Attempt: 2, Server: "notes", Tool: "append", Key: "k2", Digest: `{"line":"b"}`, At: at.Add(time.Second)}
	for range 2 {
		if err := db.AddEffects(ctx, "run-1", "j", "host-b", []effects.Call{a2}); err != nil {
			t.Fatal(err)
		}
		if err := db.AddEffects(ctx, "run-1", "j", "host-a", []effects.Call{a1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AddEffects(ctx, "run-1", "other-job", "host-a", []effects.Call{a1}); err != nil {
		t.Fatal(err)
	}
	if err := other.AddEffects(ctx, "run-1", "j", "host-a", []effects.Call{a2}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Effects(ctx, "run-1", "j")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !effects.Same(got[0], a1) || !effects.Same(got[1], a2) || got[1].N != 3 || got[0].Digest != a1.Digest {
		t.Fatalf("Effects = %+v, want a1 then a2, once each", got)
	}
}
