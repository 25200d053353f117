package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/model/openai"
	"github.com/tenxgraph/tenxgraph/host/model/openai/openaitest"
	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

var ctx = context.Background()

func newModel(t *testing.T, srv *openaitest.Server, edit ...func(*openai.Config)) *openai.Model {
	t.Helper()
	cfg := openai.Config{Model: "test-model", BaseURL: srv.URL, MaxRetries: 2}
	for _, e := range edit {
		e(&cfg)
	}
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func userReq(text string, tools ...sdk.ToolSpec) model.Request {
	return model.Request{Messages: []message.Message{message.Text(message.RoleUser, text)}, Tools: tools}
}

// deltas collects what OnDelta gets.
type deltas struct {
	mu  sync.Mutex
	got []string
}

func (d *deltas) on(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, s)
}

func streaming(req model.Request, d *deltas) model.Request {
	req.OnDelta = d.on
	return req
}

var (
	addTool = sdk.ToolSpec{Name: "add", Description: "Add two numbers.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`)}
	clipboardTool = sdk.ToolSpec{Name: "read_clipboard", Description: "Read the current clipboard text.",
		Parameters: json.RawMessage(`{"type":"object","properties":{},"required":[]}`)}
)

// both runs f once without streaming and once with.
func both(t *testing.T, f func(t *testing.T, stream bool)) {
	t.Run("plain", func(t *testing.T) { f(t, false) })
	t.Run("stream", func(t *testing.T) { f(t, true) })
}

func generate(t *testing.T, m *openai.Model, req model.Request, stream bool) (model.Response, error) {
	t.Helper()
	if stream {
		req.OnDelta = func(string) {}
	}
	return m.Generate(ctx, req)
}

func TestPlainText(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Reply{Text: "Hello there.", Usage: &openaitest.Usage{PromptTokens: 12, CompletionTokens: 3}})
	resp, err := newModel(t, srv).Generate(ctx, userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Message.Text(); got != "Hello there." || resp.Message.Role != message.RoleAssistant {
		t.Fatalf("message %+v", resp.Message)
	}
	if resp.Usage != (model.Usage{InputTokens: 12, OutputTokens: 3}) {
		t.Fatalf("usage %+v, want 12 in and 3 out", resp.Usage)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Stream || r.IncludeUsage || r.Model != "test-model" || r.ParallelToolCalls != nil || len(r.Tools) != 0 {
		t.Fatalf("request: stream %v, include_usage %v, model %q, parallel %v, tools %v", r.Stream, r.IncludeUsage, r.Model, r.ParallelToolCalls, r.Tools)
	}
	if len(r.Messages) != 1 || r.Messages[0].Role != "user" || r.Messages[0].Content != "hi" {
		t.Fatalf("messages %+v", r.Messages)
	}
	if h := r.Header.Get("Authorization"); h != "" {
		t.Fatalf("Authorization %q sent without a key", h)
	}
}

func TestStreamingText(t *testing.T) {
	const text = "Streaming works, one small piece at a time — even ünïcode."
	srv := openaitest.NewServer(t, openaitest.Reply{Text: text, Split: 4, Usage: &openaitest.Usage{PromptTokens: 20, CompletionTokens: 14}})
	var d deltas
	resp, err := newModel(t, srv).Generate(ctx, streaming(userReq("stream please"), &d))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Message.Text(); got != text {
		t.Fatalf("text %q, want %q", got, text)
	}
	if len(d.got) < 10 || strings.Join(d.got, "") != text {
		t.Fatalf("deltas %q: want the text in many pieces", d.got)
	}
	if resp.Usage != (model.Usage{InputTokens: 20, OutputTokens: 14}) {
		t.Fatalf("usage %+v", resp.Usage)
	}
	r := srv.Requests()[0]
	if !r.Stream || !r.IncludeUsage {
		t.Fatalf("stream %v include_usage %v, want both", r.Stream, r.IncludeUsage)
	}
	if a := r.Header.Get("Accept"); a != "text/event-stream" {
		t.Fatalf("Accept %q", a)
	}
}

func wantCalls(t *testing.T, msg message.Message, want ...message.ToolCallBlock) {
	t.Helper()
	got := msg.ToolCalls()
	if len(got) != len(want) {
		t.Fatalf("%d tool calls %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Name != want[i].Name || string(got[i].Arguments) != string(want[i].Arguments) {
			t.Fatalf("call %d: got {%s %s %s}, want {%s %s %s}", i, got[i].ID, got[i].Name, got[i].Arguments, want[i].ID, want[i].Name, want[i].Arguments)
		}
	}
}

func call(id, name, args string) message.ToolCallBlock {
	return message.ToolCallBlock{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

func TestParallelToolCalls(t *testing.T) {
	both(t, func(t *testing.T, stream bool) {
		srv := openaitest.NewServer(t, openaitest.Reply{
			Text:      "Let me check both.",
			ToolCalls: []openaitest.ToolCall{openaitest.Call("call_a", "add", `{"a": 2, "b": 3}`), openaitest.Call("call_b", "read_clipboard", `{}`)},
			Split:     3, Packed: true,
		})
		resp, err := generate(t, newModel(t, srv), userReq("add and read", addTool, clipboardTool), stream)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Message.Text() != "Let me check both." {
			t.Fatalf("text %q", resp.Message.Text())
		}
		wantCalls(t, resp.Message, call("call_a", "add", `{"a":2,"b":3}`), call("call_b", "read_clipboard", `{}`))
		if _, ok := resp.Message.Content[0].(message.TextBlock); !ok {
			t.Fatalf("text is not first: %+v", resp.Message.Content)
		}

		r := srv.Requests()[0]
		if r.ParallelToolCalls == nil || !*r.ParallelToolCalls {
			t.Fatalf("parallel_tool_calls %v, want true", r.ParallelToolCalls)
		}
		if len(r.Tools) != 2 || r.Tools[0].Name != "add" || r.Tools[0].Description != "Add two numbers." || r.Tools[1].Name != "read_clipboard" {
			t.Fatalf("tools %+v", r.Tools)
		}
		var schema map[string]any
		if err := json.Unmarshal(r.Tools[0].Parameters, &schema); err != nil || schema["additionalProperties"] != false || schema["type"] != "object" {
			t.Fatalf("add parameters %s", r.Tools[0].Parameters)
		}
	})
}

func TestArgumentsSplitAcrossChunks(t *testing.T) {
	const args = `{"city":"Zürich","days":[1,2,3],"note":"a \"quoted\" word"}`
	srv := openaitest.NewServer(t, openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("call_1", "weather", args)}, Split: 1})
	var d deltas
	resp, err := newModel(t, srv).Generate(ctx, streaming(userReq("weather"), &d))
	if err != nil {
		t.Fatal(err)
	}
	wantCalls(t, resp.Message, call("call_1", "weather", args))
	if len(d.got) != 0 {
		t.Fatalf("argument text leaked into OnDelta: %q", d.got)
	}
}

func TestLateIDs(t *testing.T) {
	for _, packed := range []bool{false, true} {
		srv := openaitest.NewServer(t, openaitest.Reply{
			ToolCalls: []openaitest.ToolCall{openaitest.Call("call_x", "add", `{"a":1,"b":2}`), openaitest.Call("call_y", "add", `{"a":3,"b":4}`)},
			Split:     2, LateIDs: true, Packed: packed,
		})
		var d deltas
		resp, err := newModel(t, srv).Generate(ctx, streaming(userReq("two sums", addTool), &d))
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, resp.Message, call("call_x", "add", `{"a":1,"b":2}`), call("call_y", "add", `{"a":3,"b":4}`))
	}
}

// Hand-written streams in shapes real servers send: several whole calls in
// one chunk, the name after the id, calls without an index, the name
// repeated in every delta, arguments sent as an object.
func TestStreamShapes(t *testing.T) {
	head := `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":`
	tail := `,"finish_reason":null}]}`
	finish := `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`
	cases := []struct {
		name   string
		deltas []string
		want   []message.ToolCallBlock
	}{
		{"two whole calls in one chunk", []string{
			`{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"add","arguments":"{\"a\":1,\"b\":1}"}},{"index":1,"id":"c1","type":"function","function":{"name":"read_clipboard","arguments":"{}"}}]}`,
		}, []message.ToolCallBlock{call("c0", "add", `{"a":1,"b":1}`), call("c1", "read_clipboard", `{}`)}},
		{"name after id, then arguments", []string{
			`{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"arguments":""}}]}`,
			`{"tool_calls":[{"index":0,"function":{"name":"add"}}]}`,
			`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1,"}}]}`,
			`{"tool_calls":[{"index":0,"function":{"arguments":"\"b\":2}"}}]}`,
		}, []message.ToolCallBlock{call("c0", "add", `{"a":1,"b":2}`)}},
		{"no index, one whole call per delta", []string{
			`{"tool_calls":[{"id":"g0","type":"function","function":{"name":"add","arguments":"{\"a\":1,\"b\":2}"}}]}`,
			`{"tool_calls":[{"id":"g1","type":"function","function":{"name":"read_clipboard","arguments":"{}"}}]}`,
		}, []message.ToolCallBlock{call("g0", "add", `{"a":1,"b":2}`), call("g1", "read_clipboard", `{}`)}},
		{"name repeated in every delta, id in every delta", []string{
			`{"tool_calls":[{"index":0,"id":"r0","type":"function","function":{"name":"add","arguments":"{\"a\":"}}]}`,
			`{"tool_calls":[{"index":0,"id":"r0","type":"function","function":{"name":"add","arguments":"5,\"b\":6}"}}]}`,
		}, []message.ToolCallBlock{call("r0", "add", `{"a":5,"b":6}`)}},
		{"arguments as an object", []string{
			`{"tool_calls":[{"index":0,"id":"o0","type":"function","function":{"name":"add","arguments":{"a":7,"b":8}}}]}`,
		}, []message.ToolCallBlock{call("o0", "add", `{"a":7,"b":8}`)}},
		{"second call first", []string{
			`{"tool_calls":[{"index":1,"id":"s1","type":"function","function":{"name":"read_clipboard","arguments":"{}"}}]}`,
			`{"tool_calls":[{"index":0,"id":"s0","type":"function","function":{"name":"add","arguments":"{}"}}]}`,
		}, []message.ToolCallBlock{call("s0", "add", `{}`), call("s1", "read_clipboard", `{}`)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var chunks []string
			for _, d := range c.deltas {
				chunks = append(chunks, head+d+tail)
			}
			chunks = append(chunks, finish, "[DONE]")
			srv := openaitest.NewServer(t, openaitest.Reply{Chunks: chunks})
			var d deltas
			resp, err := newModel(t, srv).Generate(ctx, streaming(userReq("go"), &d))
			if err != nil {
				t.Fatal(err)
			}
			wantCalls(t, resp.Message, c.want...)
		})
	}
}

func TestRateLimitThenSuccessHonoursRetryAfter(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.RateLimited("1"), openaitest.Text("ok"))
	resp, err := newModel(t, srv).Generate(ctx, userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text() != "ok" {
		t.Fatalf("text %q", resp.Message.Text())
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	// Retry-After: 1 asks for a full second; the SDK's own first backoff
	// is at most 0.5s, so a shorter gap means the header was ignored. A
	// timer never fires early, so the lower bound cannot flake.
	if gap := reqs[1].Time.Sub(reqs[0].Time); gap < time.Second || gap > 30*time.Second {
		t.Fatalf("retried after %s, want Retry-After's 1s", gap)
	}
	if n := reqs[1].Header.Get("X-Stainless-Retry-Count"); n != "1" {
		t.Fatalf("retry count header %q, want 1", n)
	}
}

func TestRateLimitedStreamRetried(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.RateLimited("0"), openaitest.Reply{Text: "streamed after a 429", Split: 5})
	var d deltas
	resp, err := newModel(t, srv).Generate(ctx, streaming(userReq("hi"), &d))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text() != "streamed after a 429" || strings.Join(d.got, "") != "streamed after a 429" {
		t.Fatalf("text %q deltas %q", resp.Message.Text(), d.got)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}

func TestServerErrorRetried(t *testing.T) {
	both(t, func(t *testing.T, stream bool) {
		srv := openaitest.NewServer(t, openaitest.ServerError(), openaitest.Status(http.StatusBadGateway, "bad gateway"), openaitest.Text("ok"))
		resp, err := generate(t, newModel(t, srv), userReq("hi"), stream)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Message.Text() != "ok" || len(srv.Requests()) != 3 {
			t.Fatalf("text %q after %d requests, want ok after 3", resp.Message.Text(), len(srv.Requests()))
		}
	})
}

func TestRetriesRunOut(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.ServerError(), openaitest.ServerError())
	_, err := newModel(t, srv, func(c *openai.Config) { c.MaxRetries = 1 }).Generate(ctx, userReq("hi"))
	if err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "after 2 attempts") || !strings.Contains(err.Error(), "The server had an error") {
		t.Fatalf("error %v: want the 500, its message and the attempt count", err)
	}
}

