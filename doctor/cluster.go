package doctor

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// The cluster checks' IDs.
const (
	clusterConnID    = "cluster-connection"
	clusterSchemaID  = "cluster-schema"
	clusterWorkersID = "cluster-workers"
	clusterPinsID    = "cluster-pins"
)

// clusterConnectTimeout bounds connecting to the cluster's Postgres: a
// database that does not answer in that time is as good as down for the
// night.
const clusterConnectTimeout = 10 * time.Second

// cluster checks a batch with a cluster: section: its connection string
// is set (where it was found, never its value), the database answers, the
// schema is one this nightwatch reads, each worker's heartbeat, and that
// every job pinned by hosts: has a worker carrying one of its labels.
func (e *env) cluster(ctx context.Context) []Check {
	b := e.batch
	if b == nil || b.Cluster == nil {
		return nil
	}
	conn := func(l Level, detail, fix string) []Check {
		return []Check{{ID: clusterConnID, Title: "cluster database", Level: l, Detail: detail, Fix: fix}}
	}
	name := b.Cluster.DatabaseEnv
	at := fmt.Sprintf("%s:%d", b.File, b.Cluster.Line)
	dsn, err := clusterdb.DSN(b, e.Getenv)
	if err != nil {
		where := "the environment"
		if b.EnvFile != "" {
			where += " or env_file " + b.EnvFile
		}
		fix := fmt.Sprintf("set %s=postgres://user:password@host:5432/db in %s (launchd and cron start the night without your shell's variables), "+
			"on every host of the cluster", name, envFileOr(b))
		return conn(Fail, fmt.Sprintf("%s: cluster.database_env names %s, which is not set in %s", at, name, where), fix)
	}
	from := dsnSource(b, name, e.Getenv)
	if _, err := pgx.ParseConfig(dsn); err != nil {
		return conn(Fail, fmt.Sprintf("%s (%s, from %s) is not a Postgres connection string: %s", name, at, from, oneLine(redactDSN(err.Error(), dsn))),
			fmt.Sprintf("set %s to postgres://user:password@host:5432/db (or host=… port=… dbname=… user=…), with special characters of the password %%-escaped", name))
	}
	cctx, cancel := context.WithTimeout(ctx, clusterConnectTimeout)
	defer cancel()
	db, err := clusterdb.Open(cctx, dsn, b.Name)
	if err != nil {
		return conn(Fail, fmt.Sprintf("%s (%s, from %s) does not answer: %s", name, at, from, oneLine(redactDSN(err.Error(), dsn))),
			fmt.Sprintf("start the Postgres server %s names, or correct its host, port, user, password and database; every host of the cluster must reach it", name))
	}
	defer db.Close()
	out := conn(OK, fmt.Sprintf("%s (from %s) reaches the cluster's Postgres at %s", name, from, serverOf(dsn)), "")

	have, river, err := db.SchemaVersion(cctx)
	if err != nil {
		return append(out, Check{ID: clusterSchemaID, Title: "cluster schema", Level: Fail,
			Detail: "cannot read the schema version: " + oneLine(redactDSN(err.Error(), dsn)),
			Fix:    "give the user in " + name + " the right to read the database's tables"})
	}
	out = append(out, schemaCheck(have, clusterdb.Version(), river, b.File))
	if have == 0 {
		// No nightwatch_workers table yet: no worker ever started.
		return append(out, workerChecks(nil, nil, b.File, b.MaxParallel, b.Cluster.RescueAfter)...)
	}
	ws, ages, err := db.Workers(cctx)
	if err != nil {
		return append(out, Check{ID: clusterWorkersID, Title: "cluster workers", Level: Fail,
			Detail: "cannot list the workers: " + oneLine(redactDSN(err.Error(), dsn)), Fix: "run `nightwatch run " + b.File + "` once to migrate the schema"})
	}
	out = append(out, workerChecks(ws, ages, b.File, b.MaxParallel, b.Cluster.RescueAfter)...)
	return append(out, pinChecks(b, ws, ages)...)
}

// envFileOr names where a variable of the night is best set.
func envFileOr(b *jobs.Batch) string {
	if b.EnvFile != "" {
		return b.EnvFile
	}
	return "an env_file of the batch (env_file: ./cluster.env)"
}

