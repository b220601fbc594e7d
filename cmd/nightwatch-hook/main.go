// Command nightwatch-hook is nightwatch's Claude Code hook as an
// executable of its own: the same hook as `nightwatch hook` (package hook
// decides, with the same flags and variables), linked without the rest of
// nightwatch (the night, the cluster's database and queue, the schedulers,
// the command framework), because Claude Code starts it before and after
// every tool call. The night injects it when it sits beside the nightwatch
// binary and reports the same build (internal/hookexe); `nightwatch-hook
// --build-id` prints that id.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/hook"
	"github.com/nightwatch-dev/nightwatch/internal/hookexe"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/peakrss"
	"github.com/nightwatch-dev/nightwatch/internal/secrets"
)

// version is set at build time with -ldflags "-X main.version=…", as
// nightwatch's is.
var version = "dev"

func main() {
	if len(os.Args) == 2 && os.Args[1] == hookexe.IDFlag {
		fmt.Println(hookexe.ID())
		return
	}
	probe.Version = version
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	peakrss.Report()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "nightwatch: internal error in hook (%v); the call goes ahead unchecked\n", r)
			code = hook.ExitAllow
		}
	}()
	fs := flag.NewFlagSet(hookexe.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f knobs.Flags
	f.Register(fs, true)
	if err := fs.Parse(args); err != nil {
		// A hook that cannot read its command line still never blocks a
		// call it could not judge: Claude Code reads exit 2 as a block.
		fmt.Fprintf(stderr, "nightwatch: %v; the call goes ahead unchecked\n", err)
		return hook.ExitAllow
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "nightwatch: unexpected arguments %q ignored\n", fs.Args())
	}
	changed := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { changed[fl.Name] = true })
	secrets.RememberProcess()
	home := homeDir()
	k := knobs.FromEnv(os.LookupEnv, home)
	k.Apply(&f, func(name string) bool { return changed[name] }, home, os.LookupEnv)
	return hook.Run(ctx, hook.Env{
		Getenv: os.LookupEnv, Home: home,
		Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Knobs: k,
	})
}

func homeDir() string {
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return "/"
}