func TestNoRetryOnClientErrors(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Status(http.StatusBadRequest, "Invalid value for 'model'."))
	_, err := newModel(t, srv).Generate(ctx, userReq("hi"))
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "Invalid value for 'model'.") {
		t.Fatalf("error %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("a 400 was retried: %d requests", n)
	}
}

func TestMaxRetriesZero(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.RateLimited("1"))
	_, err := newModel(t, srv, func(c *openai.Config) { c.MaxRetries = 0 }).Generate(ctx, userReq("hi"))
	if err == nil || !strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), "rate limiting") {
		t.Fatalf("error %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests with retries off", n)
	}
}

func TestMalformedChunk(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Malformed())
	var d deltas
	_, err := newModel(t, srv).Generate(ctx, streaming(userReq("hi"), &d))
	if err == nil || !strings.Contains(err.Error(), "malformed stream chunk 2") || !strings.Contains(err.Error(), `\"lo\"`) {
		t.Fatalf("error %v: want it to name the malformed chunk and show it", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("a broken stream was retried: %d requests", n)
	}
}

func TestMalformedBody(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Malformed())
	_, err := newModel(t, srv).Generate(ctx, userReq("hi"))
	if err == nil || !strings.Contains(err.Error(), "openai:") {
		t.Fatalf("error %v", err)
	}
}

