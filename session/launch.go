package session

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/nightwatch-dev/nightwatch/internal/launch"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// launchConfig is the job's MCP config (mcpConfig) with every stdio server
// started through nightwatch:
//
//	{"command": <nightwatch>, "args": ["exec-server", "--server", <name>, "--keep", "A,B", <the server's restart: bounds as flags>, "--", <command>, <args…>], "env": {…}}
//
// Claude Code gives each server it spawns its own environment, which holds
// every key of the night (env_file, env, ANTHROPIC_API_KEY); exec-server
// drops all of it but the base variables and the names the server's own
// env sets, and runs the server as its child, restarting it when it dies
// or hangs (package serverguard), within the bounds of the server's
// restart: block. Only names and bounds travel on the command line; the
// values stay in "env".
func launchConfig(binary string, b *jobs.Batch, job *jobs.Job, env []string) ([]byte, error) {
	data, err := mcpConfig(b, job, env)
	if err != nil {
		return nil, err
	}
	var cfg struct {
		MCPServers map[string]map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("re-read: %w", err)
	}
	for name, entry := range cfg.MCPServers {
		var bounds launch.Bounds
		if srv := b.Server(name); srv != nil {
			bounds = srv.Restart
		}
		if err := launchEntry(binary, name, bounds, entry); err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
	}
	out, err := json.MarshalIndent(map[string]any{"mcpServers": cfg.MCPServers}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return append(out, '\n'), nil
}

// launchEntry rewrites one stdio entry in place; other transports are left
// as they are.
func launchEntry(binary, name string, bounds launch.Bounds, entry map[string]json.RawMessage) error {
	rawCommand, ok := entry["command"]
	if !ok {
		return nil
	}
	if t, ok := entry["type"]; ok {
		var typ string
		if json.Unmarshal(t, &typ) != nil || typ != "stdio" {
			return nil
		}
	}
	var command string
	if err := json.Unmarshal(rawCommand, &command); err != nil {
		return fmt.Errorf("command is not a string: %w", err)
	}
	var args []string
	if raw, ok := entry["args"]; ok {
		if err := json.Unmarshal(raw, &args); err != nil {
			return fmt.Errorf("args is not a list of strings: %w", err)
		}
	}
	var env map[string]string
	if raw, ok := entry["env"]; ok {
		if err := json.Unmarshal(raw, &env); err != nil {
			return fmt.Errorf("env is not a map of strings: %w", err)
		}
	}
	keep := make([]string, 0, len(env))
	for k := range env {
		keep = append(keep, k)
	}
	slices.Sort(keep)
	argv := launch.Args(name, keep, bounds, append([]string{command}, args...))
	var err error
	if entry["command"], err = json.Marshal(binary); err != nil {
		return err
	}
	entry["args"], err = json.Marshal(argv)
	return err
}
