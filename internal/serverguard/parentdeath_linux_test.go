package serverguard

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

// roleEnv makes the test binary play a process of the parent-death test:
// "parent" starts the binary again as "exec-server" (a plain child with a
// pipe for stdin, the way Claude Code starts a stdio server), prints that
// child's pid and sleeps; "exec-server" serves `sleep 300`, the server.
const roleEnv = "NW_LAUNCH_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "parent":
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), roleEnv+"=exec-server")
		child.Stderr = os.Stderr
		keepOpen, err := child.StdinPipe()
		if err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		defer keepOpen.Close()
		if err := child.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		fmt.Println(child.Process.Pid)
		time.Sleep(5 * time.Minute)
		os.Exit(0)
	case "exec-server":
		os.Exit(Serve(Entry{Server: "s", Argv: []string{"sleep", "300"}}, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestServerDiesWithItsParent: exec-server and its server die when the
// process that started exec-server (Claude Code, in a session) is
// SIGKILLed.
func TestServerDiesWithItsParent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	parent := exec.CommandContext(ctx, os.Args[0])
	parent.Env = append(os.Environ(), roleEnv+"=parent")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	proc.Prepare(parent, time.Second)
	if err := proc.Start(parent); err != nil {
		t.Fatal(err)
	}
	// Whatever happens, the group (the parent and the server) goes at the end.
	t.Cleanup(func() { proc.KillGroup(parent); _ = proc.Wait(parent) })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read the server's pid: %v", err)
	}
	guard, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("exec-server pid %q", line)
	}
	// The server is running once exec-server has a `sleep` child.
	deadline := time.Now().Add(time.Minute)
	server := 0
	for server == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("exec-server (pid %d) never started the server", guard)
		}
		time.Sleep(20 * time.Millisecond)
		server = childNamed(guard, "sleep")
	}
	if err := syscall.Kill(parent.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(time.Minute)
	for alive(server) || alive(guard) {
		if time.Now().After(deadline) {
			t.Fatalf("the server (pid %d, alive %v) or exec-server (pid %d, alive %v) outlived the process that started exec-server",
				server, alive(server), guard, alive(guard))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// command is the program name of pid ("" when it is gone).
func command(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// alive reports whether pid is a live process: not gone, not a zombie
// nobody has reaped yet.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// childNamed is the pid of a child of parent running program name (0: none).
func childNamed(parent int, name string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(parent) && command(pid) == name {
			return pid
		}
	}
	return 0
}