func TestMalformedToolCallDelta(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Reply{Chunks: []string{
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"add","arguments":42}}]}}]}`,
	}})
	_, err := newModel(t, srv).Generate(ctx, streaming(userReq("hi"), &deltas{}))
	if err == nil || !strings.Contains(err.Error(), "malformed stream chunk 1: tool_calls[0]: function.arguments") {
		t.Fatalf("error %v", err)
	}
}

func TestErrorInStream(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Reply{Chunks: []string{
		`{"choices":[{"index":0,"delta":{"content":"partial"}}]}`,
		`{"error":{"message":"The model is overloaded.","type":"server_error"}}`,
	}})
	_, err := newModel(t, srv).Generate(ctx, streaming(userReq("hi"), &deltas{}))
	if err == nil || !strings.Contains(err.Error(), "The model is overloaded.") || !strings.Contains(err.Error(), "middle of the stream") {
		t.Fatalf("error %v", err)
	}
}

func TestStreamCutOff(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Reply{Text: "this will not finish", Split: 4, StopAfter: 3})
	_, err := newModel(t, srv).Generate(ctx, streaming(userReq("hi"), &deltas{}))
	if err == nil || !strings.Contains(err.Error(), "ended before the model finished") {
		t.Fatalf("error %v", err)
	}
}

func TestStreamWithoutDoneIsAccepted(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Reply{Text: "fine", NoDone: true})
	resp, err := newModel(t, srv).Generate(ctx, streaming(userReq("hi"), &deltas{}))
	if err != nil || resp.Message.Text() != "fine" {
		t.Fatalf("%q, %v", resp.Message.Text(), err)
	}
}

func TestServerIgnoringStream(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Reply{Body: `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`})
	var d deltas
	resp, err := newModel(t, srv).Generate(ctx, streaming(userReq("hi"), &d))
	if err != nil || resp.Message.Text() != "whole" || strings.Join(d.got, "") != "whole" || resp.Usage.InputTokens != 1 {
		t.Fatalf("%+v %q %v", resp, d.got, err)
	}
}

func TestLengthMidToolCall(t *testing.T) {
	both(t, func(t *testing.T, stream bool) {
		srv := openaitest.NewServer(t, openaitest.Reply{
			ToolCalls:    []openaitest.ToolCall{openaitest.Call("call_1", "add", `{"a": 1, "b`)},
			FinishReason: "length", Split: 3,
		})
		_, err := generate(t, newModel(t, srv), userReq("hi", addTool), stream)
		if err == nil || !strings.Contains(err.Error(), `finish_reason "length"`) || !strings.Contains(err.Error(), `"add"`) {
			t.Fatalf("error %v", err)
		}
	})
}

