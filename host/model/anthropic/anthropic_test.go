package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/model/anthropic"
	"github.com/tenxgraph/tenxgraph/host/model/anthropic/anthropictest"
	"github.com/tenxgraph/tenxgraph/sdk"
)

var ctx = context.Background()

func newModel(t *testing.T, srv *anthropictest.Server, edit ...func(*anthropic.Config)) *anthropic.Model {
	t.Helper()
	cfg := anthropic.Config{Model: "claude-test", BaseURL: srv.URL, MaxRetries: 2}
	for _, e := range edit {
		e(&cfg)
	}
	m, err := anthropic.New(cfg)
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

// Without OnDelta the call is one plain JSON round trip; with a max_tokens
// too large for one, it is streamed all the same.
func TestPlainUnlessLong(t *testing.T) {
	srv := anthropictest.NewServer(t, anthropictest.Reply{Text: "Hello there.", Usage: &anthropictest.Usage{InputTokens: 12, OutputTokens: 3}}, anthropictest.Text("long"))
	resp, err := newModel(t, srv).Generate(ctx, userReq("hi"))
	if err != nil || resp.Message.Text() != "Hello there." || resp.Usage != (model.Usage{InputTokens: 12, OutputTokens: 3}) {
		t.Fatalf("%+v %v", resp, err)
	}
	resp, err = newModel(t, srv, func(c *anthropic.Config) { c.MaxTokens = 64000 }).Generate(ctx, userReq("hi"))
	if err != nil || resp.Message.Text() != "long" {
		t.Fatalf("%+v %v", resp, err)
	}
	if r := srv.Requests(); r[0].Stream || r[0].Header.Get("Accept") != "application/json" || !r[1].Stream || r[1].MaxTokens != 64000 {
		t.Fatalf("streamed: %v then %v (max_tokens %d)", r[0].Stream, r[1].Stream, r[1].MaxTokens)
	}
}

func TestStreamingText(t *testing.T) {
	const text = "Streaming works, one small piece at a time — even ünïcode."
	srv := anthropictest.NewServer(t, anthropictest.Reply{Text: text, Split: 4, Ping: true,
		Usage: &anthropictest.Usage{InputTokens: 20, OutputTokens: 14, CacheCreationInputTokens: 5, CacheReadInputTokens: 100}})
	var d deltas
	resp, err := newModel(t, srv).Generate(ctx, streaming(userReq("stream please"), &d))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text() != text || strings.Join(d.got, "") != text || len(d.got) < 10 {
		t.Fatalf("text %q, %d deltas %q", resp.Message.Text(), len(d.got), d.got)
	}
	want := model.Usage{InputTokens: 125, OutputTokens: 14, CacheCreationInputTokens: 5, CacheReadInputTokens: 100}
	if resp.Usage != want {
		t.Fatalf("usage %+v, want %+v (the prompt counts its cached part)", resp.Usage, want)
	}
	r := srv.Requests()[0]
	if !r.Stream || r.Model != "claude-test" || r.MaxTokens != anthropic.DefaultMaxTokens || len(r.Tools) != 0 || len(r.System) != 0 {
		t.Fatalf("request %+v", r)
	}
	if len(r.Messages) != 1 || r.Messages[0].Role != "user" || r.Messages[0].Text() != "stream please" {
		t.Fatalf("messages %+v", r.Messages)
	}
	if h := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key"); h != "" {
		t.Fatalf("a key %q sent without one configured", h)
	}
}

// Thinking is neither shown nor kept.
func TestWithoutOnDeltaAndThinking(t *testing.T) {
	srv := anthropictest.NewServer(t, anthropictest.Reply{Thinking: "secret reasoning", Text: "Hello."})
	resp, err := newModel(t, srv).Generate(ctx, userReq("hi"))
	if err != nil || resp.Message.Text() != "Hello." || len(resp.Message.Content) != 1 {
		t.Fatalf("%+v %v", resp.Message, err)
	}
}

