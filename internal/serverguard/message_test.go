package serverguard

import "testing"

// TestTaskAnswerRecognised: a tools/call answer is a task handle only by
// its structured members (the 2026-07-28 extension's resultType "task"
// with a taskId, or the 2025-11-25 CreateTaskResult's task object); a
// normal result, an error, and a result whose text speaks of a task are
// not.
func TestTaskAnswerRecognised(t *testing.T) {
	tests := []struct {
		name, line string
		want       string
	}{
		{"2026-07-28 task handle",
			`{"jsonrpc":"2.0","id":3,"result":{"resultType":"task","taskId":"t-1","status":"working","ttlMs":600000,"pollIntervalMs":1000}}`, "t-1"},
		{"2026-07-28 task handle, string id",
			`{"jsonrpc":"2.0","id":"a","result":{"resultType":"task","taskId":"export-9","status":"input_required"}}`, "export-9"},
		{"2025-11-25 CreateTaskResult",
			`{"jsonrpc":"2.0","id":3,"result":{"task":{"taskId":"t-2","status":"working","createdAt":"2026-12-03T08:00:00Z"}}}`, "t-2"},
		{"normal result",
			`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"done"}]}}`, ""},
		{"completed result of the extension",
			`{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","content":[{"type":"text","text":"done"}]}}`, ""},
		{"isError result",
			`{"jsonrpc":"2.0","id":3,"result":{"isError":true,"content":[{"type":"text","text":"task t-1 failed"}]}}`, ""},
		{"JSON-RPC error",
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"Unsupported result type 'task' for tools/call"}}`, ""},
		{"text that is a task handle",
			`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\"resultType\":\"task\",\"taskId\":\"t-3\"}"}]}}`, ""},
		{"structuredContent that looks like one",
			`{"jsonrpc":"2.0","id":3,"result":{"content":[],"structuredContent":{"resultType":"task","taskId":"t-4","task":{"taskId":"t-4"}}}}`, ""},
		{"resultType task without an id",
			`{"jsonrpc":"2.0","id":3,"result":{"resultType":"task","status":"working"}}`, ""},
		{"a taskId member without the discriminator",
			`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"queued"}],"taskId":"t-6"}}`, ""},
		{"task object under another resultType",
			`{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","task":{"taskId":"t-5"}}}`, ""},
		{"a request naming a task",
			`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"t-1"}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parse([]byte(tt.line)).taskID; got != tt.want {
				t.Errorf("task id %q, want %q", got, tt.want)
			}
		})
	}
}
