// Package awake keeps the machine from sleeping while a night runs: it
// holds an OS sleep inhibitor in a child process (caffeinate on macOS,
// systemd-inhibit on Linux) started through internal/proc, and lets go of
// it on release or when the context ends.
package awake

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/text"
)

// settle is how long Hold waits to see an inhibitor that fails at once
// (systemd-inhibit without a system bus exits 1 immediately).
const settle = 300 * time.Millisecond

// platform is what Hold needs to know about the machine; tests replace it.
type platform struct {
	goos     string
	lookPath func(string) (string, error)
	pid      int
}

func thisMachine() platform {
	return platform{goos: runtime.GOOS, lookPath: exec.LookPath, pid: os.Getpid()}
}

// Command returns the inhibitor command for goos (argv, "" program when the
// platform has none): caffeinate -i -w <pid> on macOS (idle sleep is
// prevented until pid exits or the child is killed), systemd-inhibit
// --what=sleep:idle --who=nightwatch --why=<reason> --mode=block sleep
// infinity on Linux.
func Command(goos, reason string, pid int) []string {
	switch goos {
	case "darwin":
		return []string{"caffeinate", "-i", "-w", strconv.Itoa(pid)}
	case "linux":
		return []string{"systemd-inhibit", "--what=sleep:idle", "--who=nightwatch",
			"--why=" + text.OneLine(reason, 0), "--mode=block", "sleep", "infinity"}
	}
	return nil
}

// Hold keeps the machine awake until release is called or ctx ends,
// whichever comes first. how says in one line what it did, for the night's
// log ("caffeinate -i -w 4242 (pid 4243)", or why nothing keeps the machine
// awake). err is set when an inhibitor exists but could not be held (it
// exited at once: how and err say why); the night goes on either way.
// release is never nil, may be called more than once, and returns once the
// inhibitor is gone.
func Hold(ctx context.Context, reason string) (release func(), how string, err error) {
	return hold(ctx, reason, thisMachine())
}

func hold(ctx context.Context, reason string, p platform) (func(), string, error) {
	noop := func() {}
	argv := Command(p.goos, reason, p.pid)
	if argv == nil {
		return noop, fmt.Sprintf("not kept awake: no sleep inhibitor on %s (only caffeinate on macOS and systemd-inhibit on Linux)", p.goos), nil
	}
	bin, err := p.lookPath(argv[0])
	if err != nil {
		return noop, fmt.Sprintf("not kept awake: %s not found (%v)", argv[0], err), nil
	}
	cctx, cancel := context.WithCancel(ctx)
	cmd := proc.Command(cctx, nil, time.Second, bin, argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	// The inhibitor runs all night and starts nothing: it must never be
	// the owner an escaped, unmarked process is kept alive for.
	proc.LeavesNothing(cmd)
	if err := proc.Start(cmd); err != nil {
		cancel()
		return noop, fmt.Sprintf("not kept awake: start %s: %v", argv[0], err), err
	}
	done := make(chan struct{})
	var waitErr error
	go func() {
		defer close(done)
		waitErr = proc.Wait(cmd)
	}()
	var once sync.Once
	release := func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	shown := strings.Join(argv, " ")
	select {
	case <-done:
		cancel()
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = proc.ExitDescription(waitErr)
		}
		err := fmt.Errorf("%s exited at once: %s", argv[0], text.OneLine(msg, 0))
		return noop, "not kept awake: " + err.Error(), err
	case <-time.After(settle):
	case <-ctx.Done():
		release()
		return noop, "not kept awake: " + ctx.Err().Error(), ctx.Err()
	}
	return release, fmt.Sprintf("kept awake by %s (pid %d)", shown, cmd.Process.Pid), nil
}