func TestLengthInTextIsAnAnswer(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Reply{Text: "a long answer that got cu", FinishReason: "length"})
	resp, err := newModel(t, srv).Generate(ctx, streaming(userReq("hi"), &deltas{}))
	if err != nil || resp.Message.Text() != "a long answer that got cu" {
		t.Fatalf("%q %v", resp.Message.Text(), err)
	}
}

// deepArgs nest one level deeper than strictjson reads.
var deepArgs = `{"a": ` + strings.Repeat("[", strictjson.MaxDepth) + strings.Repeat("]", strictjson.MaxDepth) + `}`

// invalidArgs is text kept under InvalidArgumentsKey.
func invalidArgs(text string) string {
	raw, _ := json.Marshal(map[string]string{message.InvalidArgumentsKey: text})
	return string(raw)
}

func TestInvalidJSONArgumentsAreKept(t *testing.T) {
	both(t, func(t *testing.T, stream bool) {
		srv := openaitest.NewServer(t, openaitest.Reply{ToolCalls: []openaitest.ToolCall{
			openaitest.Call("c1", "add", `{"a": 2, "b": `),
			openaitest.Call("c2", "add", `[1, 2]`),
			openaitest.Call("c3", "read_clipboard", ``),
			openaitest.Call("c4", "add", `{"a": 1, "a": 2}`),
			openaitest.Call("c5", "add", deepArgs),
		}, Split: 4})
		resp, err := generate(t, newModel(t, srv), userReq("hi", addTool, clipboardTool), stream)
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, resp.Message,
			call("c1", "add", `{"_invalid_arguments":"{\"a\": 2, \"b\": "}`),
			call("c2", "add", `{"_invalid_arguments":"[1, 2]"}`),
			call("c3", "read_clipboard", `{}`),
			// Valid JSON that the store could not read back.
			call("c4", "add", `{"_invalid_arguments":"{\"a\": 1, \"a\": 2}"}`),
			call("c5", "add", invalidArgs(deepArgs)))
		// The thread stays storable: the message round-trips through JSON.
		raw, err := json.Marshal(resp.Message)
		if err != nil {
			t.Fatal(err)
		}
		var back message.Message
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("message does not read back: %v", err)
		}
	})
}

