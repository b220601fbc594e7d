// Command nwtestserver is the MCP test server of nightwatch's tests: the
// mcpserver package over stdio (default) or HTTP, with faults chosen by
// --mode or by a control file the tests rewrite while it runs.
//
//	nwtestserver [--mode M] [--control FILE] [--pidfile FILE]
//	nwtestserver --http 127.0.0.1:0 [--sse] [--json] [--stateless] [--mode M] [--control FILE]
//
// With --http the first stdout line is the endpoint URL
// (http://127.0.0.1:PORT/mcp, or /sse with --sse). See mcpserver.Mode for
// the mode words.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
)

func main() { os.Exit(run()) }

func run() int {
	modeFlag := flag.String("mode", "", "comma-separated fault modes (see mcpserver.Mode)")
	control := flag.String("control", "", "file holding the mode, re-read on every request; overrides --mode when non-empty")
	httpAddr := flag.String("http", "", "serve HTTP on this address (e.g. 127.0.0.1:0) instead of stdio")
	sse := flag.Bool("sse", false, "with --http: serve the legacy HTTP+SSE transport at /sse")
	jsonResponse := flag.Bool("json", false, "with --http: answer POSTs with application/json, not an event stream")
	stateless := flag.Bool("stateless", false, "with --http: no sessions; the go-sdk then speaks 2026-07-28 over HTTP")
	pidfile := flag.String("pidfile", "", "write the server's pid (and a spawned child's) to this file, one per line")
	child := flag.Bool("child", false, "internal: be the spawn-child process")
	flag.Parse()

	if *child {
		return beChild()
	}
	fallback, err := mcpserver.ParseMode(*modeFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nwtestserver:", err)
		return 2
	}
	modes := mcpserver.Fixed(fallback)
	if *control != "" {
		modes = mcpserver.ControlFile(*control, fallback, func(err error) {
			fmt.Fprintln(os.Stderr, "nwtestserver:", err)
		})
	}

	start := modes()
	if start.IgnoreSIGTERM {
		signal.Ignore(syscall.SIGTERM)
	}
	pids := []int{os.Getpid()}
	if start.SpawnChild {
		pid, err := spawnChild()
		if err != nil {
			fmt.Fprintln(os.Stderr, "nwtestserver: spawn-child:", err)
			return 1
		}
		pids = append(pids, pid)
	}
	if *pidfile != "" {
		if err := writePids(*pidfile, pids); err != nil {
			fmt.Fprintln(os.Stderr, "nwtestserver:", err)
			return 1
		}
	}

	if *httpAddr != "" {
		return serveHTTP(*httpAddr, mcpserver.HTTPOptions{
			Modes:        modes,
			SSE:          *sse,
			JSONResponse: *jsonResponse,
			Stateless:    *stateless,
			Observe: func(r *http.Request) {
				fmt.Fprintf(os.Stderr, "nwtestserver: %s %s\n", r.Method, r.URL.Path)
			},
			Server: mcpserver.Options{Exit: os.Exit, ControlFile: *control},
		}, start.IgnoreSIGTERM)
	}
	if *sse || *jsonResponse || *stateless {
		fmt.Fprintln(os.Stderr, "nwtestserver: --sse, --json and --stateless need --http")
		return 2
	}
	// stdio: SIGTERM keeps its default action and ends the process.
	err = mcpserver.ServeStdio(context.Background(), mcpserver.StdioConfig{
		Modes:       modes,
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		Exit:        os.Exit,
		ControlFile: *control,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "nwtestserver:", err)
		return 1
	}
	return 0
}

func serveHTTP(addr string, opts mcpserver.HTTPOptions, ignoreSIGTERM bool) int {
	signals := []os.Signal{os.Interrupt}
	if !ignoreSIGTERM {
		signals = append(signals, syscall.SIGTERM)
	}
	ctx, stop := signal.NotifyContext(context.Background(), signals...)
	defer stop()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nwtestserver:", err)
		return 1
	}
	path := mcpserver.StreamablePath
	if opts.SSE {
		path = mcpserver.SSEPath
	}
	fmt.Printf("http://%s%s\n", ln.Addr(), path)

	srv := &http.Server{Handler: mcpserver.NewHTTPHandler(opts), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		fmt.Fprintln(os.Stderr, "nwtestserver:", err)
		return 1
	case <-ctx.Done():
	}
	// Hanging requests and SSE streams never finish by themselves.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintln(os.Stderr, "nwtestserver: shutdown:", err)
	}
	srv.Close()
	return 0
}

// spawnChild starts a grandchild-to-be in our process group, holding our
// stdout and stderr and ignoring SIGTERM, like the server npx leaves
// behind: only a SIGKILL to the whole group ends it.
func spawnChild() (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self, "--child")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	go cmd.Wait() // reap it if it dies while we live
	return cmd.Process.Pid, nil
}

func beChild() int {
	signal.Ignore(syscall.SIGTERM)
	for {
		time.Sleep(time.Hour)
	}
}

func writePids(path string, pids []int) error {
	var b strings.Builder
	for _, pid := range pids {
		b.WriteString(strconv.Itoa(pid) + "\n")
	}
	// Write then rename, so a test never reads half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