func TestToolUses(t *testing.T) {
	srv := anthropictest.NewServer(t, anthropictest.Reply{
		Text:     "Let me check.",
		ToolUses: []anthropictest.ToolUse{anthropictest.Use("toolu_01", "add", `{"a": 2, "b": 3}`), anthropictest.Use("toolu_02", "read_clipboard", ``)},
		Split:    2,
	})
	var d deltas
	resp, err := newModel(t, srv).Generate(ctx, streaming(userReq("add and read", addTool, clipboardTool), &d))
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls()
	if len(calls) != 2 || calls[0].ID != "toolu_01" || calls[0].Name != "add" || string(calls[0].Arguments) != `{"a":2,"b":3}` ||
		calls[1].Name != "read_clipboard" || string(calls[1].Arguments) != `{}` {
		t.Fatalf("calls %+v", calls)
	}
	if resp.Message.Text() != "Let me check." || strings.Join(d.got, "") != "Let me check." {
		t.Fatalf("text %q deltas %q", resp.Message.Text(), d.got)
	}
	tools := srv.Requests()[0].Tools
	if len(tools) != 2 || tools[0].Name != "add" || tools[0].Description != "Add two numbers." || !strings.Contains(string(tools[0].InputSchema), `"required":["a","b"]`) {
		t.Fatalf("tools %+v", tools)
	}
}

// Input that is not a JSON object does not fail the call: it is kept as
// the model's text, for the ToolNode to answer with an error result.
func TestInvalidInputIsKept(t *testing.T) {
	srv := anthropictest.NewServer(t, anthropictest.ToolUses(anthropictest.Use("toolu_1", "add", `{"a": 2, "b": `)))
	resp, err := newModel(t, srv).Generate(ctx, streaming(userReq("add", addTool), &deltas{}))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := message.InvalidArguments(resp.Message.ToolCalls()[0].Arguments)
	if !ok || got != `{"a": 2, "b": ` {
		t.Fatalf("arguments %s", resp.Message.ToolCalls()[0].Arguments)
	}
}

func TestStopReasons(t *testing.T) {
	for name, c := range map[string]struct {
		reply anthropictest.Reply
		want  string // "" for an answer
	}{
		"end_turn":                   {anthropictest.Text("done"), ""},
		"stop_sequence":              {anthropictest.Reply{Text: "up to", StopReason: "stop_sequence"}, ""},
		"max_tokens in text":         {anthropictest.Reply{Text: "a truncated ans", StopReason: "max_tokens"}, ""},
		"max_tokens in a tool call":  {anthropictest.Reply{ToolUses: []anthropictest.ToolUse{anthropictest.Use("toolu_1", "add", `{"a": 2, "b`)}, StopReason: "max_tokens"}, "in the middle of a tool call to \"add\""},
		"max_tokens before anything": {anthropictest.Reply{Thinking: "hmm", StopReason: "max_tokens"}, "before it said anything. Raise model.max_tokens (now 8192)"},
		"refusal":                    {anthropictest.Reply{StopReason: "refusal"}, "declined to answer"},
		"refusal mid call":           {anthropictest.Reply{ToolUses: []anthropictest.ToolUse{anthropictest.Use("toolu_1", "add", `{}`)}, StopReason: "refusal"}, "declined to answer"},
		"context window":             {anthropictest.Reply{ToolUses: []anthropictest.ToolUse{anthropictest.Use("toolu_1", "add", `{"a"`)}, StopReason: "model_context_window_exceeded"}, "context window"},
		"pause_turn with nothing":    {anthropictest.Reply{StopReason: "pause_turn"}, "pause_turn"},
		"refusal after text":         {anthropictest.Reply{Text: "I can't help with that.", StopReason: "refusal"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			srv := anthropictest.NewServer(t, c.reply)
			resp, err := newModel(t, srv).Generate(ctx, userReq("hi", addTool))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("error %v, want an answer", err)
			case c.want == "" && resp.Message.Text() != c.reply.Text:
				t.Fatalf("answer %q, want %q", resp.Message.Text(), c.reply.Text)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %+v, %v; want an error saying %q", resp.Message, err, c.want)
			}
		})
	}
}

