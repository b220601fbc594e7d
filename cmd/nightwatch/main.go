// Command nightwatch keeps unattended Claude Code sessions away from dead
// MCP servers. This package only wires commands; the logic lives in the
// packages it calls.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/internal/hookexe"
	"github.com/nightwatch-dev/nightwatch/internal/peakrss"
	"github.com/nightwatch-dev/nightwatch/internal/secrets"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	probe.Version = version
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	peakrss.Report()
	os.Exit(code)
}

func run(ctx context.Context, args []string) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "nightwatch: internal error: %v\n", r)
			code = 70
		}
	}()
	if len(args) == 2 && args[0] == "hook" && args[1] == hookexe.IDFlag {
		// What the night compares with nightwatch-hook's own answer.
		fmt.Println(hookexe.ID())
		return 0
	}
	secrets.RememberProcess()
	root := newRoot()
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		if ec, ok := err.(exitCode); ok {
			return int(ec)
		}
		fmt.Fprintln(os.Stderr, "nightwatch:", err)
		return 2
	}
	return 0
}

// exitCode lets a command end with a code of its own after printing its
// result (probe: 1 when a server is unhealthy).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }
