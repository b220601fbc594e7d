package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/nightwatch-dev/nightwatch/cluster/queue"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
)

func newWorkerCmd() *cobra.Command {
	var labels []string
	var maxParallel int
	var host string
	cmd := &cobra.Command{
		Use:   "worker FILE",
		Short: "Run the attempts of a cluster's night on this host",
		Long: `Join the night of a batch with a cluster: section: take its attempts from the shared queue and run
them here, at most --max-parallel at a time (default: the batch's max_parallel), only the jobs
pinned to none of the hosts or to one of this worker's labels (its host name and every --label).
Run it on each host, under the platform's scheduler or by hand; ` + "`nightwatch run FILE`" + ` on one host
coordinates the night. SIGTERM stops it: its running sessions end "stopped" and run again elsewhere.
A database that does not answer while the worker starts is waited for (tried again after 0.5 s, doubling
up to 15 s, each try logged), as one lost later is.
Exit 2: invalid file, no cluster: section, or the database refuses the worker (credentials, no such
database, a schema newer than this nightwatch).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := loadBatch(args[0])
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return exitCode(2)
			}
			bin, err := selfPath()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			log := zerolog.New(redact.NewWriter(logWriter())).With().Timestamp().Str("batch", b.Name).Logger()
			err = queue.Serve(ctx, b, queue.ServeOptions{Binary: bin, Env: os.Environ(), Host: host, Labels: labels,
				MaxParallel: maxParallel, Log: log})
			if err != nil && !errors.Is(err, ctx.Err()) {
				fmt.Fprintln(os.Stderr, "nightwatch:", err)
				return exitCode(2)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&labels, "label", nil, "a label of this worker, for the jobs pinned by hosts: (repeatable)")
	cmd.Flags().IntVar(&maxParallel, "max-parallel", 0, "attempts this worker runs at once (default: the batch's max_parallel)")
	cmd.Flags().StringVar(&host, "host", "", "this host's name in the cluster (default: the host name; NIGHTWATCH_HOST)")
	return cmd
}