// dsnSource says where the connection string was found, as DSN looks:
// the environment first, then the batch's env_file and env.
func dsnSource(b *jobs.Batch, name string, getenv func(string) (string, bool)) string {
	if v, ok := getenv(name); ok && v != "" {
		return "the environment; launchd and cron give the night no shell variables, so put it in env_file for a scheduled night"
	}
	if slices.Contains(b.EnvFileKeys, name) {
		return "env_file " + b.EnvFile
	}
	return "the batch's env:"
}

// serverOf names the database's host, port and name without user or
// password.
func serverOf(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "the configured server"
	}
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

// passwordOf is the connection string's password, "" when it has none.
func passwordOf(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return ""
	}
	return cfg.Password
}

// redactDSN removes the connection string and its password from s, even
// when the process-wide redaction does not know them yet.
func redactDSN(s, dsn string) string {
	s = redact.String(s, dsn)
	if pw := passwordOf(dsn); pw != "" {
		s = strings.ReplaceAll(s, pw, "[REDACTED]")
	}
	return s
}

// schemaCheck judges nightwatch's schema version in the database (have)
// against this binary's (want), and whether River's tables are there.
func schemaCheck(have, want int, river bool, file string) Check {
	c := Check{ID: clusterSchemaID, Title: "cluster schema"}
	switch {
	case have > want:
		c.Level = Fail
		c.Detail = fmt.Sprintf("the database's nightwatch schema is at version %d, newer than this nightwatch's %d: another host runs a newer nightwatch", have, want)
		c.Fix = "upgrade nightwatch on this host (every host of the cluster runs the same release)"
	case have == 0 && !river:
		c.Level = Warn
		c.Detail = "not created yet: the first `nightwatch run` or `nightwatch worker` creates it"
		c.Fix = fmt.Sprintf("nothing to do before the night: `nightwatch run %s` (or `nightwatch worker %s`) creates it under a lock", file, file)
	case have < want:
		c.Level = Warn
		c.Detail = fmt.Sprintf("the database's nightwatch schema is at version %d, this nightwatch's is %d: migrated at the next run", have, want)
		c.Fix = fmt.Sprintf("nothing to do: `nightwatch run %s` migrates it; upgrade the other hosts too", file)
	case !river:
		c.Level = Warn
		c.Detail = fmt.Sprintf("nightwatch's schema is at version %d but River's tables (river_job) are missing: migrated at the next run", have)
		c.Fix = fmt.Sprintf("nothing to do: `nightwatch run %s` runs River's migrations; find out who dropped them", file)
	default:
		c.Level = OK
		c.Detail = fmt.Sprintf("nightwatch's schema at version %d (this nightwatch's), River's tables present", have)
	}
	return c
}

// fresh says whether a heartbeat of that age means its worker runs.
func fresh(age time.Duration) bool { return age < clusterdb.StaleAfter }

// workerChecks judges the workers' heartbeats (ages by the database's
// clock): one ok per running worker, one warning per worker that stopped
// beating without stopping cleanly, the cleanly stopped ones in one line,
// and a warning when none runs. maxParallel is the batch's.
func workerChecks(ws []clusterdb.Worker, ages []time.Duration, file string, maxParallel int, rescueAfter time.Duration) []Check {
	var out []Check
	add := func(l Level, detail, fix string) {
		out = append(out, Check{ID: clusterWorkersID, Title: "cluster workers", Level: l, Detail: detail, Fix: fix})
	}
	start := fmt.Sprintf("on each host of the cluster: `nightwatch worker %s [--label L]... [--max-parallel N]`", file)
	if len(ws) == 0 {
		add(Warn, fmt.Sprintf("no worker has started: run `nightwatch worker %s` on each host", file), start)
		return out
	}
	running := 0
	var stopped []string
	for i, w := range ws {
		age := ages[i]
		switch {
		case !w.StoppedAt.IsZero():
			stopped = append(stopped, fmt.Sprintf("%s on %s", w.ID, w.Host))
		case fresh(age):
			running++
			add(OK, fmt.Sprintf("worker %s on host %s runs: labels %s, max_parallel %d, heard from %s ago",
				w.ID, w.Host, labelList(w), w.MaxParallel, ago(age)), "")
		default:
			fix := fmt.Sprintf("start it again on %s: `%s`", w.Host, workerCommand(w, file, maxParallel))
			if rescueAfter > 0 {
				fix += fmt.Sprintf("; River rescues an attempt it was running once that attempt has run for rescue_after (%s), and the night counts it once, as a crash", rescueAfter)
			}
			add(Warn, fmt.Sprintf("worker %s on host %s last heard from %s ago: it died or lost the database", w.ID, w.Host, ago(age)), fix)
		}
	}
	if len(stopped) > 0 {
		add(OK, fmt.Sprintf("%d stopped cleanly: %s", len(stopped), strings.Join(stopped, ", ")), "")
	}
	if running == 0 {
		add(Warn, "no worker runs now: no attempt of the night can start", start)
	}
	return out
}

