-- nightwatch's tables beside River's (rivermigrate owns river_*).

-- One row per server of a batch: its health entry as the local cache file
-- holds it (healthcheck.Entry as JSON), the host that wrote it last and a
-- revision that grows with every write, for LISTEN/NOTIFY readers.
CREATE TABLE nightwatch_health (
    batch      text        NOT NULL,
    server     text        NOT NULL,
    entry      jsonb       NOT NULL,
    rev        bigint      NOT NULL DEFAULT 1,
    host       text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (batch, server)
);

-- Cross-host single-flight: the one probe, or the one half-open trial, of
-- a server, held by one host until it ends or `until` passes.
CREATE TABLE nightwatch_claims (
    batch  text        NOT NULL,
    server text        NOT NULL,
    kind   text        NOT NULL,
    holder text        NOT NULL,
    until  timestamptz NOT NULL,
    PRIMARY KEY (batch, server, kind)
);

-- The night's journal (journal.Event as JSON), in the order the
-- coordinator appended it.
CREATE TABLE nightwatch_journal (
    id     bigserial   PRIMARY KEY,
    batch  text        NOT NULL,
    run_id text        NOT NULL,
    host   text        NOT NULL,
    at     timestamptz NOT NULL DEFAULT now(),
    event  jsonb       NOT NULL
);
CREATE INDEX nightwatch_journal_run ON nightwatch_journal (batch, run_id, id);

-- Every worker process, and its heartbeat.
CREATE TABLE nightwatch_workers (
    worker_id    text        PRIMARY KEY,
    batch        text        NOT NULL,
    host         text        NOT NULL,
    labels       text[]      NOT NULL DEFAULT '{}',
    pid          integer     NOT NULL,
    max_parallel integer     NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    stopped_at   timestamptz
);

-- One row per attempt the coordinator enqueued: where it ran and how it
-- ended (session.Outcome as JSON). The coordinator reads the ends from
-- here; `abandon` is its request that the worker stop the attempt.
CREATE TABLE nightwatch_attempts (
    batch        text        NOT NULL,
    run_id       text        NOT NULL,
    job          text        NOT NULL,
    attempt      integer     NOT NULL,
    river_job_id bigint,
    state        text        NOT NULL DEFAULT 'queued',
    host         text,
    worker_id    text,
    pgid         integer,
    start_id     text,
    abandon      text,
    outcome      jsonb,
    queued_at    timestamptz NOT NULL DEFAULT now(),
    started_at   timestamptz,
    ended_at     timestamptz,
    PRIMARY KEY (batch, run_id, job, attempt)
);

-- What running sessions saw (a server they could not use, a tool they
-- lack), for the coordinator's loop, in order.
CREATE TABLE nightwatch_observations (
    id      bigserial   PRIMARY KEY,
    batch   text        NOT NULL,
    run_id  text        NOT NULL,
    job     text        NOT NULL,
    attempt integer     NOT NULL,
    kind    text        NOT NULL,
    server  text        NOT NULL DEFAULT '',
    status  text        NOT NULL DEFAULT '',
    tool    text        NOT NULL DEFAULT '',
    why     text        NOT NULL DEFAULT '',
    pgid    integer     NOT NULL DEFAULT 0,
    host    text        NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX nightwatch_observations_run ON nightwatch_observations (batch, run_id, id);
