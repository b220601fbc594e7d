package clusterdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/nightwatch-dev/nightwatch/journal"
)

// AppendJournal adds one event of run to the shared journal, as host wrote
// it. The event is stored as the journal file has it (already redacted).
func (db *DB) AppendJournal(ctx context.Context, host string, ev journal.Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", ev.Type, err)
	}
	_, err = db.Pool.Exec(ctx, "INSERT INTO nightwatch_journal (batch, run_id, host, event) VALUES ($1, $2, $3, $4)",
		db.Batch, ev.Run, host, b)
	if err != nil {
		return fmt.Errorf("the shared journal: %w", err)
	}
	return nil
}

// AppendJournalMany adds evs to the shared journal, in order, in one
// statement.
func (db *DB) AppendJournalMany(ctx context.Context, host string, evs []journal.Event) error {
	if len(evs) == 0 {
		return nil
	}
	runs, lines, err := JournalRows(evs)
	if err != nil {
		return err
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO nightwatch_journal (batch, run_id, host, event) `+JournalRowsSQL("$1", "$2", "$3", "$4"),
		db.Batch, host, runs, lines); err != nil {
		return fmt.Errorf("the shared journal: %w", err)
	}
	return nil
}

// JournalRows are evs as a statement adds them to nightwatch_journal
// (JournalRowsSQL): each event's run and its line.
func JournalRows(evs []journal.Event) (runs, lines []string, err error) {
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			return nil, nil, fmt.Errorf("encode %s event: %w", ev.Type, err)
		}
		runs, lines = append(runs, ev.Run), append(lines, string(b))
	}
	return runs, lines, nil
}

// JournalRowsSQL is the SELECT that gives INSERT INTO nightwatch_journal
// (batch, run_id, host, event) its rows, in order, from the parameters
// that hold the batch, the host, and JournalRows' runs and lines.
func JournalRowsSQL(batch, host, runs, lines string) string {
	return "SELECT " + batch + ", r.run, " + host + ", r.line::jsonb FROM unnest(" + runs + "::text[], " + lines +
		"::text[]) WITH ORDINALITY AS r(run, line, n) ORDER BY r.n"
}

// RunEvents are the events of run runID, in the order they were appended.
func (db *DB) RunEvents(ctx context.Context, runID string) ([]journal.Event, error) {
	rows, err := db.Pool.Query(ctx, "SELECT event FROM nightwatch_journal WHERE batch = $1 AND run_id = $2 ORDER BY id", db.Batch, runID)
	if err != nil {
		return nil, fmt.Errorf("read the shared journal of run %s: %w", runID, err)
	}
	var out []journal.Event
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		var ev journal.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			return nil, fmt.Errorf("the shared journal of run %s has an unreadable event: %w", runID, err)
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}

// LatestRun is the batch's newest run in the shared journal ("" when it
// has none) and whether it ended (run-finished or run-closed).
func (db *DB) LatestRun(ctx context.Context) (runID string, ended bool, err error) {
	err = db.Pool.QueryRow(ctx, `SELECT run_id FROM nightwatch_journal WHERE batch = $1 AND event->>'type' = $2
		ORDER BY id DESC LIMIT 1`, db.Batch, string(journal.RunStarted)).Scan(&runID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("find the newest run in the shared journal: %w", err)
	}
	err = db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM nightwatch_journal WHERE batch = $1 AND run_id = $2
		AND event->>'type' IN ($3, $4))`, db.Batch, runID, string(journal.RunFinished), string(journal.RunClosed)).Scan(&ended)
	if err != nil {
		return "", false, fmt.Errorf("read the shared journal: %w", err)
	}
	return runID, ended, nil
}

// Runs are the batch's runs in the shared journal, newest first.
func (db *DB) Runs(ctx context.Context) ([]string, error) {
	rows, err := db.Pool.Query(ctx, `SELECT run_id FROM nightwatch_journal WHERE batch = $1 AND event->>'type' = $2
		ORDER BY id DESC`, db.Batch, string(journal.RunStarted))
	if err != nil {
		return nil, fmt.Errorf("list the runs in the shared journal: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