// The thread as the graph holds it: a server result, a remote call marker,
// an error result in the first tool message, and the remote result arriving
// later in its own message. The model must get one tool message per call,
// in call order, with the remote result moved up to its call.
func TestHistoryMapping(t *testing.T) {
	thread := []message.Message{
		message.Text(message.RoleSystem, "Be brief."),
		message.Text(message.RoleUser, "add, read and fail"),
		{Role: message.RoleAssistant, Content: []message.Block{
			message.TextBlock{Text: "On it."},
			call("c1", "add", `{"a":2,"b":3}`),
			call("c2", "read_clipboard", `{}`),
			call("c3", "explode", `{"how":"loudly"}`),
		}},
		{Role: message.RoleTool, Content: []message.Block{
			message.ToolResultBlock{ToolCallID: "c1", Content: json.RawMessage(`{"sum": 5}`)},
			message.RemoteToolCallBlock{ID: "c2", Name: "read_clipboard", Arguments: json.RawMessage(`{}`), Node: "tools"},
			message.ToolResultBlock{ToolCallID: "c3", Content: json.RawMessage(`"it blew up"`), IsError: true},
		}},
		{Role: message.RoleTool, Content: []message.Block{
			message.ToolResultBlock{ToolCallID: "c2", Content: json.RawMessage(`"clipboard text"`)},
		}},
		{Role: message.RoleAssistant, Content: []message.Block{message.TextBlock{Text: "Done."}}},
		message.Text(message.RoleUser, "and again?"),
	}
	for name, msgs := range map[string][]message.Message{"raw thread": thread, "model-shaped": message.ForModel(thread)} {
		t.Run(name, func(t *testing.T) {
			srv := openaitest.NewServer(t, openaitest.Text("ok"))
			if _, err := newModel(t, srv).Generate(ctx, model.Request{Messages: msgs, Tools: []sdk.ToolSpec{addTool}}); err != nil {
				t.Fatal(err)
			}
			got := srv.Requests()[0].Messages
			want := []openaitest.Message{
				{Role: "system", Content: "Be brief."},
				{Role: "user", Content: "add, read and fail"},
				{Role: "assistant", Content: "On it.", ToolCalls: []openaitest.ToolCall{
					{ID: "c1", Name: "add", Arguments: `{"a":2,"b":3}`},
					{ID: "c2", Name: "read_clipboard", Arguments: `{}`},
					{ID: "c3", Name: "explode", Arguments: `{"how":"loudly"}`},
				}},
				{Role: "tool", ToolCallID: "c1", Content: `{"sum":5}`},
				{Role: "tool", ToolCallID: "c2", Content: "clipboard text"},
				{Role: "tool", ToolCallID: "c3", Content: "Error: it blew up"},
				{Role: "assistant", Content: "Done."},
				{Role: "user", Content: "and again?"},
			}
			if len(got) != len(want) {
				t.Fatalf("%d messages, want %d: %+v", len(got), len(want), got)
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.Role != w.Role || g.Content != w.Content || g.ToolCallID != w.ToolCallID || len(g.ToolCalls) != len(w.ToolCalls) {
					t.Fatalf("messages[%d] = %+v, want %+v", i, g, w)
				}
				for j := range w.ToolCalls {
					if g.ToolCalls[j] != w.ToolCalls[j] {
						t.Fatalf("messages[%d].tool_calls[%d] = %+v, want %+v", i, j, g.ToolCalls[j], w.ToolCalls[j])
					}
				}
			}
		})
	}
}

