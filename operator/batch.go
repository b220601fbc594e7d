package operator

import (
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// BatchServers are a batch's MCP servers as the operator commands list
// them (status, probe): the definitions its sessions get, defined in the
// batch file, instead of Claude Code's own search from the current folder.
func BatchServers(b *jobs.Batch) *mcpconfig.Resolved {
	r := &mcpconfig.Resolved{Servers: map[string]*mcpconfig.Server{}, Searched: []string{b.File}}
	for _, s := range b.Servers {
		srv := s.MCP // a copy: the batch is not changed
		if srv.Name == "" {
			srv.Name = s.Name
		}
		srv.Source = b.File
		r.Servers[s.Name] = &srv
		r.Names = append(r.Names, s.Name)
	}
	return r
}