func TestStreamShapes(t *testing.T) {
	for name, c := range map[string]struct {
		reply anthropictest.Reply
		want  string // "" for an answer "ok"
	}{
		"no message_stop":       {anthropictest.Reply{Text: "ok", NoStop: true}, ""},
		"JSON instead":          {anthropictest.Reply{Text: "ok", JSON: true}, ""},
		"cut off":               {anthropictest.Reply{Text: "ok", StopAfter: 4}, "before the model finished"},
		"malformed event":       {anthropictest.Malformed(), "malformed stream event 4"},
		"error event":           {anthropictest.Reply{Text: "ok", StreamError: &anthropictest.APIError{Type: "overloaded_error", Message: "Overloaded"}, ErrorAfter: 3}, "in the middle of the stream (event 5): Overloaded (overloaded_error); Anthropic's servers are overloaded"},
		"delta of no block":     {anthropictest.Reply{Events: []anthropictest.Event{{Name: "content_block_delta", Data: `{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}`}}}, "never started"},
		"text delta into a use": {anthropictest.Reply{Events: []anthropictest.Event{{Name: "content_block_start", Data: `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"add","input":{}}}`}, {Name: "content_block_delta", Data: `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`}}}, "a text_delta for content block 0, a tool_use block"},
		"JSON not a message":    {anthropictest.Reply{Body: `{"choices":[]}`}, "not a Messages API message"},
		"no event lines":        {anthropictest.Reply{Events: []anthropictest.Event{{Data: `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`}, {Data: `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`}, {Data: `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}`}}}, ""},
		"unknown events":        {anthropictest.Reply{Events: []anthropictest.Event{{Name: "content_block_start", Data: `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"ok"}}`}, {Name: "something_new", Data: `{"type":"something_new"}`}, {Name: "message_stop", Data: `{"type":"message_stop"}`}}}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			srv := anthropictest.NewServer(t, c.reply)
			resp, err := newModel(t, srv, func(c *anthropic.Config) { c.MaxRetries = 0 }).Generate(ctx, streaming(userReq("hi", addTool), &deltas{}))
			switch {
			case c.want == "" && (err != nil || resp.Message.Text() != "ok"):
				t.Fatalf("%q %v, want the answer ok", resp.Message.Text(), err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %+v, %v; want an error saying %q", resp.Message, err, c.want)
			}
		})
	}
}