func TestToolCallOnlyAssistantHasNullContent(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Text("ok"))
	msgs := []message.Message{
		message.Text(message.RoleUser, "read"),
		{Role: message.RoleAssistant, Content: []message.Block{call("c1", "read_clipboard", `{}`)}},
		{Role: message.RoleTool, Content: []message.Block{message.ToolResultBlock{ToolCallID: "c1", Content: json.RawMessage(`{"text":"hi"}`)}}},
	}
	if _, err := newModel(t, srv).Generate(ctx, model.Request{Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0].Messages
	if !got[1].ContentNull || got[2].Content != `{"text":"hi"}` {
		t.Fatalf("assistant %+v tool %+v", got[1], got[2])
	}
}

func TestToolParametersKeepNumbers(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Text("ok"))
	big := sdk.ToolSpec{Name: "big", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","maximum":9007199254740993}}}`)}
	noParams := sdk.ToolSpec{Name: "none"}
	if _, err := newModel(t, srv).Generate(ctx, userReq("hi", big, noParams)); err != nil {
		t.Fatal(err)
	}
	tools := srv.Requests()[0].Tools
	if !strings.Contains(string(tools[0].Parameters), "9007199254740993") {
		t.Fatalf("parameters %s lost the number", tools[0].Parameters)
	}
	if tools[0].Description != "" {
		t.Fatalf("empty description sent as %q", tools[0].Description)
	}
	if string(tools[1].Parameters) != `{"properties":{},"type":"object"}` {
		t.Fatalf("a tool without parameters got %s", tools[1].Parameters)
	}
}

