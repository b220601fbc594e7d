package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// conversation is one transport's way to exchange messages with a server.
type conversation interface {
	// call sends a request and returns the response that answers it,
	// skipping anything else the server sends meanwhile.
	call(ctx context.Context, id int64, method string, params any) (*message, error)
	// notify sends a notification.
	notify(ctx context.Context, method string) error
	// setProtocolVersion tells the transport which version its requests
	// now go out under ("" while initialize has not answered).
	setProtocolVersion(v string)
}

// pipeline is a conversation over one stream (stdio): a request can go out
// while an earlier one is unanswered, and the earlier one's late answer
// still arrives.
type pipeline interface {
	send(id int64, method string, params any) error
	// await returns the first response that answers one of ids.
	await(ctx context.Context, ids ...int64) (*message, error)
}

// respawner is a conversation whose server can be started again (stdio).
// A server that exits on server/discover is started afresh and
// initialized, as Claude Code 2.1.332 does.
type respawner interface {
	// respawn replaces a server that ended (err says how) by a new one;
	// ok=false when err does not mean the server is gone.
	respawn(err error) (ok bool, _ error)
}

// initializeParams is Claude Code 2.1.332's fallback initialize: the legacy
// protocol version and the capabilities it also declares in discover.
func initializeParams() map[string]any {
	return map[string]any{
		"protocolVersion": ClientProtocolVersion,
		"capabilities":    clientCapabilities(),
		"clientInfo":      clientInfo(),
	}
}