// A 529 (overloaded) and a 500 are retried; a 429 after the wait the
// server asks for.
func TestRetries(t *testing.T) {
	t.Run("529 then success", func(t *testing.T) {
		srv := anthropictest.NewServer(t, anthropictest.Overloaded(), anthropictest.ServerError(), anthropictest.Text("finally"))
		resp, err := newModel(t, srv).Generate(ctx, userReq("hi"))
		if err != nil || resp.Message.Text() != "finally" || srv.Served() != 3 {
			t.Fatalf("%q %v after %d requests", resp.Message.Text(), err, srv.Served())
		}
	})
	t.Run("429 honours retry-after", func(t *testing.T) {
		srv := anthropictest.NewServer(t, anthropictest.RateLimited("1"), anthropictest.Text("after the wait"))
		resp, err := newModel(t, srv).Generate(ctx, userReq("hi"))
		if err != nil || resp.Message.Text() != "after the wait" {
			t.Fatalf("%q %v", resp.Message.Text(), err)
		}
		reqs := srv.Requests()
		if gap := reqs[1].Time.Sub(reqs[0].Time); gap < 900*time.Millisecond {
			t.Fatalf("retried after %s, want the 1s the server asked for", gap)
		}
	})
	t.Run("too long a wait ends the retries", func(t *testing.T) {
		srv := anthropictest.NewServer(t, anthropictest.RateLimited("3600"), anthropictest.Text("never"))
		start := time.Now()
		_, err := newModel(t, srv).Generate(ctx, userReq("hi"))
		if err == nil || !strings.Contains(err.Error(), "429 Too Many Requests") || time.Since(start) > 10*time.Second || srv.Served() != 1 {
			t.Fatalf("error %v after %s and %d requests", err, time.Since(start), srv.Served())
		}
	})
	t.Run("retries run out", func(t *testing.T) {
		srv := anthropictest.NewServer(t, anthropictest.Overloaded(), anthropictest.Overloaded(), anthropictest.Overloaded())
		_, err := newModel(t, srv).Generate(ctx, userReq("hi"))
		if err == nil || !strings.Contains(err.Error(), "529 Overloaded (after 3 attempts): Overloaded. Anthropic's servers are overloaded") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("an error event before the answer began", func(t *testing.T) {
		overloaded := anthropictest.Reply{Text: "lost", StreamError: &anthropictest.APIError{Type: "overloaded_error", Message: "Overloaded"}, ErrorAfter: 2}
		srv := anthropictest.NewServer(t, overloaded, anthropictest.Reply{Text: "finally", Split: 2})
		var d deltas
		resp, err := newModel(t, srv).Generate(ctx, streaming(userReq("hi"), &d))
		if err != nil || resp.Message.Text() != "finally" || strings.Join(d.got, "") != "finally" || srv.Served() != 2 {
			t.Fatalf("%q (deltas %q) %v after %d requests", resp.Message.Text(), d.got, err, srv.Served())
		}
		srv = anthropictest.NewServer(t, overloaded, overloaded, overloaded)
		_, err = newModel(t, srv).Generate(ctx, streaming(userReq("hi"), &deltas{}))
		if err == nil || !strings.Contains(err.Error(), "529 Overloaded (after 3 attempts): Overloaded (an error event before the answer began)") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("an error event once the answer began is not retried", func(t *testing.T) {
		srv := anthropictest.NewServer(t, anthropictest.Reply{Text: "said", StreamError: &anthropictest.APIError{Type: "overloaded_error", Message: "Overloaded"}, ErrorAfter: 3}, anthropictest.Text("never"))
		var d deltas
		_, err := newModel(t, srv).Generate(ctx, streaming(userReq("hi"), &d))
		if err == nil || srv.Served() != 1 || strings.Join(d.got, "") != "said" {
			t.Fatalf("error %v after %d requests, deltas %q", err, srv.Served(), d.got)
		}
	})
	t.Run("x-should-retry false", func(t *testing.T) {
		r := anthropictest.ServerError()
		r.Header = http.Header{"X-Should-Retry": {"false"}}
		srv := anthropictest.NewServer(t, r, anthropictest.Text("never"))
		if _, err := newModel(t, srv).Generate(ctx, userReq("hi")); err == nil || srv.Served() != 1 {
			t.Fatalf("error %v after %d requests", err, srv.Served())
		}
	})
	t.Run("client errors are not retried", func(t *testing.T) {
		srv := anthropictest.NewServer(t, anthropictest.Status(http.StatusBadRequest, "messages.0.content: bad"), anthropictest.Text("never"))
		_, err := newModel(t, srv).Generate(ctx, userReq("hi"))
		if err == nil || !strings.Contains(err.Error(), "400 Bad Request: messages.0.content: bad") || srv.Served() != 1 {
			t.Fatalf("error %v after %d requests", err, srv.Served())
		}
	})
}

func TestErrorMessages(t *testing.T) {
	t.Run("401 without a key", func(t *testing.T) {
		srv := anthropictest.NewServer(t)
		srv.RequireKey("sk-ant-right")
		_, err := newModel(t, srv).Generate(ctx, userReq("hi"))
		if err == nil || !strings.Contains(err.Error(), "401 Unauthorized: invalid x-api-key. No API key was sent: set ANTHROPIC_API_KEY") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("401 with a wrong key", func(t *testing.T) {
		srv := anthropictest.NewServer(t)
		srv.RequireKey("sk-ant-right")
		_, err := newModel(t, srv, func(c *anthropic.Config) { c.APIKey = "sk-ant-wrong" }).Generate(ctx, userReq("hi"))
		if err == nil || !strings.Contains(err.Error(), "Check the key in ANTHROPIC_API_KEY") || strings.Contains(err.Error(), "sk-ant-wrong") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("the key is sent", func(t *testing.T) {
		srv := anthropictest.NewServer(t, anthropictest.Text("ok"))
		srv.RequireKey("sk-ant-right")
		resp, err := newModel(t, srv, func(c *anthropic.Config) { c.APIKey = "sk-ant-right" }).Generate(ctx, userReq("hi"))
		if err != nil || resp.Message.Text() != "ok" {
			t.Fatalf("%q %v", resp.Message.Text(), err)
		}
		h := srv.Requests()[0].Header
		if h.Get("X-Api-Key") != "sk-ant-right" || h.Get("Authorization") != "Bearer sk-ant-right" || h.Get("anthropic-version") == "" {
			t.Fatalf("headers %v", h)
		}
	})
	t.Run("400 on max_tokens", func(t *testing.T) {
		srv := anthropictest.NewServer(t, anthropictest.Status(http.StatusBadRequest, "max_tokens: 8192 > 4096, which is the maximum allowed number of output tokens for claude-old"))
		_, err := newModel(t, srv).Generate(ctx, userReq("hi"))
		if err == nil || !strings.Contains(err.Error(), "which is the maximum allowed number of output tokens for claude-old. tenxgraph sent max_tokens 8192: set model.max_tokens") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("400 on thinking blocks", func(t *testing.T) {
		srv := anthropictest.NewServer(t, anthropictest.Status(http.StatusBadRequest, "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`"))
		_, err := newModel(t, srv).Generate(ctx, userReq("hi"))
		if err == nil || !strings.Contains(err.Error(), "but found `tool_use`. tenxgraph keeps no thinking blocks in the thread") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("404", func(t *testing.T) {
		srv := anthropictest.NewServer(t, anthropictest.Status(http.StatusNotFound, "model: claude-nope"))
		_, err := newModel(t, srv).Generate(ctx, userReq("hi"))
		if err == nil || !strings.Contains(err.Error(), `model: claude-nope. Check the model name ("claude-test") and that base_url is the API root, without /v1`) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("other error bodies", func(t *testing.T) {
		for body, want := range map[string]string{
			`{"error":"no such route"}`:             "no such route",
			`{"error":{"message":"openai shape"}}`:  "openai shape",
			`{"detail":"Not Found"}`:                "Not Found",
			"<html><h1>502 Bad Gateway</h1></html>": "<html><h1>502 Bad Gateway</h1></html>",
		} {
			srv := anthropictest.NewServer(t, anthropictest.Reply{Status: http.StatusBadGateway, Body: body})
			_, err := newModel(t, srv, func(c *anthropic.Config) { c.MaxRetries = 0 }).Generate(ctx, userReq("hi"))
			if err == nil || !strings.Contains(err.Error(), "answered 502 Bad Gateway: "+want) {
				t.Errorf("body %s: error %v", body, err)
			}
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		m, err := anthropic.New(anthropic.Config{Model: "m", BaseURL: "http://127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err = m.Generate(ctx, userReq("hi")); err == nil || !strings.Contains(err.Error(), "connection refused; is the server running") {
			t.Fatalf("error %v", err)
		}
	})
}

func TestTimeout(t *testing.T) {
	t.Run("gives up", func(t *testing.T) {
		srv := anthropictest.NewServer(t, anthropictest.Reply{Text: "too late", Delay: 5 * time.Second})
		m := newModel(t, srv, func(c *anthropic.Config) { c.Timeout, c.MaxRetries = 100*time.Millisecond, 0 })
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
		srv := anthropictest.NewServer(t, anthropictest.Reply{Text: "too late", Delay: 5 * time.Second}, anthropictest.Text("in time"))
		m := newModel(t, srv, func(c *anthropic.Config) { c.Timeout = 300 * time.Millisecond })
		if resp, err := m.Generate(ctx, userReq("hi")); err != nil || resp.Message.Text() != "in time" {
			t.Fatalf("%q %v", resp.Message.Text(), err)
		}
	})
	t.Run("bounds the whole stream", func(t *testing.T) {
		m := newModelOn(t, &slowStream{deltas: 20, every: 50 * time.Millisecond}, func(c *anthropic.Config) { c.Timeout, c.MaxRetries = 300*time.Millisecond, 0 })
		if _, err := m.Generate(ctx, streaming(userReq("hi"), &deltas{})); err == nil || !strings.Contains(err.Error(), "model.timeout") {
			t.Fatalf("error %v", err)
		}
	})
}

func TestCancelledMidStream(t *testing.T) {
	m := newModelOn(t, &slowStream{deltas: 100, every: 20 * time.Millisecond})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req := userReq("hi")
	req.OnDelta = func(string) { cancel() }
	start := time.Now()
	_, err := m.Generate(cctx, req)
	if !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Fatalf("error %v after %s, want context.Canceled at once", err, time.Since(start))
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, c := range []anthropic.Config{
		{},
		{Model: "m", BaseURL: "ftp://example.com"},
		{Model: "m", BaseURL: "https://api.anthropic.com/v1"},
		{Model: "m", MaxRetries: -1},
		{Model: "m", Timeout: -time.Second},
		{Model: "m", MaxTokens: -1},
	} {
		if _, err := anthropic.New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
	m, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.String(); got != "anthropic model claude-sonnet-4-5 at https://api.anthropic.com" {
		t.Fatalf("String %q", got)
	}
}

func TestFromConfig(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("MY_KEY", "")
	// Anthropic itself without a key: a clear error at startup.
	_, err := anthropic.FromConfig(&model.Config{Provider: "anthropic", Model: "claude-sonnet-4-5", APIKeyEnv: "ANTHROPIC_API_KEY"})
	if err == nil || !strings.Contains(err.Error(), "set the environment variable ANTHROPIC_API_KEY") || !strings.Contains(err.Error(), "https://api.anthropic.com") {
		t.Fatalf("error %v", err)
	}
	// A local server needs none, and none is sent; max_tokens and retries
	// come from the config.
	srv := anthropictest.NewServer(t, anthropictest.Text("local ok"))
	m, err := anthropic.FromConfig(&model.Config{Provider: "anthropic", Model: "m", BaseURL: srv.URL, MaxTokens: 1000, MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := m.Generate(ctx, userReq("hi")); err != nil || resp.Message.Text() != "local ok" {
		t.Fatalf("%q %v", resp.Message.Text(), err)
	}
	if r := srv.Requests()[0]; r.MaxTokens != 1000 || r.Header.Get("X-Api-Key") != "" {
		t.Fatalf("max_tokens %d, key %q", r.MaxTokens, r.Header.Get("X-Api-Key"))
	}
	// The variable named, set: its key is sent.
	t.Setenv("MY_KEY", "sk-ant-mine")
	srv = anthropictest.NewServer(t, anthropictest.Text("keyed"))
	srv.RequireKey("sk-ant-mine")
	m, err = anthropic.FromConfig(&model.Config{Provider: "anthropic", Model: "m", BaseURL: srv.URL, APIKeyEnv: "MY_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := m.Generate(ctx, userReq("hi")); err != nil || resp.Message.Text() != "keyed" {
		t.Fatalf("%q %v", resp.Message.Text(), err)
	}
	// ANTHROPIC_BASE_URL stands in for a missing base_url, never for one
	// the config sets; with /v1 it is refused.
	fromEnv := anthropictest.NewServer(t, anthropictest.Text("from env"))
	t.Setenv("ANTHROPIC_BASE_URL", fromEnv.URL)
	m, err = anthropic.FromConfig(&model.Config{Provider: "anthropic", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := m.Generate(ctx, userReq("hi")); err != nil || resp.Message.Text() != "from env" {
		t.Fatalf("%q %v", resp.Message.Text(), err)
	}
	t.Setenv("ANTHROPIC_BASE_URL", fromEnv.URL+"/v1")
	if _, err := anthropic.FromConfig(&model.Config{Provider: "anthropic", Model: "m"}); err == nil || !strings.Contains(err.Error(), "without /v1") {
		t.Fatalf("error %v", err)
	}
}

// slowStream is a transport whose every answer is a Messages API stream of
// text deltas, one every so often, that stops when the request's context
// ends (as a real connection does).
type slowStream struct {
	deltas int
	every  time.Duration
}

func (s *slowStream) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	pr, pw := io.Pipe()
	go func() {
		write := func(name, data string) bool {
			select {
			case <-req.Context().Done():
				pw.CloseWithError(req.Context().Err())
				return false
			case <-time.After(s.every):
			}
			_, err := fmt.Fprintf(pw, "event: %s\ndata: %s\n\n", name, data)
			return err == nil
		}
		if !write("message_start", `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}`) ||
			!write("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) {
			return
		}
		for i := 0; i < s.deltas; i++ {
			if !write("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"%d "}}`, i)) {
				return
			}
		}
		if write("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}`) && write("message_stop", `{"type":"message_stop"}`) {
			pw.Close()
		}
	}()
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK",
		Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, Request: req}, nil
}

func newModelOn(t *testing.T, rt http.RoundTripper, edit ...func(*anthropic.Config)) *anthropic.Model {
	t.Helper()
	cfg := anthropic.Config{Model: "claude-test", BaseURL: "http://model.invalid", HTTPClient: &http.Client{Transport: rt}}
	for _, e := range edit {
		e(&cfg)
	}
	m, err := anthropic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
