// Package chaos holds nightwatch's chaos night: a whole night through the
// real Claude Code CLI, the fake Messages API and the real `nightwatch run`
// process, under scripted faults, and the same night with nightwatch's
// health layer replaced by the plain hook of the article (PlainHook) for
// comparison. The figures are in RELIABILITY.md.
//
// The package has no code nightwatch uses; this file holds the stand-in
// hook the baseline night registers instead of nightwatch's.
package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// PlainServer is how the plain hook reaches one server: a stdio command
// (Command, Args, Env) or an HTTP URL.
type PlainServer struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
}

// PlainAliveFor is how long a stdio server must stay up to count as
// healthy: the article's check.
const PlainAliveFor = 5 * time.Second

// PlainCacheTTL is how long the plain hook trusts an "alive" verdict, so
// that the 5 s check is not paid before every call. A "dead" verdict is
// not cached: the next call checks again. Nothing is ever reconnected.
const PlainCacheTTL = 30 * time.Second

// PlainBlockPrefix starts the message of a call the plain hook blocks.
const PlainBlockPrefix = "plain-hook: server"

// PlainHook is the article's behaviour, as a Claude Code PreToolUse hook:
// for a call to mcp__<server>__*, a stdio server is started and must stay
// alive for 5 s; an HTTP server must accept a TCP connection. Dead: exit 2
// with a message (the call is blocked); alive: exit 0. servers is a JSON
// file name -> PlainServer; cacheDir holds the alive verdicts.
func PlainHook(stdin io.Reader, stderr io.Writer, servers, cacheDir string) int {
	var in struct {
		Event    string `json:"hook_event_name"`
		ToolName string `json:"tool_name"`
	}
	data, _ := io.ReadAll(stdin)
	if json.Unmarshal(data, &in) != nil || in.Event != "PreToolUse" || !strings.HasPrefix(in.ToolName, "mcp__") {
		return 0
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(in.ToolName, "mcp__"), "__")
	var all map[string]PlainServer
	raw, err := os.ReadFile(servers)
	if err != nil || json.Unmarshal(raw, &all) != nil {
		return 0 // the article's hook fails open
	}
	srv, ok := all[name]
	if !ok {
		return 0
	}
	mark := filepath.Join(cacheDir, "alive-"+name)
	if fi, err := os.Stat(mark); err == nil && time.Since(fi.ModTime()) < PlainCacheTTL {
		return 0
	}
	var why string
	if srv.URL != "" {
		why = plainDial(srv.URL)
	} else {
		why = plainStaysAlive(srv)
	}
	if why != "" {
		fmt.Fprintf(stderr, "%s %q is down: %s\n", PlainBlockPrefix, name, why)
		return 2
	}
	_ = os.WriteFile(mark, nil, 0o600)
	_ = os.Chtimes(mark, time.Now(), time.Now())
	return 0
}

func plainDial(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return err.Error()
	}
	c, err := net.DialTimeout("tcp", u.Host, 3*time.Second)
	if err != nil {
		return err.Error()
	}
	c.Close()
	return ""
}

func plainStaysAlive(srv PlainServer) string {
	cmd := exec.Command(srv.Command, srv.Args...)
	cmd.Env = os.Environ()
	for k, v := range srv.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdin, err := cmd.StdinPipe() // held open: EOF would end a healthy server
	if err != nil {
		return err.Error()
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		return err.Error()
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		return fmt.Sprintf("exited within %s (%v)", PlainAliveFor, err)
	case <-time.After(PlainAliveFor):
		_ = cmd.Process.Kill()
		<-exited
		return ""
	}
}
