package operator

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// ProbeRow is one server in `nightwatch probe`.
type ProbeRow struct {
	Server    string              `json:"server"`
	Transport mcpconfig.Transport `json:"transport"`
	Source    string              `json:"source"`
	probe.Result
}

// ProbeAll probes servers concurrently (each bounded by opts.Timeout) and
// returns rows in name order. record, when set, stores each result.
func ProbeAll(ctx context.Context, servers []*mcpconfig.Server, opts probe.Options,
	record func(*mcpconfig.Server, probe.Result)) []ProbeRow {
	rows := make([]ProbeRow, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := probe.Probe(ctx, srv, opts)
			rows[i] = ProbeRow{Server: srv.Name, Transport: srv.Transport, Source: srv.Source, Result: res}
			if record != nil {
				record(srv, res)
			}
		}()
	}
	wg.Wait()
	sort.Slice(rows, func(i, j int) bool { return rows[i].Server < rows[j].Server })
	return rows
}

// PrintProbe writes rows as a table.
func PrintProbe(w io.Writer, rows []ProbeRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTRANSPORT\tVERDICT\tLATENCY\tTOOLS\tREASON")
	for _, r := range rows {
		tools := "-"
		if r.Tools >= 0 {
			tools = fmt.Sprint(r.Tools)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Server, r.Transport, r.Verdict,
			r.Latency.Round(100*time.Microsecond), tools, dash(text.OneLine(r.Reason, 100)))
	}
	_ = tw.Flush()
}
