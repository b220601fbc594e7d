// Command nightwatch-hook is nightwatch's Claude Code hook as an
// executable of its own, which Claude Code starts before and after every
// tool call. It is the hook's hot path (package hook/hot): the calls the
// health cache answers alone (a cache hit, a cached block, a tool that is
// not MCP, a call that worked at a server known healthy) are answered
// here, as `nightwatch hook` answers them, without linking a prober, a
// logger or a network client. Every other call (a miss that probes, a
// trial, a hold, a failure, a log file) is handed whole to `nightwatch
// hook` beside it (hookexe.Handoff), which decides with package hook. The
// night injects it when it sits beside the nightwatch binary and reports
// the same build (internal/hookexe); `nightwatch-hook --build-id` prints
// that id.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/nightwatch-dev/nightwatch/hook/hot"
	"github.com/nightwatch-dev/nightwatch/internal/hookexe"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/peakrss"
	"github.com/nightwatch-dev/nightwatch/internal/secrets"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == hookexe.IDFlag {
		fmt.Println(hookexe.ID())
		return
	}
	code := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	peakrss.Report()
	os.Exit(code)
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "nightwatch: internal error in hook (%v); the call goes ahead unchecked\n", r)
			code = hot.ExitAllow
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
		return hot.ExitAllow
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
	// What the hot path reads of the payload is kept, for the whole hook
	// if the call is handed on; a payload larger than hookexe.MaxKept is
	// handed on as it streams, never held whole.
	payload := hookexe.NewKept(stdin)
	if p, err := hot.DecodeFor(os.LookupEnv, payload); err == nil {
		if code, ok := hot.Answer(hot.Env{Getenv: os.LookupEnv, Stdout: stdout, Stderr: stderr, Knobs: k}, p); ok {
			return code
		}
	}
	// Signals are watched from here on only: an interrupt or SIGTERM must
	// stop the whole hook it runs (and what that started), while the hot
	// path above waits on nothing a signal could cut short, and watching
	// them would cost every call a goroutine and a thread of its own
	// (os/signal), a fifth of an empty program's start (BENCHMARKS.md).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return hookexe.Handoff(ctx, args, payload.Payload(), stdout, stderr)
}

func homeDir() string {
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return "/"
}