// workerCommand is the command that starts worker w again as it ran: its
// host name (so that the new worker ends the sessions the dead one left on
// that host, and jobs pinned to the name still find it), its --label
// flags, and its --max-parallel when it was not the batch's.
func workerCommand(w clusterdb.Worker, file string, maxParallel int) string {
	args := []string{"nightwatch", "worker", shellWord(file), "--host", shellWord(w.Host)}
	for _, l := range workerLabels(w)[1:] {
		args = append(args, "--label", shellWord(l))
	}
	if w.MaxParallel > 0 && w.MaxParallel != maxParallel {
		args = append(args, "--max-parallel", strconv.Itoa(w.MaxParallel))
	}
	return strings.Join(args, " ")
}

// shellWord is s as one word of a shell command: quoted only when it
// needs to be.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@=+,") == "" {
		return s
	}
	return text.ShellQuote(s)
}

// labelList is a worker's labels as hosts: matches them: its host name
// first, then its --label flags.
func labelList(w clusterdb.Worker) string {
	return "[" + strings.Join(workerLabels(w), ", ") + "]"
}

func workerLabels(w clusterdb.Worker) []string {
	ls := []string{w.Host}
	for _, l := range w.Labels {
		if !slices.Contains(ls, l) {
			ls = append(ls, l)
		}
	}
	return ls
}

// carries says whether worker w can run a job pinned to hosts.
func carries(w clusterdb.Worker, hosts []string) bool {
	for _, l := range workerLabels(w) {
		if slices.Contains(hosts, l) {
			return true
		}
	}
	return false
}

// pinChecks warns of each job pinned by hosts: to labels that no worker
// the cluster knows carries (it would wait all night), and of one whose
// only carriers are not running now.
func pinChecks(b *jobs.Batch, ws []clusterdb.Worker, ages []time.Duration) []Check {
	var out []Check
	pinned := 0
	for _, j := range b.Jobs {
		if j == nil || len(j.Hosts) == 0 {
			continue
		}
		pinned++
		var live, gone, restart []string
		for i, w := range ws {
			if !carries(w, j.Hosts) {
				continue
			}
			if w.StoppedAt.IsZero() && fresh(ages[i]) {
				live = append(live, w.Host)
			} else {
				if !slices.Contains(gone, w.Host) {
					restart = append(restart, fmt.Sprintf("`%s` on %s", workerCommand(w, b.File, b.MaxParallel), w.Host))
				}
				gone = append(gone, w.Host)
			}
		}
		at := fmt.Sprintf("%s:%d: job %s is pinned to hosts [%s]", b.File, j.Line, j.Name, strings.Join(j.Hosts, ", "))
		switch {
		case len(live) > 0:
			continue
		case len(gone) > 0:
			out = append(out, Check{ID: clusterPinsID, Title: "jobs pinned to hosts", Level: Warn,
				Detail: fmt.Sprintf("%s: only workers that are not running carry them (on %s): it waits until one starts", at, strings.Join(dedup(gone), ", ")),
				Fix:    "start " + strings.Join(restart, " or ")})
		default:
			out = append(out, Check{ID: clusterPinsID, Title: "jobs pinned to hosts", Level: Warn,
				Detail: fmt.Sprintf("%s: no worker the cluster knows carries one of those labels: it waits until one starts", at),
				Fix: fmt.Sprintf("start `nightwatch worker %s --label %s` on the host meant for it, or change its hosts: (a worker's labels are its host name and its --label flags)",
					b.File, j.Hosts[0])})
		}
	}
	if pinned > 0 && len(out) == 0 {
		out = append(out, ok(clusterPinsID, "jobs pinned to hosts", fmt.Sprintf("each of the %d pinned jobs has a running worker that carries one of its labels", pinned)))
	}
	return out
}

func dedup(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// ago is a heartbeat's age at a person's precision.
func ago(d time.Duration) string {
	if d < 0 {
		d = 0 // the database's clock; a row written after now() was read
	}
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
