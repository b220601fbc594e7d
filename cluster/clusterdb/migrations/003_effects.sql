-- The jobs' side-effect ledgers (package effects), shared: every
-- successful call to a tool that is not read-only, as the host that ran
-- the attempt recorded it (n: its number in that host's ledger). A retry
-- on another host brings them into its own ledger, so that its hooks
-- refuse an exact repeat.
CREATE TABLE nightwatch_effects (
    batch   text        NOT NULL,
    run_id  text        NOT NULL,
    job     text        NOT NULL,
    attempt integer     NOT NULL,
    n       integer     NOT NULL,
    server  text        NOT NULL,
    tool    text        NOT NULL,
    key     text        NOT NULL,
    digest  text        NOT NULL DEFAULT '',
    at      timestamptz NOT NULL,
    host    text        NOT NULL,
    PRIMARY KEY (batch, run_id, job, attempt, n)
);