func TestTimeout(t *testing.T) {
	t.Run("gives up", func(t *testing.T) {
		srv := openaitest.NewServer(t, openaitest.Reply{Text: "too late", Delay: 5 * time.Second})
		m := newModel(t, srv, func(c *openai.Config) { c.Timeout, c.MaxRetries = 100*time.Millisecond, 0 })
		start := time.Now()
		_, err := m.Generate(ctx, userReq("hi"))
		if err == nil || !strings.Contains(err.Error(), "within 100ms (model.timeout)") || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error %v", err)
		}
		if time.Since(start) > 4*time.Second {
			t.Fatal("the timeout did not cut the request short")
		}
	})
	t.Run("a timed-out attempt is retried", func(t *testing.T) {
		srv := openaitest.NewServer(t, openaitest.Reply{Text: "too late", Delay: 5 * time.Second}, openaitest.Text("in time"))
		m := newModel(t, srv, func(c *openai.Config) { c.Timeout = 300 * time.Millisecond })
		resp, err := m.Generate(ctx, streaming(userReq("hi"), &deltas{}))
		if err != nil || resp.Message.Text() != "in time" {
			t.Fatalf("%q %v", resp.Message.Text(), err)
		}
	})
	t.Run("the wait before a retry is not charged to the attempt", func(t *testing.T) {
		// The first attempt takes most of the timeout and asks for a wait
		// longer than the timeout; the retry still happens.
		slow429 := openaitest.RateLimited("1")
		slow429.Delay = 200 * time.Millisecond
		srv := openaitest.NewServer(t, slow429, openaitest.Text("after the wait"))
		m := newModel(t, srv, func(c *openai.Config) { c.Timeout = 400 * time.Millisecond })
		resp, err := m.Generate(ctx, userReq("hi"))
		if err != nil || resp.Message.Text() != "after the wait" {
			t.Fatalf("%q %v", resp.Message.Text(), err)
		}
	})
	t.Run("bounds the whole stream", func(t *testing.T) {
		// Chunks keep coming, but slower than the timeout allows in total.
		srv := openaitest.NewServer(t)
		srv.Handle(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Text: "slow"} })
		slow := &slowStream{chunks: 20, every: 50 * time.Millisecond}
		m := newModel(t, srv, func(c *openai.Config) {
			c.Timeout, c.MaxRetries = 300*time.Millisecond, 0
			c.HTTPClient = &http.Client{Transport: slow}
		})
		_, err := m.Generate(ctx, streaming(userReq("hi"), &deltas{}))
		if err == nil || !strings.Contains(err.Error(), "model.timeout") {
			t.Fatalf("error %v", err)
		}
	})
}

