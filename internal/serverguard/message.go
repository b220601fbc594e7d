package serverguard

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// kind is what a line of newline-delimited JSON-RPC is.
type kind int

const (
	other        kind = iota // not a JSON-RPC object (a batch, garbage): passed on as it is
	request                  // method and id
	notification             // method, no id
	response                 // id, no method
)

// message is the part of a JSON-RPC line the guard reads; the line itself
// travels unchanged unless its id has to be rewritten.
type message struct {
	kind   kind
	id     json.RawMessage
	method string
	// failed: a response with an error member; isError: a response whose
	// result says isError (a tool's own failure).
	failed  bool
	isError bool
	errMsg  string
	// taskID: a response whose result is an MCP task handle, not the
	// call's result (taskAnswer); "" for every other response.
	taskID string
}

func parse(line []byte) message {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
		Result *struct {
			IsError bool `json:"isError"`
			taskHandle
		} `json:"result"`
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &m) != nil {
		return message{kind: other}
	}
	hasID := len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null"))
	switch {
	case m.Method != "" && hasID:
		return message{kind: request, id: m.ID, method: m.Method}
	case m.Method != "":
		return message{kind: notification, method: m.Method}
	case hasID:
		msg := message{kind: response, id: m.ID, failed: m.Error != nil, isError: m.Result != nil && m.Result.IsError}
		if m.Error != nil {
			msg.errMsg = m.Error.Message
		}
		if m.Error == nil && m.Result != nil {
			msg.taskID = m.Result.taskID()
		}
		return msg
	}
	return message{kind: other}
}

// taskHandle is the part of a result that makes it an MCP task handle
// instead of the call's result, in either shape a server may send:
//   - the io.modelcontextprotocol/tasks extension (protocol 2026-07-28):
//     the result itself is the task, discriminated by resultType "task":
//     {"resultType":"task","taskId":"…","status":"working",…};
//   - the 2025-11-25 protocol's CreateTaskResult: {"task":{"taskId":"…",
//     "status":"working",…}}.
//
// Only these structured members count: a result's content whose text
// speaks of a task is a result like any other.
type taskHandle struct {
	ResultType string `json:"resultType"`
	TaskID     string `json:"taskId"`
	Task       *struct {
		TaskID string `json:"taskId"`
	} `json:"task"`
}

// taskID is the task the result is a handle of; "" when it is none.
func (h taskHandle) taskID() string {
	switch {
	case h.ResultType == "task" && h.TaskID != "":
		return h.TaskID
	case h.ResultType == "" && h.Task != nil && h.Task.TaskID != "":
		return h.Task.TaskID
	}
	return ""
}

// idKey is an id as a map key: its JSON text, so 7 and "7" differ.
func idKey(id json.RawMessage) string { return string(bytes.TrimSpace(id)) }

// withID is line with its id member replaced by id.
func withID(line []byte, id json.RawMessage) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, err
	}
	m["id"] = id
	return json.Marshal(m)
}

// stringID is s as a JSON-RPC id.
func stringID(s string) json.RawMessage { return json.RawMessage(strconv.Quote(s)) }

// errorReply is a JSON-RPC error answer to the request id.
func errorReply(id json.RawMessage, code int, text string) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, text}})
	return b
}

// ownRequest is a request the guard itself sends the server.
func ownRequest(id json.RawMessage, method string, params json.RawMessage) []byte {
	m := map[string]json.RawMessage{"jsonrpc": json.RawMessage(`"2.0"`), "id": id,
		"method": json.RawMessage(strconv.Quote(method))}
	if params != nil {
		m["params"] = params
	}
	b, _ := json.Marshal(m)
	return b
}

// cancelledID is the request a notifications/cancelled names, as an idKey
// ("" when it names none).
func cancelledID(line []byte) string {
	var m struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || len(m.Params.RequestID) == 0 {
		return ""
	}
	return idKey(m.Params.RequestID)
}

// toolCall is the tool a tools/call request names and the tool_use_id
// Claude Code sends with it (params._meta["claudecode/toolUseId"], the
// hook payload's tool_use_id on both supported versions); "" when none.
func toolCall(line []byte) (tool, toolUseID string) {
	var m struct {
		Params struct {
			Name string `json:"name"`
			Meta struct {
				ToolUseID string `json:"claudecode/toolUseId"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil {
		return "", ""
	}
	return m.Params.Name, m.Params.Meta.ToolUseID
}
