package server_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// malformed is one bad request of the corpus and the exact answer it must
// get.
type malformed struct {
	name string
	// method defaults to POST; a GET sends no body.
	method string
	// path defaults to /v1/graph/invoke.
	path string
	// body, or file under testdata/malformed. {P} and {Q} stand for the
	// pending call of threads p and q, {S} for p's server (calculator)
	// call, {CID} for the id of thread c's first message.
	body, file string
	// token: "" sends token A, "none" no Authorization header, else the
	// token itself.
	token  string
	status int
	code   string
	// want are substrings of the message, naming the part at fault.
	want []string
	// ids are the expected error.call_ids.
	ids []string
}

const (
	badRequest = 400
	invalid    = 422
	conflict   = 409
)

func msgBody(msg string) string {
	return `{"input": {"messages": [` + msg + `]}, "config": {"thread_id": "p"}}`
}

func blockBody(block string) string {
	return msgBody(`{"role": "user", "content": [` + block + `]}`)
}

func resultBody(thread, result string) string {
	return `{"input": {"messages": [{"role": "tool", "content": [` + result + `]}]}, "config": {"thread_id": "` + thread + `"}}`
}

var corpus = []malformed{
	// Not JSON at all, or not one JSON value.
	{name: "empty body", body: ``, status: badRequest, code: "malformed_request", want: []string{"empty body"}},
	{name: "whitespace only", body: " \n\t ", status: badRequest, code: "malformed_request", want: []string{"empty body"}},
	{name: "truncated object", body: `{"input": {"messages": [`, status: badRequest, code: "malformed_request", want: []string{"invalid JSON", "ends before"}},
	{name: "missing value", body: `{"input": }`, status: badRequest, code: "malformed_request", want: []string{"invalid JSON at byte 11"}},
	{name: "single quotes", body: `{'input': {}}`, status: badRequest, code: "malformed_request", want: []string{"invalid JSON at byte 2"}},
	{name: "trailing comma", body: `{"config": {"thread_id": "p"},}`, status: badRequest, code: "malformed_request", want: []string{"invalid JSON"}},
	{name: "bare word", body: `hello`, status: badRequest, code: "malformed_request", want: []string{"invalid JSON at byte 1"}},
	{name: "two objects", body: `{} {}`, status: badRequest, code: "malformed_request", want: []string{"unexpected data after the JSON value"}},
	{name: "trailing garbage", body: `{"config": {"thread_id": "p"}} x`, status: badRequest, code: "malformed_request", want: []string{"unexpected data after the JSON value"}},
	{name: "byte order mark", body: "\ufeff{}", status: badRequest, code: "malformed_request", want: []string{"invalid JSON at byte 1"}},
	{name: "nesting deeper than JSON allows", file: "deep_nesting.json", status: badRequest, code: "malformed_request", want: []string{"invalid JSON", "exceeded max depth"}},

	// The body, and each level, of the wrong type.
	{name: "body is an array", body: `[]`, status: badRequest, code: "malformed_request", want: []string{"body: must be an object, got array"}},
	{name: "body is a string", body: `"hello"`, status: badRequest, code: "malformed_request", want: []string{"body: must be an object, got string"}},
	{name: "body is a number", body: `5`, status: badRequest, code: "malformed_request", want: []string{"body: must be an object, got number"}},
	{name: "body is null", body: `null`, status: badRequest, code: "malformed_request", want: []string{"body: must be an object, got null"}},
	{name: "body is true", body: `true`, status: badRequest, code: "malformed_request", want: []string{"body: must be an object, got bool"}},
	{name: "input is an array", body: `{"input": [], "config": {"thread_id": "p"}}`, status: badRequest, code: "malformed_request", want: []string{"input: must be an object, got array"}},
	{name: "input is a string", body: `{"input": "hello", "config": {"thread_id": "p"}}`, status: badRequest, code: "malformed_request", want: []string{"input: must be an object, got string"}},
	{name: "messages is an object", body: `{"input": {"messages": {"role": "user", "content": "hi"}}, "config": {"thread_id": "p"}}`, status: badRequest, code: "malformed_request", want: []string{"input.messages: must be an array, got object"}},
	{name: "messages is a string", body: `{"input": {"messages": "hello"}, "config": {"thread_id": "p"}}`, status: badRequest, code: "malformed_request", want: []string{"input.messages: must be an array, got string"}},
	{name: "a message is a string", body: msgBody(`"hello"`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0]: must be an object, got a string"}},
	{name: "a message is a number", body: msgBody(`{"role": "user", "content": "ok"}, 7`), status: badRequest, code: "malformed_request", want: []string{"input.messages[1]: must be an object, got a number"}},
	{name: "a message is null", body: msgBody(`null`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0]: must be an object, got null"}},
	{name: "a message is an array", body: msgBody(`[{"role": "user", "content": "hi"}]`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0]: must be an object, got an array"}},
	{name: "role is a number", body: msgBody(`{"role": 1, "content": "hi"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].role", "got number"}},
	{name: "id is a number", body: msgBody(`{"id": 5, "role": "user", "content": "hi"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].id: must be a string, got number"}},
	{name: "content is a number", body: msgBody(`{"role": "user", "content": 5}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content: want a string or an array of blocks"}},
	{name: "content is a block, not a list", body: msgBody(`{"role": "user", "content": {"type": "text", "text": "hi"}}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content: want a string or an array of blocks"}},
	{name: "content is missing", body: msgBody(`{"role": "user"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content: missing"}},
	{name: "content is null", body: msgBody(`{"role": "user", "content": null}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content: missing"}},
	{name: "a block is a string", body: blockBody(`"hello"`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0]", "must be a JSON object"}},
	{name: "a block is a number", body: blockBody(`{"type": "text", "text": "ok"}, 3`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[1]", "must be a JSON object"}},
	{name: "text is a number", body: blockBody(`{"type": "text", "text": 42}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].text: must be a string, got number"}},
	{name: "text is an array", body: blockBody(`{"type": "text", "text": ["a", "b"]}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].text: must be a string, got array"}},
	{name: "block type is a number", body: blockBody(`{"type": 1, "text": "hi"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0]"}},
	{name: "tool_call_id is a number", body: resultBody("p", `{"type": "tool_result", "tool_call_id": 2, "content": "x"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].tool_call_id: must be a string, got number"}},
	{name: "is_error is a string", body: resultBody("p", `{"type": "tool_result", "tool_call_id": "{P}", "content": "x", "is_error": "yes"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].is_error: must be true or false, got string"}},
	{name: "tool_call arguments is an array", body: blockBody(`{"type": "tool_call", "id": "c", "name": "calculator", "arguments": [1]}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].arguments: want a JSON object"}},
	{name: "config is an array", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": ["p"]}`, status: badRequest, code: "malformed_request", want: []string{"config: must be an object, got array"}},
	{name: "config is a string", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": "p"}`, status: badRequest, code: "malformed_request", want: []string{"config: must be an object, got string"}},
	{name: "thread_id is a number", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": 1}}`, status: badRequest, code: "malformed_request", want: []string{"config.thread_id: must be a string"}},
	{name: "thread_id is an object", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": {"id": "p"}}}`, status: badRequest, code: "malformed_request", want: []string{"config.thread_id: must be a string"}},

	// Bytes that are not UTF-8, which a decoder would turn into U+FFFD.
	{name: "thread_id not UTF-8", body: "{\"input\": {\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}, \"config\": {\"thread_id\": \"p\xff\"}}", status: badRequest, code: "malformed_request", want: []string{"invalid UTF-8"}},
	{name: "thread_id of Latin-1 bytes", body: "{\"input\": {\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}, \"config\": {\"thread_id\": \"caf\xe9\"}}", status: badRequest, code: "malformed_request", want: []string{"invalid UTF-8"}},
	{name: "message text not UTF-8", body: msgBody("{\"role\": \"user\", \"content\": \"a\xc3(b\"}"), status: badRequest, code: "malformed_request", want: []string{"invalid UTF-8"}},
	{name: "overlong UTF-8 encoding", body: msgBody("{\"role\": \"user\", \"content\": \"\xc0\xaf\"}"), status: badRequest, code: "malformed_request", want: []string{"invalid UTF-8"}},
	{name: "UTF-16 body", body: "{\x00}\x00", status: badRequest, code: "malformed_request"},

	// Unknown keys at every level.
	{name: "unknown top-level key", body: `{"inputs": {"messages": []}, "config": {"thread_id": "p"}}`, status: badRequest, code: "malformed_request", want: []string{"inputs: unknown key"}},
	{name: "thread_id at the top level", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "thread_id": "p"}`, status: badRequest, code: "malformed_request", want: []string{"thread_id: unknown key"}},
	{name: "unknown key in input", body: `{"input": {"message": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "p"}}`, status: badRequest, code: "malformed_request", want: []string{"input.message: unknown key"}},
	{name: "unknown key in config", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "p", "recursion_limit": 5}}`, status: badRequest, code: "malformed_request", want: []string{"config.recursion_limit: unknown key"}},
	{name: "camelCase threadId", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"threadId": "p"}}`, status: badRequest, code: "malformed_request", want: []string{"config.threadId: unknown key"}},
	{name: "LangGraph configurable", file: "langgraph_configurable.json", status: badRequest, code: "malformed_request", want: []string{"config.configurable: unknown key"}},
	{name: "unknown key in a message", body: msgBody(`{"role": "user", "content": "hi", "name": "bob"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].name: unknown key"}},
	{name: "OpenAI tool message", file: "openai_tool_message.json", status: badRequest, code: "malformed_request", want: []string{"input.messages[0].tool_call_id: unknown key"}},
	{name: "unknown key in a text block", body: blockBody(`{"type": "text", "text": "hi", "cache_control": {}}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].cache_control: unknown key"}},
	{name: "Anthropic tool_use_id", file: "anthropic_tool_result.json", status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].tool_use_id: unknown key"}},
	{name: "OpenAI chat body", file: "openai_chat_body.json", status: badRequest, code: "malformed_request", want: []string{"model: unknown key"}},
	{name: "AG-UI input sent to invoke", file: "agui_input_to_invoke.json", status: badRequest, code: "malformed_request", want: []string{"threadId: unknown key"}},

	// Duplicate keys at every level: JSON readers disagree on which wins,
	// so none is taken.
	{name: "duplicate top-level key", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "p"}, "input": {"messages": []}}`, status: badRequest, code: "malformed_request", want: []string{"input: duplicate key"}},
	{name: "duplicate thread_id", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "new", "thread_id": "p"}}`, status: badRequest, code: "malformed_request", want: []string{"config.thread_id: duplicate key"}},
	{name: "duplicate messages", body: `{"input": {"messages": [], "messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "new"}}`, status: badRequest, code: "malformed_request", want: []string{"input.messages: duplicate key"}},
	{name: "duplicate role in a message", body: msgBody(`{"role": "tool", "content": "hi"}, {"role": "user", "content": "hi", "role": "system"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[1].role: duplicate key"}},
	{name: "duplicate tool_call_id in a block", body: resultBody("p", `{"type": "tool_result", "tool_call_id": "call_bogus", "content": 1, "tool_call_id": "{P}"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].tool_call_id: duplicate key"}},
	{name: "duplicate key inside a result's content", body: resultBody("p", `{"type": "tool_result", "tool_call_id": "{P}", "content": {"text": "a", "text": "b"}}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].content.text: duplicate key"}},

	// Keys match exactly: another letter case is an unknown key.
	{name: "upper-case top-level key", body: `{"Input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "new"}}`, status: badRequest, code: "malformed_request", want: []string{`Input: unknown key (keys are case-sensitive: did you mean "input"?)`}},
	{name: "upper-case key in input", body: `{"input": {"MESSAGES": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "new"}}`, status: badRequest, code: "malformed_request", want: []string{`input.MESSAGES: unknown key`, `did you mean "messages"`}},
	{name: "upper-case key in config", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"Thread_ID": "new"}}`, status: badRequest, code: "malformed_request", want: []string{`config.Thread_ID: unknown key`, `did you mean "thread_id"`}},
	{name: "upper-case key in a message", body: msgBody(`{"ROLE": "user", "content": "hi"}`), status: badRequest, code: "malformed_request", want: []string{`input.messages[0].ROLE: unknown key`, `did you mean "role"`}},
	{name: "upper-case key in a block", body: resultBody("p", `{"type": "tool_result", "Tool_Call_Id": "{P}", "content": 1}`), status: badRequest, code: "malformed_request", want: []string{`input.messages[0].content[0].Tool_Call_Id: unknown key`, `did you mean "tool_call_id"`}},
	{name: "upper-case type key in a block", body: blockBody(`{"Type": "text", "text": "hi"}`), status: badRequest, code: "malformed_request", want: []string{`input.messages[0].content[0].Type: unknown key`, `did you mean "type"`}},

	// Strings are UTF-8.
	{name: "invalid UTF-8 in a text", body: msgBody("{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"caf\xe9\"}]}"), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].text: invalid UTF-8"}},
	{name: "invalid UTF-8 in a key", body: "{\"input\": {\"messages\": []}, \"config\": {\"thread_\xffid\": \"p\"}}", status: badRequest, code: "malformed_request", want: []string{"config", "invalid UTF-8"}},
	{name: "stream: duplicate key", path: "/v1/graph/stream", body: `{"input": {"messages": [{"role": "user", "content": "hi", "content": "ho"}]}, "config": {"thread_id": "new"}}`, status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content: duplicate key"}},
	{name: "agui: duplicate threadId", path: "/v1/agui", body: `{"threadId": "new", "runId": "r", "messages": [], "threadId": "p"}`, status: badRequest, code: "malformed_request", want: []string{"RunAgentInput", "threadId: duplicate key"}},
	{name: "agui: invalid UTF-8", path: "/v1/agui", body: "{\"threadId\": \"new\", \"messages\": [{\"id\": \"m\", \"role\": \"user\", \"content\": \"\xc3\"}]}", status: badRequest, code: "malformed_request", want: []string{"messages[0].content: invalid UTF-8"}},

	// Unknown roles and block types.
	{name: "unknown role", body: msgBody(`{"role": "developer", "content": "hi"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].role: unknown role \"developer\""}},
	{name: "missing role", body: msgBody(`{"content": "hi"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].role: missing"}},
	{name: "video block", body: blockBody(`{"type": "video", "url": "http://x/y.mp4"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].type: unknown block type \"video\""}},
	{name: "image block without a type", body: blockBody(`{"type": "image", "url": "https://x/y.png"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].mime_type: missing"}},
	{name: "upper-case type", body: blockBody(`{"type": "TEXT", "text": "hi"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].type: unknown block type \"TEXT\""}},
	{name: "block without type", body: blockBody(`{"text": "hi"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].type: missing"}},
	{name: "bad block deep in a long history", file: "long_history_bad_block.json", status: badRequest, code: "malformed_request", want: []string{"input.messages[17].content[1].type: unknown block type \"txt\""}},
	{name: "tool_result without tool_call_id", body: resultBody("p", `{"type": "tool_result", "content": "x"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].tool_call_id: missing"}},
	{name: "tool_call without id", body: blockBody(`{"type": "tool_call", "name": "calculator", "arguments": {}}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].id: missing"}},

	// Well-formed, but not something a client may send.
	{name: "client sends a tool_call", body: msgBody(`{"role": "assistant", "content": [{"type": "tool_call", "id": "c9", "name": "calculator", "arguments": {"expression": "1"}}]}`), status: invalid, code: "invalid_input", want: []string{"messages[0].content[0]: clients may not send tool_call blocks"}},
	{name: "client replays the paused step", file: "replayed_tool_call.json", status: invalid, code: "invalid_input", want: []string{"messages[0].content[0]: clients may not send tool_call blocks"}},
	{name: "client sends a remote_tool_call", body: msgBody(`{"role": "assistant", "content": [{"type": "remote_tool_call", "id": "c9", "name": "read_clipboard", "arguments": {}, "node": "tools"}]}`), status: invalid, code: "invalid_input", want: []string{"messages[0].content[0]: clients may not send remote_tool_call blocks"}},
	{name: "missing thread_id", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}}`, status: invalid, code: "invalid_input", want: []string{"config.thread_id: required"}},
	{name: "empty thread_id", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": ""}}`, status: invalid, code: "invalid_input", want: []string{"config.thread_id: required"}},
	{name: "thread_id too long", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "` + strings.Repeat("t", 257) + `"}}`, status: invalid, code: "invalid_input", want: []string{"config.thread_id", "at most 256"}},
	{name: "thread_id of 257 two-byte characters", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "` + strings.Repeat("é", 257) + `"}}`, status: invalid, code: "invalid_input", want: []string{"config.thread_id: at most 256 characters, got 257"}},
	{name: "thread_id with an escaped lone surrogate", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "p\ud800"}}`, status: badRequest, code: "malformed_request", want: []string{"config.thread_id", "invalid surrogate"}},
	{name: "thread_id of the replacement character", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "p\ufffd"}}`, status: invalid, code: "invalid_input", want: []string{"config.thread_id: must not contain U+FFFD"}},
	{name: "no messages on a new thread", body: `{"input": {"messages": []}, "config": {"thread_id": "new"}}`, status: invalid, code: "invalid_input", want: []string{"input: no messages"}},
	{name: "no input on a completed thread", body: `{"config": {"thread_id": "c"}}`, status: invalid, code: "invalid_input", want: []string{"input: no messages"}},
	{name: "empty content list", body: msgBody(`{"role": "user", "content": []}`), status: invalid, code: "invalid_input", want: []string{"messages[0].content: empty"}},
	{name: "tool_result in a user message", body: msgBody(`{"role": "user", "content": [{"type": "tool_result", "tool_call_id": "{P}", "content": "x"}]}`), status: invalid, code: "invalid_input", want: []string{"messages[0].content[0]: tool_result blocks belong in a message with role \"tool\""}},
	{name: "text in a tool message", body: msgBody(`{"role": "tool", "content": "hi"}`), status: invalid, code: "invalid_input", want: []string{"messages[0].content[0]: a tool message holds tool_result blocks only"}},
	{name: "results and new input together", body: msgBody(`{"role": "tool", "content": [{"type": "tool_result", "tool_call_id": "{P}", "content": "x"}]}, {"role": "user", "content": "and also"}`), status: invalid, code: "invalid_input", want: []string{"send tool results and new input in separate requests"}},
	{name: "two results for one call", body: resultBody("p", `{"type": "tool_result", "tool_call_id": "{P}", "content": 1}, {"type": "tool_result", "tool_call_id": "{P}", "content": 2}`), status: invalid, code: "invalid_input", want: []string{"two results for call \"{P}\""}},
	{name: "a message id already in the thread", body: `{"input": {"messages": [{"id": "{CID}", "role": "user", "content": "hi"}]}, "config": {"thread_id": "c"}}`, status: invalid, code: "invalid_input", want: []string{"messages[0].id: \"{CID}\" is already used in this thread"}},

	// Well-formed results that do not fit the thread.
	{name: "result for an unknown id", body: resultBody("p", `{"type": "tool_result", "tool_call_id": "call_bogus", "content": 1}`), status: conflict, code: "unknown_call", want: []string{"call_bogus", "pending calls are {P}"}, ids: []string{"call_bogus"}},
	{name: "result for the wrong thread", body: resultBody("q", `{"type": "tool_result", "tool_call_id": "{P}", "content": 1}`), status: conflict, code: "unknown_call", want: []string{`thread "q"`, "pending calls are {Q}"}, ids: []string{"{P}"}},
	{name: "result for a server call", file: "result_for_server_call.json", status: conflict, code: "unknown_call", want: []string{"{S}"}, ids: []string{"{S}"}},
	{name: "result on a completed thread", body: resultBody("c", `{"type": "tool_result", "tool_call_id": "{P}", "content": 1}`), status: conflict, code: "not_paused", want: []string{`thread "c"`, "not paused"}, ids: []string{"{P}"}},
	{name: "result on a thread that does not exist", body: resultBody("new", `{"type": "tool_result", "tool_call_id": "{P}", "content": 1}`), status: conflict, code: "not_paused", want: []string{`thread "new"`}, ids: []string{"{P}"}},
	{name: "new input while paused", body: msgBody(`{"role": "user", "content": "what time is it?"}`), status: conflict, code: "pending_calls", want: []string{"{P}", "tool_result"}, ids: []string{"{P}"}},
	{name: "no input while paused", body: `{"config": {"thread_id": "q"}}`, status: conflict, code: "pending_calls", want: []string{`thread "q"`}, ids: []string{"{Q}"}},

	// Auth and size.
	{name: "missing auth", body: resultBody("p", `{"type": "tool_result", "tool_call_id": "{P}", "content": 1}`), token: "none", status: 401, code: "unauthorized", want: []string{"Bearer"}},
	{name: "wrong token", body: resultBody("p", `{"type": "tool_result", "tool_call_id": "{P}", "content": 1}`), token: "not-a-token", status: 401, code: "unauthorized", want: []string{"Bearer"}},
	{name: "another token's thread", body: resultBody("p", `{"type": "tool_result", "tool_call_id": "{P}", "content": 1}`), token: tokenB, status: conflict, code: "not_paused", want: []string{`thread "p"`}, ids: []string{"{P}"}},
	{name: "huge body", body: resultBody("p", `{"type": "tool_result", "tool_call_id": "{P}", "content": "`+strings.Repeat("x", 70_000)+`"}`), status: 413, code: "body_too_large", want: []string{"65536 bytes"}},
	{name: "huge unterminated string", body: `{"input": "` + strings.Repeat("x", 70_000), status: 413, code: "body_too_large", want: []string{"server.max_body_bytes"}},

	// The other run endpoints answer the same way.
	{name: "stream: bad JSON", path: "/v1/graph/stream", body: `{"input": `, status: badRequest, code: "malformed_request", want: []string{"invalid JSON"}},
	{name: "stream: unknown block type", path: "/v1/graph/stream", body: blockBody(`{"type": "sticker"}`), status: badRequest, code: "malformed_request", want: []string{"input.messages[0].content[0].type: unknown block type \"sticker\""}},
	{name: "stream: tool_call from the client", path: "/v1/graph/stream", body: msgBody(`{"role": "assistant", "content": [{"type": "tool_call", "id": "c9", "name": "calculator", "arguments": {}}]}`), status: invalid, code: "invalid_input", want: []string{"clients may not send tool_call blocks"}},
	{name: "stream: new input while paused", path: "/v1/graph/stream", body: msgBody(`{"role": "user", "content": "hi"}`), status: conflict, code: "pending_calls", want: []string{"{P}"}, ids: []string{"{P}"}},
	{name: "stream: missing auth", path: "/v1/graph/stream", body: msgBody(`{"role": "user", "content": "hi"}`), token: "none", status: 401, code: "unauthorized"},
	{name: "agui: bad JSON", path: "/v1/agui", body: `{"threadId": "p", `, status: badRequest, code: "malformed_request", want: []string{"RunAgentInput", "invalid JSON"}},
	{name: "agui: body is an array", path: "/v1/agui", body: `[]`, status: badRequest, code: "malformed_request", want: []string{"RunAgentInput: body: must be an object, got array"}},
	{name: "agui: missing threadId", path: "/v1/agui", body: `{"runId": "r", "messages": []}`, status: badRequest, code: "malformed_request", want: []string{"threadId: required"}},
	{name: "agui: messages is a string", path: "/v1/agui", body: `{"threadId": "p", "messages": "hi"}`, status: badRequest, code: "malformed_request", want: []string{"want an array, got string"}},
	{name: "agui: threadId not UTF-8", path: "/v1/agui", body: "{\"threadId\": \"p\xfe\", \"messages\": []}", status: badRequest, code: "malformed_request", want: []string{"invalid UTF-8"}},
	{name: "agui: threadId too long", path: "/v1/agui", body: `{"threadId": "` + strings.Repeat("t", 257) + `", "messages": []}`, status: invalid, code: "invalid_input", want: []string{"threadId: at most 256 characters, got 257"}},
	{name: "agui: threadId with an escaped lone surrogate", path: "/v1/agui", body: `{"threadId": "p\udfff", "messages": []}`, status: badRequest, code: "malformed_request", want: []string{"threadId", "invalid surrogate"}},
	{name: "stream: thread_id not UTF-8", path: "/v1/graph/stream", body: "{\"input\": {\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}, \"config\": {\"thread_id\": \"q\xff\"}}", status: badRequest, code: "malformed_request", want: []string{"invalid UTF-8"}},
	{name: "agui: missing auth", path: "/v1/agui", body: `{"threadId": "p", "messages": []}`, token: "none", status: 401, code: "unauthorized"},

	// The response option.
	{name: "response is a number", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "c", "response": 1}}`, status: badRequest, code: "malformed_request", want: []string{"config.response: must be a string, got number"}},
	{name: "response of an unknown kind", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "c", "response": "updates"}}`, status: badRequest, code: "malformed_request", want: []string{`config.response: must be "full" or "delta", got "updates"`}},
	{name: "response in another case", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "c", "response": "Delta"}}`, status: badRequest, code: "malformed_request", want: []string{`config.response: must be "full" or "delta", got "Delta"`}},
	{name: "response is null", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "c", "response": null}}`, status: badRequest, code: "malformed_request", want: []string{"config.response"}},
	{name: "upper-case Response key", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "c", "Response": "delta"}}`, status: badRequest, code: "malformed_request", want: []string{"config.Response: unknown key", `did you mean "response"`}},
	{name: "response at the top level", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "c"}, "response": "delta"}`, status: badRequest, code: "malformed_request", want: []string{"response: unknown key"}},
	{name: "durability of an unknown mode", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "c", "durability": "eventually"}}`, status: badRequest, code: "malformed_request", want: []string{`config.durability: must be "sync", "async" or "exit", got "eventually"`}},
	{name: "durability is empty", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "c", "durability": ""}}`, status: badRequest, code: "malformed_request", want: []string{`config.durability: must be "sync", "async" or "exit", got ""`}},
	{name: "durability is a boolean", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "c", "durability": true}}`, status: badRequest, code: "malformed_request", want: []string{"config.durability: must be a string"}},
	{name: "stream: bad response", path: "/v1/graph/stream", body: `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": "c", "response": "partial"}}`, status: badRequest, code: "malformed_request", want: []string{"config.response"}},

	// Paging a thread.
	{name: "page: limit zero", method: "GET", path: "/v1/threads/c?limit=0", status: invalid, code: "invalid_input", want: []string{"query parameter limit: must be from 1 to 1000, got 0"}},
	{name: "page: limit negative", method: "GET", path: "/v1/threads/c?limit=-3", status: invalid, code: "invalid_input", want: []string{"query parameter limit", "got -3"}},
	{name: "page: limit too large", method: "GET", path: "/v1/threads/c?limit=1001", status: invalid, code: "invalid_input", want: []string{"query parameter limit", "got 1001"}},
	{name: "page: limit not a number", method: "GET", path: "/v1/threads/c?limit=ten", status: badRequest, code: "malformed_request", want: []string{`query parameter limit: must be a whole number from 1 to 1000, got "ten"`}},
	{name: "page: limit a fraction", method: "GET", path: "/v1/threads/c?limit=1.5", status: badRequest, code: "malformed_request", want: []string{"query parameter limit", `"1.5"`}},
	{name: "page: limit with a plus sign", method: "GET", path: "/v1/threads/c?limit=%2B2", status: badRequest, code: "malformed_request", want: []string{"query parameter limit", `"+2"`}},
	{name: "page: limit empty", method: "GET", path: "/v1/threads/c?limit=", status: badRequest, code: "malformed_request", want: []string{"query parameter limit"}},
	{name: "page: limit overflowing", method: "GET", path: "/v1/threads/c?limit=99999999999999999999999", status: badRequest, code: "malformed_request", want: []string{"query parameter limit"}},
	{name: "page: limit twice", method: "GET", path: "/v1/threads/c?limit=1&limit=2", status: badRequest, code: "malformed_request", want: []string{"query parameter limit: given 2 times"}},
	{name: "page: after empty", method: "GET", path: "/v1/threads/c?after=", status: badRequest, code: "malformed_request", want: []string{"query parameter after: empty"}},
	{name: "page: after an unknown id", method: "GET", path: "/v1/threads/c?after=msg_nope", status: invalid, code: "invalid_input", want: []string{`query parameter after: thread "c" has no message with id "msg_nope"`}},
	{name: "page: after another thread's message", method: "GET", path: "/v1/threads/q?after={CID}", status: invalid, code: "invalid_input", want: []string{`thread "q" has no message with id "{CID}"`}},
	{name: "page: after twice", method: "GET", path: "/v1/threads/c?after={CID}&after={CID}", status: badRequest, code: "malformed_request", want: []string{"query parameter after: given 2 times"}},
	{name: "page: after not UTF-8", method: "GET", path: "/v1/threads/c?after=%FF", status: badRequest, code: "malformed_request", want: []string{"query parameter after: must be valid UTF-8"}},
	{name: "page: unknown parameter", method: "GET", path: "/v1/threads/c?offset=2", status: badRequest, code: "malformed_request", want: []string{`query parameter "offset": unknown (allowed: after, limit)`}},
	{name: "page: camelCase parameter", method: "GET", path: "/v1/threads/c?Limit=2", status: badRequest, code: "malformed_request", want: []string{`query parameter "Limit": unknown`}},
	{name: "page: bad escape", method: "GET", path: "/v1/threads/c?after=%zz", status: badRequest, code: "malformed_request", want: []string{"query:"}},
	{name: "page: semicolon separator", method: "GET", path: "/v1/threads/c?after=x;limit=2", status: badRequest, code: "malformed_request", want: []string{"query:"}},
	{name: "page: another token's thread", method: "GET", path: "/v1/threads/c?limit=1", token: tokenB, status: 404, code: "thread_not_found", want: []string{`thread "c"`}},
	{name: "page: a thread that does not exist", method: "GET", path: "/v1/threads/new?limit=1", status: 404, code: "thread_not_found", want: []string{`thread "new"`}},
	{name: "page: missing auth", method: "GET", path: "/v1/threads/c?limit=1", token: "none", status: 401, code: "unauthorized"},
}

// Every malformed request gets its exact status, code and a message naming
// the part at fault, and changes no thread: the paused ones (p, q), the
// completed one (c) and one that does not exist (new).
func TestMalformedCorpus(t *testing.T) {
	if len(corpus) < 50 {
		t.Fatalf("the corpus has %d entries, want at least 50", len(corpus))
	}
	e := authed(t, map[string]any{"max_body_bytes": 65536})
	p := e.paused("p")
	q := e.invoke(runBody("q", "what have I selected?"))
	if q.Status != "interrupted" || len(q.RemoteToolCalls) != 1 || q.RemoteToolCalls[0].ID == p {
		t.Fatalf("thread q: %+v (its call must differ from p's %s)", q, p)
	}
	c := e.invoke(runBody("c", "hello"))
	if c.Status != "completed" {
		t.Fatalf("thread c: %+v", c)
	}
	var server string
	for _, m := range e.thread("p").Messages {
		for _, call := range m.ToolCalls() {
			if call.Name == "calculator" {
				server = call.ID
			}
		}
	}
	fill := strings.NewReplacer("{P}", p, "{Q}", q.RemoteToolCalls[0].ID, "{S}", server, "{CID}", c.Messages[0].ID)
	threads := []string{"p", "q", "c", "new"}
	snapshot := func() []string {
		var out []string
		for _, id := range threads {
			out = append(out, e.state(id))
		}
		return out
	}
	before := snapshot()
	m0 := e.metrics()
	names := map[string]bool{}
	for _, m := range corpus {
		if names[m.name] {
			t.Fatalf("two entries are named %q", m.name)
		}
		names[m.name] = true
		t.Run(m.name, func(t *testing.T) {
			body := m.body
			if m.file != "" {
				raw, err := os.ReadFile(filepath.Join("testdata", "malformed", m.file))
				if err != nil {
					t.Fatal(err)
				}
				body = string(raw)
			}
			body = fill.Replace(body)
			path := m.path
			if path == "" {
				path = "/v1/graph/invoke"
			}
			var opts []opt
			switch m.token {
			case "":
			case "none":
				opts = append(opts, withToken(""))
			default:
				opts = append(opts, withToken(m.token))
			}
			var want []string
			for _, w := range m.want {
				want = append(want, fill.Replace(w))
			}
			method := m.method
			if method == "" {
				method = "POST"
			}
			var send any = body
			if method == "GET" {
				send = nil
			}
			b := errorOf(t, e.do(method, fill.Replace(path), send, opts...), m.status, m.code, want...)
			var ids []string
			for _, id := range m.ids {
				ids = append(ids, fill.Replace(id))
			}
			if !reflect.DeepEqual(b.Error.CallIDs, ids) {
				t.Fatalf("call_ids %v, want %v", b.Error.CallIDs, ids)
			}
			if after := snapshot(); !reflect.DeepEqual(after, before) {
				t.Fatalf("the request changed thread state:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
	// Refusals count as such, and nothing ran.
	m1 := e.metrics()
	if d := delta(m0, m1, runsCompleted, runsInterrupted, pauses, resumes, builtinCalls); d[runsCompleted]+d[runsInterrupted]+d[pauses]+d[resumes]+d[builtinCalls] != 0 {
		t.Fatalf("malformed requests ran something: %v", d)
	}
	if m1[runsRefused]-m0[runsRefused] == 0 {
		t.Fatalf("no refused run was counted")
	}
}
