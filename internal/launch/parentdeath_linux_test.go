package launch

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
// "parent" starts the binary again as "exec-server" (a plain child, the way
// Claude Code starts a stdio server), prints that child's pid and sleeps;
// "exec-server" runs Exec on `sleep 300`, the server.
const roleEnv = "NW_LAUNCH_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "parent":
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), roleEnv+"=exec-server")
		child.Stdin, child.Stderr = os.Stdin, os.Stderr
		if err := child.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		fmt.Println(child.Process.Pid)
		time.Sleep(5 * time.Minute)
		os.Exit(0)
	case "exec-server":
		err := Exec([]string{"sleep", "300"}, nil)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(4)
	}
	os.Exit(m.Run())
}

// TestServerDiesWithItsParent: exec-server's server dies when the process
// that started exec-server (Claude Code, in a session) is SIGKILLed.
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
	server, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("server pid %q", line)
	}
	// The server is running once exec-server has become `sleep`. (A minute
	// is for a busy machine; the server sleeps 300 s, so gone within the
	// minute below is the parent's death, not its own end.)
	deadline := time.Now().Add(time.Minute)
	for command(server) != "sleep" {
		if time.Now().After(deadline) {
			t.Fatalf("exec-server (pid %d) never became the server (it is %q)", server, command(server))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(parent.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(time.Minute)
	for alive(server) {
		if time.Now().After(deadline) {
			t.Fatalf("the server (pid %d) outlived the process that started exec-server", server)
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
