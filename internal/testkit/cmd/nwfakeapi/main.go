// Command nwfakeapi serves the test suite's fake Anthropic Messages API
// (internal/testkit/fakeapi) on a local port, for scripts/demo.sh: a
// scripted stand-in for the model, so that a newcomer can watch a real
// night of the real Claude Code CLI without an API key. It is not Claude:
// the "model" makes exactly the tool calls its prompt's CALL lines name,
// then answers "done".
//
//	nwfakeapi -url-file api.url
//
// It prints its base URL (for ANTHROPIC_BASE_URL) on stdout, and to
// -url-file when given, then serves until SIGTERM or SIGINT.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
)

// standIn satisfies the testing.TB that fakeapi.Start asks for, outside a
// test: it logs what a test would be failed for, and cleans up at exit.
// Only the methods fakeapi calls are implemented; the embedded nil TB
// panics on any other, which a change to fakeapi would show at once.
type standIn struct {
	testing.TB
	cleanups []func()
}

func (*standIn) Helper()                        {}
func (s *standIn) Cleanup(f func())             { s.cleanups = append(s.cleanups, f) }
func (*standIn) Errorf(format string, a ...any) { log.Printf("fake model: "+format, a...) }
func (*standIn) Logf(format string, a ...any)   { log.Printf("fake model: "+format, a...) }
func (*standIn) Fatalf(format string, a ...any) { log.Fatalf("fake model: "+format, a...) }
func (*standIn) Name() string                   { return "nwfakeapi" }
func (*standIn) Failed() bool                   { return false }
func (*standIn) TempDir() string                { return os.TempDir() }
func (*standIn) Setenv(string, string)          {}
func (*standIn) Skipf(format string, a ...any)  { log.Printf(format, a...) }
func (*standIn) Log(a ...any)                   { log.Print(a...) }
func (*standIn) Error(a ...any)                 { log.Print(a...) }
func (*standIn) Fatal(a ...any)                 { log.Fatal(a...) }

func main() {
	urlFile := flag.String("url-file", "", "also write the base URL to this file")
	flag.Parse()
	log.SetPrefix("nwfakeapi: ")
	tb := &standIn{}
	srv := fakeapi.Start(tb)
	fmt.Println(srv.URL())
	if *urlFile != "" {
		if err := atomicfile.WriteFile(*urlFile, []byte(srv.URL()+"\n"), 0o600); err != nil {
			log.Fatal(err)
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	for i := len(tb.cleanups) - 1; i >= 0; i-- {
		tb.cleanups[i]()
	}
}
