package probe

import (
	"encoding/json"
	"fmt"
	"time"
)

// The 2026-07-28 specification's era detection, as Claude Code 2.1.332 runs
// it: server/discover first; a DiscoverResult or a recognised modern error
// means a modern server; any other error, a reply that is not a discover
// result, silence or a process that exits means a legacy server, and the
// client falls back to initialize. The fallback is not keyed to one error
// code (legacy servers answer -32601, -32602, -32000 or nothing at all).

const methodDiscover = "server/discover"

// Request ids of one probe: discover, then the fallback initialize, then
// the tools/list pages.
const (
	discoverID   int64 = 1
	initializeID int64 = 2
	firstListID  int64 = 3
)

// The JSON-RPC errors of 2026-07-28 that only a modern server sends. Any of
// them answering server/discover identifies a modern server: the client must
// not fall back to initialize.
const (
	codeHeaderMismatch                  = -32020
	codeMissingRequiredClientCapability = -32021
	codeUnsupportedProtocolVersion      = -32022
)

// Bounds of the wait for an answer to server/discover. A server that knows
// the method answers it as fast as it answers anything (go-sdk in a few ms,
// the TypeScript SDK's -32601 at once), so the wait only matters for one
// that ignores unknown requests. Claude Code waits about 2.9 s there, which
// would leave the hook's 5 s probe 2.1 s for initialize; a quarter of the
// probe's timeout, at most 1 s, leaves most of it. On stdio a short wait
// loses nothing: initialize queues behind discover on the same stdin, and
// a late discover answer is still taken. On HTTP the discover POST is
// abandoned and initialize gets a POST of its own.
const (
	minDiscoverWait = 250 * time.Millisecond
	maxDiscoverWait = time.Second
)

// discoverWait is how long a probe with this timeout waits for
// server/discover before it sends initialize.
func discoverWait(timeout time.Duration) time.Duration {
	return min(max(timeout/4, minDiscoverWait), maxDiscoverWait)
}

// modernMeta is the _meta block Claude Code 2.1.332 puts on server/discover
// and on every request of a modern session.
func modernMeta() map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    ModernProtocolVersion,
		"io.modelcontextprotocol/clientInfo":         clientInfo(),
		"io.modelcontextprotocol/clientCapabilities": clientCapabilities(),
	}
}

func discoverParams() map[string]any { return map[string]any{"_meta": modernMeta()} }

// clientCapabilities are the ones Claude Code 2.1.332 declares, in
// server/discover and in its fallback initialize alike.
func clientCapabilities() map[string]any {
	return map[string]any{
		"roots":       map[string]any{"listChanged": true},
		"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}},
	}
}

func clientInfo() map[string]any {
	return map[string]any{"name": "nightwatch", "version": Version}
}

// discovery is what the probe learned from the answer to server/discover.
type discovery struct {
	// modern: the server speaks a version the probe speaks; no initialize.
	modern bool
	// modernError: a recognised modern error (unsupported version, header
	// mismatch, missing capability): a modern server, no fallback either.
	modernError *rpcError
	// supported is the server's list of versions, when it gave one.
	supported  []string
	negotiated string
	serverName string
	// legacy explains, when the server is legacy, what it answered.
	legacy string
	// slow: no answer within the discover wait.
	slow bool
}

// Limits on what a discover answer may put into a Result.
const (
	maxVersions   = 16
	versionLength = 40
)

// judgeDiscover reads the answer to server/discover. It never fails: what
// is not a discover result or a modern error is a legacy server's answer.
// Server output is untrusted, so this must never panic (FuzzJudgeDiscover).
func judgeDiscover(m *message) discovery {
	if m.Error != nil {
		switch m.Error.Code {
		case codeUnsupportedProtocolVersion, codeHeaderMismatch, codeMissingRequiredClientCapability:
			d := discovery{modernError: m.Error}
			if m.Error.Code == codeUnsupportedProtocolVersion {
				var data struct {
					Supported []json.RawMessage `json:"supported"`
				}
				if json.Unmarshal(m.Error.Data, &data) == nil {
					d.supported = versionList(data.Supported)
				}
			}
			return d
		}
		return discovery{legacy: fmt.Sprintf("server/discover got JSON-RPC error %d", m.Error.Code)}
	}
	res, ok := parseDiscoverResult(m.Result)
	if !ok {
		return discovery{legacy: "server/discover got a reply that is not a discover result"}
	}
	d := discovery{supported: res.versions, serverName: res.serverName}
	for _, v := range res.versions {
		if v == ModernProtocolVersion {
			d.modern, d.negotiated = true, v
			return d
		}
	}
	// The go-sdk client does the same: no modern version in common, so
	// initialize negotiates among the legacy ones (a stateful go-sdk HTTP
	// server lists only those).
	d.legacy = "server/discover lists no version the probe speaks as modern"
	return d
}

type discoverResult struct {
	versions   []string
	serverName string
}

// parseDiscoverResult reads a DiscoverResult: ok only when supportedVersions
// is a non-empty list with at least one string and capabilities, when
// present, is an object.
func parseDiscoverResult(raw json.RawMessage) (discoverResult, bool) {
	var r struct {
		SupportedVersions []json.RawMessage `json:"supportedVersions"`
		Capabilities      json.RawMessage   `json:"capabilities"`
		Meta              struct {
			ServerInfo struct {
				Name json.RawMessage `json:"name"`
			} `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &r) != nil {
		return discoverResult{}, false
	}
	if caps := string(r.Capabilities); caps != "" && caps != "null" && r.Capabilities[0] != '{' {
		return discoverResult{}, false
	}
	versions := versionList(r.SupportedVersions)
	if len(versions) == 0 {
		return discoverResult{}, false
	}
	res := discoverResult{versions: versions}
	var name string
	if json.Unmarshal(r.Meta.ServerInfo.Name, &name) == nil {
		res.serverName = clip(name, 100)
	}
	return res, true
}

// versionList keeps the strings of a version list, clipped and bounded;
// anything else in it is skipped.
func versionList(raw []json.RawMessage) []string {
	var out []string
	for _, r := range raw {
		var v string
		if json.Unmarshal(r, &v) != nil || v == "" {
			continue
		}
		if len(out) == maxVersions {
			break
		}
		out = append(out, clip(v, versionLength))
	}
	return out
}
