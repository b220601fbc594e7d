package healthcheck

import "strings"

// ServerAnswered says whether exec-server saw server itself answer the
// call toolUseID of attempt (run, job, attempt) with a failure
// (EventCallAnswered), and how (AnsweredError, AnsweredIsError). Such a
// call's failure is the server's own answer: a stdio server can write
// the CLI's exact "Connection closed" as its own error, and only the wire
// tells the two apart. Another attempt's events (a fake API reuses
// tool_use_ids across sessions), another server's and events without a
// tool_use_id never match.
func ServerAnswered(events []Event, run, job string, attempt int, server, toolUseID string) (verdict string, ok bool) {
	if toolUseID == "" {
		return "", false
	}
	for _, ev := range events {
		if ev.Kind == EventCallAnswered && ev.ToolUseID == toolUseID && ev.Server == server &&
			ev.Run == run && ev.Job == job && ev.Attempt == attempt {
			return ev.Verdict, true
		}
	}
	return "", false
}

// ClassifyAnswered reads the error text of a failed call whose text is
// the client's own (ClientText: "Connection closed", 2.1.197's "MCP error
// -32000: Connection closed", …) but which the server itself answered
// (ServerAnswered): the server is alive and borrowed the client's words,
// which say nothing of an upstream of its. It is the tool's own failure:
// it neither opens the server nor counts towards its failure threshold.
// (A server's text that is not the client's is read as before, by
// Classify.)
func ClassifyAnswered(text string) Classification {
	_, rpcCode, _ := cutPrefixes(strings.TrimSpace(text))
	return Classification{Code: CodeToolError, ToolError: true, JSONRPC: rpcCode != "", ServerAnswered: true}
}