type initializeResult struct {
	ProtocolVersion string `json:"protocolVersion"`
	ServerInfo      struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"serverInfo"`
}

type toolsListResult struct {
	Tools      []json.RawMessage `json:"tools"`
	NextCursor string            `json:"nextCursor"`
}

// maxToolPages bounds tools/list paging against a server whose cursor never
// runs out.
const maxToolPages = 20

// handshake connects over conv as Claude Code 2.1.332 does: server/discover,
// then initialize when the server turns out to be legacy (withDiscover
// false skips straight to initialize: the legacy SSE transport), and
// tools/list when asked. An error means the server gave no JSON-RPC answer
// the probe could use; the transport turns it into a verdict. Any answer,
// an error included, makes the result Healthy: it proves an MCP endpoint.
func handshake(ctx context.Context, conv conversation, opts Options, start time.Time, withDiscover bool) (Result, error) {
	var disc discovery
	pending := false // server/discover may still be answered on the stream
	wait := discoverWait(opts.Timeout)
	if withDiscover {
		conv.setProtocolVersion(ModernProtocolVersion)
		dctx, cancel := context.WithTimeout(ctx, wait)
		resp, err := conv.call(dctx, discoverID, methodDiscover, discoverParams())
		cancel()
		switch {
		case err == nil:
			disc = judgeDiscover(resp)
		case ctx.Err() != nil:
			return Result{}, ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			disc.legacy = fmt.Sprintf("server/discover unanswered within %s", wait)
			disc.slow = true
			_, pending = conv.(pipeline)
		case finalAnswer(err), errors.Is(err, errLineTooLong):
			// 401, 429, a refused connection: initialize would get the
			// same answer, and the verdict does not depend on the era.
			// An answer over the line bound leaves nothing to read after.
			return Result{}, err
		default:
			disc.legacy = "server/discover: " + err.Error()
			if r, ok := conv.(respawner); ok {
				respawned, err2 := r.respawn(err)
				if err2 != nil {
					return Result{}, err2
				}
				if respawned {
					disc.legacy = "the server " + err.Error() + " on server/discover and was started again"
				}
			}
		}
		if disc.modern || disc.modernError != nil {
			return modernResult(ctx, conv, disc, opts, start), nil
		}
	}

	conv.setProtocolVersion("")
	var resp *message
	var err error
	if p, ok := conv.(pipeline); ok && pending {
		// Initialize queues behind the unanswered discover; whichever
		// answer comes first decides.
		_ = p.send(initializeID, "initialize", initializeParams())
		resp, err = p.await(ctx, discoverID, initializeID)
		var refused *message // initialize's error, when the discover's answer came after it
		if err == nil && resp.answers(initializeID) && resp.Error != nil {
			// A modern server that took the late discover first refuses
			// the initialize queued behind it ("duplicate initialize"),
			// and may send that refusal before the discover's answer:
			// the discover's answer, if it comes within the wait,
			// decides.
			dctx, cancel := context.WithTimeout(ctx, wait)
			if late, lerr := p.await(dctx, discoverID); lerr == nil {
				refused, resp = resp, late
			}
			cancel()
		}
		if err == nil && resp.answers(discoverID) {
			late := judgeDiscover(resp)
			late.slow = true
			if late.modern || late.modernError != nil {
				conv.setProtocolVersion(ModernProtocolVersion)
				return modernResult(ctx, conv, late, opts, start), nil
			}
			disc.supported = late.supported
			disc.legacy = fmt.Sprintf("%s, after the %s discover wait", late.legacy, wait)
			if resp = refused; resp == nil {
				resp, err = p.await(ctx, initializeID)
			}
		}
	} else {
		resp, err = conv.call(ctx, initializeID, "initialize", initializeParams())
	}
	if err != nil {
		return Result{}, err
	}
	return legacyResult(ctx, conv, resp, disc, opts, start), nil
}

// modernResult is the verdict on a server that answered server/discover
// as a modern server, with its tools when asked.
func modernResult(ctx context.Context, conv conversation, disc discovery, opts Options, start time.Time) Result {
	res := Result{Verdict: Healthy, Latency: time.Since(start), Tools: -1, Era: Modern, SupportedVersions: disc.supported,
		SlowDiscover: disc.slow}
	if e := disc.modernError; e != nil {
		res.Reason = fmt.Sprintf("answered server/discover with JSON-RPC error %d: %s", e.Code, clip(e.Message, 200))
		if len(disc.supported) > 0 {
			res.Reason += " (supports " + strings.Join(disc.supported, ", ") + ")"
		}
		return res
	}
	res.ProtocolVersion, res.ServerName = disc.negotiated, disc.serverName
	res.Reason = "answered server/discover"
	if res.ServerName != "" {
		res.Reason += " as " + res.ServerName
	}
	res.Reason += " (protocol " + res.ProtocolVersion + ", modern)"
	if opts.ListTools {
		res.Tools, res.ToolHints, res.Reason = countTools(ctx, conv, true, res.Reason)
	}
	return res
}

// legacyResult is the verdict on a server that answered initialize.
func legacyResult(ctx context.Context, conv conversation, resp *message, disc discovery, opts Options, start time.Time) Result {
	res := Result{Verdict: Healthy, Latency: time.Since(start), Tools: -1, Era: Legacy, SupportedVersions: disc.supported,
		SlowDiscover: disc.slow}
	note := ""
	if disc.legacy != "" {
		note = "; legacy: " + disc.legacy
	}
	if resp.Error != nil {
		// A modern-only server answers initialize with "method not found"
		// when discover went unanswered; the answer still proves a live
		// MCP endpoint.
		res.Reason = fmt.Sprintf("answered initialize with JSON-RPC error %d: %s", resp.Error.Code, clip(resp.Error.Message, 200)) + note
		return res
	}
	var init initializeResult
	_ = json.Unmarshal(resp.Result, &init) // a result we cannot read is still an answer
	res.ServerName = clip(init.ServerInfo.Name, 100)
	res.ProtocolVersion = clip(init.ProtocolVersion, versionLength)
	res.Reason = "answered initialize"
	if res.ServerName != "" {
		res.Reason += " as " + res.ServerName
	}
	if res.ProtocolVersion != "" {
		res.Reason += " (protocol " + res.ProtocolVersion + ")"
	}
	res.Reason += note
	pv := res.ProtocolVersion
	if pv == "" {
		pv = ClientProtocolVersion
	}
	conv.setProtocolVersion(pv)
	if opts.ListTools {
		if err := conv.notify(ctx, "notifications/initialized"); err != nil {
			res.Reason += "; tools/list failed: notifications/initialized: " + err.Error()
			return res
		}
		res.Tools, res.ToolHints, res.Reason = countTools(ctx, conv, false, res.Reason)
	}
	return res
}

// countTools lists the tools; a failure keeps the server healthy (its
// handshake answered) and says why the count is unknown.
func countTools(ctx context.Context, conv conversation, modern bool, reason string) (int, map[string]ToolHints, string) {
	n, hints, err := listTools(ctx, conv, modern)
	if err != nil {
		return -1, nil, reason + "; tools/list failed: " + err.Error()
	}
	return n, hints, reason
}

// listedTool is the part of a tools/list entry the probe keeps.
type listedTool struct {
	Name        string     `json:"name"`
	Annotations *ToolHints `json:"annotations"`
}

func listTools(ctx context.Context, conv conversation, modern bool) (int, map[string]ToolHints, error) {
	count := 0
	hints := map[string]ToolHints{}
	cursor := ""
	for page := 0; page < maxToolPages; page++ {
		params := map[string]any{}
		if modern {
			params["_meta"] = modernMeta()
		}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var p any = params
		if len(params) == 0 {
			p = nil
		}
		resp, err := conv.call(ctx, firstListID+int64(page), "tools/list", p)
		if err != nil {
			return 0, nil, err
		}
		if resp.Error != nil {
			return 0, nil, fmt.Errorf("JSON-RPC error %d: %s", resp.Error.Code, clip(resp.Error.Message, 200))
		}
		var list toolsListResult
		if err := json.Unmarshal(resp.Result, &list); err != nil {
			return 0, nil, fmt.Errorf("unreadable result: %w", err)
		}
		count += len(list.Tools)
		for _, raw := range list.Tools {
			var lt listedTool
			// A tool whose entry cannot be read has no hints: it counts
			// as having side effects.
			if json.Unmarshal(raw, &lt) == nil && lt.Name != "" && lt.Annotations != nil && len(hints) < maxHintedTools {
				hints[clip(lt.Name, 200)] = *lt.Annotations
			}
		}
		if list.NextCursor == "" {
			return count, hints, nil
		}
		cursor = list.NextCursor
	}
	return count, hints, nil
}
