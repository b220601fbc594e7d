// Package sessionstop lets a session's hooks tell a stop nightwatch caused
// from a server's failure. Before the supervisor or a cluster worker
// signals a session (the night stopped, a worker's SIGTERM, a daemon's
// shutdown, an abandon, a timeout, a stall) it leaves a marker in the
// attempt's folder (Announce); and every session carries its owner's
// identity, so a hook can see that the process that ran the session is
// gone (a worker SIGKILLed, which cannot leave a marker; its sessions die
// with it). Why reports those facts; that a failure seen by such a session
// is no evidence about a server is healthcheck's rule (Checker.NoWitness).
package sessionstop

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
)

// The variables a session's `claude -p` (and so each of its hooks) gets.
// Paths and a pid, never a secret.
const (
	// DirEnv is the attempt's folder, where Announce leaves its marker.
	DirEnv = "NIGHTWATCH_SESSION_DIR"
	// OwnerEnv is "<pid>:<start id>" of the process that runs the
	// session: the start id (proc.StartID) tells the owner from a later
	// process that got its pid.
	OwnerEnv = "NIGHTWATCH_SESSION_OWNER"
)

// Vars are the variables of a session whose attempt folder is dir, owned
// by this process.
func Vars(dir string) map[string]string {
	pid := os.Getpid()
	return map[string]string{
		DirEnv:   dir,
		OwnerEnv: strconv.Itoa(pid) + ":" + proc.StartID(pid),
	}
}

// Announce marks the session of the attempt folder dir as being stopped
// by nightwatch. It is written before the session is signalled, so that
// every hook the stop sets off finds it.
func Announce(dir string) error {
	path := filepath.Join(dir, statedir.AttemptStopping)
	stamp := time.Now().UTC().Format(time.RFC3339Nano) + "\n"
	if err := atomicfile.WriteFile(path, []byte(stamp), atomicfile.Mode); err != nil {
		return fmt.Errorf("mark the session as stopping: %w", err)
	}
	return nil
}

// Why says why the session whose hook has this environment is ending by
// nightwatch's doing: it is being stopped, or its owner is gone. "" when
// neither (and outside a night's session, where the variables are unset).
func Why(getenv func(string) (string, bool)) string {
	if dir, ok := getenv(DirEnv); ok && dir != "" {
		if _, err := os.Lstat(filepath.Join(dir, statedir.AttemptStopping)); err == nil {
			return "nightwatch is stopping this session"
		}
	}
	if owner, ok := getenv(OwnerEnv); ok && owner != "" {
		if pid, gone := ownerGone(owner); gone {
			return fmt.Sprintf("the nightwatch process that ran this session (pid %d) is gone; the session dies with it", pid)
		}
	}
	return ""
}

// ownerGone reads an OwnerEnv value and says whether that process has
// ended. A value it cannot read says nothing (not gone); a start id it
// cannot read for a live pid says nothing either.
func ownerGone(owner string) (pid int, gone bool) {
	p, start, _ := strings.Cut(owner, ":")
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return 0, false
	}
	if !proc.Running(pid) {
		return pid, true
	}
	if start == "" {
		return pid, false
	}
	now := proc.StartID(pid)
	return pid, now != "" && now != start
}
