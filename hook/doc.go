// Package hook speaks Claude Code's hook protocol for nightwatch: it reads
// the payload on stdin, asks healthcheck, and answers with an exit code, a
// decision on stdout and a short text on stderr. The calls the cache
// answers alone (a hit, a cached block, a tool that is not MCP) are
// answered by its hot path, hook/hot, which links no prober, logger or
// network client (the nightwatch-hook executable is made of it); this
// package is the whole hook, which probes, reconnects, holds and logs.
package hook