func TestCancelledMidStream(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.Handle(func(openaitest.Request) openaitest.Reply { return openaitest.Reply{Text: "x"} })
	m := newModel(t, srv, func(c *openai.Config) {
		c.HTTPClient = &http.Client{Transport: &slowStream{chunks: 100, every: 20 * time.Millisecond}}
	})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req := userReq("hi")
	req.OnDelta = func(string) { cancel() }
	_, err := m.Generate(cctx, req)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

func TestErrorHints(t *testing.T) {
	t.Run("401 without a key", func(t *testing.T) {
		srv := openaitest.NewServer(t)
		srv.RequireKey("sk-right")
		_, err := newModel(t, srv).Generate(ctx, userReq("hi"))
		if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "No API key was sent: set OPENAI_API_KEY") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("401 with a wrong key", func(t *testing.T) {
		srv := openaitest.NewServer(t)
		srv.RequireKey("sk-right")
		_, err := newModel(t, srv, func(c *openai.Config) { c.APIKey = "sk-wrong" }).Generate(ctx, userReq("hi"))
		if err == nil || !strings.Contains(err.Error(), "Check the API key") || strings.Contains(err.Error(), "sk-wrong") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("404", func(t *testing.T) {
		srv := openaitest.NewServer(t, openaitest.Status(http.StatusNotFound, "model 'nope' not found"))
		_, err := newModel(t, srv).Generate(ctx, userReq("hi"))
		if err == nil || !strings.Contains(err.Error(), "model 'nope' not found") || !strings.Contains(err.Error(), "/v1") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		m, err := openai.New(openai.Config{Model: "m", BaseURL: "http://127.0.0.1:1/v1"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Generate(ctx, userReq("hi"))
		if err == nil || !strings.Contains(err.Error(), "connection refused; is the server running") {
			t.Fatalf("error %v", err)
		}
	})
}

func TestKeySent(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Text("ok"))
	srv.RequireKey("sk-test")
	resp, err := newModel(t, srv, func(c *openai.Config) { c.APIKey = "sk-test" }).Generate(ctx, userReq("hi"))
	if err != nil || resp.Message.Text() != "ok" {
		t.Fatalf("%q %v", resp.Message.Text(), err)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, c := range []openai.Config{
		{},
		{Model: "m", BaseURL: "ftp://example.com"},
		{Model: "m", MaxRetries: -1},
		{Model: "m", Timeout: -time.Second},
	} {
		if _, err := openai.New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
	m, err := openai.New(openai.Config{Model: "gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.String(); got != "openai-compatible model gpt-4o-mini at https://api.openai.com/v1" {
		t.Fatalf("String %q", got)
	}
}

// Servers word their errors in several shapes; each reaches the error
// message with its status.
func TestErrorBodies(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"proper OpenAI shape","type":"invalid_request_error"}}`:                 "proper OpenAI shape",
		`{"error":"model \"llama9\" not found, try pulling it first"}`:                               `model "llama9" not found, try pulling it first`,
		`{"object":"error","message":"The model does not exist.","type":"NotFoundError","code":404}`: "The model does not exist",
		`{"detail":"Not Found"}`:                               "Not Found",
		"<html><body>\n<h1>404 Not Found</h1>\n</body></html>": "<html><body> <h1>404 Not Found</h1> </body></html>",
	} {
		srv := openaitest.NewServer(t, openaitest.Reply{Status: http.StatusNotFound, Body: body})
		_, err := newModel(t, srv).Generate(ctx, userReq("hi"))
		if err == nil || !strings.Contains(err.Error(), "answered 404 Not Found: "+want) || !strings.Contains(err.Error(), "Check the model name") {
			t.Errorf("body %s: error %v", body, err)
		}
	}
}

// TestWholeAnswerShapes covers what a server may put in a non-streamed
// answer: arguments as a string of JSON or as an object, a refusal in place
// of content, no usage; and shapes that are errors rather than an empty
// answer.
func TestWholeAnswerShapes(t *testing.T) {
	answer := func(message string) string {
		return `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":` + message + `,"finish_reason":"stop"}]}`
	}
	t.Run("arguments", func(t *testing.T) {
		srv := openaitest.NewServer(t, openaitest.Reply{Body: answer(`{"role":"assistant","content":null,"tool_calls":[` +
			`{"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\": 1, \"b\": 2}"}},` +
			`{"id":"c2","type":"function","function":{"name":"add","arguments":{"a": 3, "b": 4}}},` +
			`{"id":"c3","function":{"name":"read_clipboard","arguments":null}}]}`)})
		resp, err := newModel(t, srv).Generate(ctx, userReq("hi", addTool, clipboardTool))
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, resp.Message, call("c1", "add", `{"a":1,"b":2}`), call("c2", "add", `{"a":3,"b":4}`), call("c3", "read_clipboard", `{}`))
		if resp.Message.Text() != "" || resp.Usage != (model.Usage{}) {
			t.Fatalf("text %q, usage %+v: want none", resp.Message.Text(), resp.Usage)
		}
	})
	t.Run("refusal", func(t *testing.T) {
		srv := openaitest.NewServer(t, openaitest.Reply{Body: answer(`{"role":"assistant","content":null,"refusal":"I can't help with that."}`)})
		resp, err := newModel(t, srv).Generate(ctx, userReq("hi"))
		if err != nil || resp.Message.Text() != "I can't help with that." {
			t.Fatalf("%q, %v", resp.Message.Text(), err)
		}
	})
	for name, c := range map[string]struct{ body, want string }{
		"no choices":           {`{"id":"c","object":"chat.completion","choices":[]}`, "no choices"},
		"choices not a list":   {`{"id":"c","choices":{"message":{"content":"hi"}}}`, "not a chat completion"},
		"content not a string": {answer(`{"role":"assistant","content":42}`), "not a chat completion"},
		"arguments a number":   {answer(`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"add","arguments":42}}]}`), "tool_calls[0]: function.arguments is"},
		"not a function":       {answer(`{"role":"assistant","tool_calls":[{"id":"c1","type":"custom","function":{"name":"add","arguments":"{}"}}]}`), `type "custom"`},
		"no name":              {answer(`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"arguments":"{}"}}]}`), "no function name"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := openaitest.NewServer(t, openaitest.Reply{Body: c.body})
			resp, err := newModel(t, srv).Generate(ctx, userReq("hi", addTool))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("answer %s: got %+v, %v; want an error saying %q", c.body, resp, err, c.want)
			}
		})
	}
}
