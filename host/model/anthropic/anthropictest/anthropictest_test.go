package anthropictest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	anth "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/tenxgraph/tenxgraph/host/model/anthropic/anthropictest"
)

var ctx = context.Background()

func client(srv *anthropictest.Server, opts ...option.RequestOption) anth.Client {
	return anth.NewClient(append([]option.RequestOption{option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0)}, opts...)...)
}

func params(msgs ...anth.MessageParam) anth.MessageNewParams {
	return anth.MessageNewParams{
		Model: "test-model", MaxTokens: 1024, Messages: msgs,
		System: []anth.TextBlockParam{{Text: "Be terse."}},
		Tools: []anth.ToolUnionParam{anth.ToolUnionParamOfTool(anth.ToolInputSchemaParam{
			Properties: map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}}, "add")},
	}
}

// The server's stream is one Anthropic's own SDK reads: its accumulator
// rebuilds the reply (thinking, text in pieces, tool input in pieces,
// the stop reason, the usage) from the events, pings included; and the
// SDK's request passes the server's checks.
func TestStreamReadByTheSDK(t *testing.T) {
	srv := anthropictest.NewServer(t, anthropictest.Reply{
		Thinking: "Let me add.", Text: "Adding — ünïcode too.",
		ToolUses: []anthropictest.ToolUse{anthropictest.Use("toolu_1", "add", `{"a": 2, "b": 3}`), anthropictest.Use("toolu_2", "add", `{"a":1,"b":1}`)},
		Split:    3, Ping: true,
		Usage: &anthropictest.Usage{InputTokens: 40, OutputTokens: 25, CacheReadInputTokens: 7},
	})
	c := client(srv)
	stream := c.Messages.NewStreaming(ctx, params(anth.NewUserMessage(anth.NewTextBlock("add 2 and 3"))))
	var msg anth.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 4 || msg.Content[0].Type != "thinking" || msg.Content[1].Text != "Adding — ünïcode too." {
		t.Fatalf("content %+v", msg.Content)
	}
	use := msg.Content[2]
	if use.Type != "tool_use" || use.ID != "toolu_1" || use.Name != "add" {
		t.Fatalf("tool use %+v", use)
	}
	var in struct{ A, B int }
	if err := json.Unmarshal(use.Input, &in); err != nil || in.A != 2 || in.B != 3 {
		t.Fatalf("input %s: %v", use.Input, err)
	}
	if msg.StopReason != anth.StopReasonToolUse || msg.Usage.OutputTokens != 25 || msg.Usage.InputTokens != 40 || msg.Usage.CacheReadInputTokens != 7 {
		t.Fatalf("stop %q usage %+v", msg.StopReason, msg.Usage)
	}
	r := srv.Requests()[0]
	if !r.Stream || r.Model != "test-model" || r.MaxTokens != 1024 || len(r.System) != 1 || r.System[0] != "Be terse." || len(r.Tools) != 1 || r.Tools[0].Name != "add" {
		t.Fatalf("request %+v", r)
	}
	if r.Header.Get("anthropic-version") == "" || r.Header.Get("Authorization") != "Bearer sk-test" {
		t.Fatalf("headers %v", r.Header)
	}
}

// A whole JSON message, an error answer and an error event are what the
// SDK expects too.
func TestJSONAndErrorsReadByTheSDK(t *testing.T) {
	srv := anthropictest.NewServer(t,
		anthropictest.Reply{Text: "whole", Usage: &anthropictest.Usage{InputTokens: 3, OutputTokens: 1}},
		anthropictest.Overloaded(),
		anthropictest.Reply{Text: "cut", StreamError: &anthropictest.APIError{Type: "overloaded_error", Message: "Overloaded"}, ErrorAfter: 2},
	)
	c := client(srv)
	p := params(anth.NewUserMessage(anth.NewTextBlock("hi")))
	msg, err := c.Messages.New(ctx, p)
	if err != nil || msg.Content[0].Text != "whole" || msg.StopReason != anth.StopReasonEndTurn || msg.Usage.InputTokens != 3 {
		t.Fatalf("%+v %v", msg, err)
	}
	_, err = c.Messages.New(ctx, p)
	var apiErr *anth.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || apiErr.Message != "Overloaded" || string(apiErr.Type()) != "overloaded_error" {
		t.Fatalf("error %v", err)
	}
	stream := c.Messages.NewStreaming(ctx, p)
	for stream.Next() {
	}
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "Overloaded") {
		t.Fatalf("error event: %v", err)
	}
}

// The server refuses what the API refuses, and what a strict proxy does,
// naming the problem.
func TestRequestChecks(t *testing.T) {
	srv := anthropictest.NewServer(t)
	srv.Handle(func(anthropictest.Request) anthropictest.Reply { return anthropictest.Text("ok") })
	use := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"add","input":{}},{"type":"tool_use","id":"toolu_2","name":"add","input":{}}]}`
	for body, want := range map[string]string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`:                                                         "max_tokens",
		`{"model":"m","max_tokens":5,"temperature":1,"messages":[{"role":"user","content":"hi"}]}`:                          "temperature: Extra inputs",
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`:                   "non-whitespace",
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":" \n"}]}`:                                         "non-whitespace",
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[]}]}`:                                            "non-empty content",
		`{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]}`:                                         "'user' or 'assistant'",
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`:             "alternate",
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"},` + use + `,{"role":"user","content":"b"}]}`: "without tool_result",
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"},` + use + `,{"role":"user","content":[` +
			`{"type":"tool_result","tool_use_id":"toolu_2"},{"type":"tool_result","tool_use_id":"toolu_1"}]}]}`: "call order",
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"},` + use + `,{"role":"user","content":[` +
			`{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"toolu_1"},{"type":"tool_result","tool_use_id":"toolu_2"}]}]}`: "must come first",
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"call.1","name":"add","input":{}}]}]}`: "pattern",
		`{"model":"m","max_tokens":5,"tools":[{"name":"add","input_schema":{"type":"array"}}],"messages":[{"role":"user","content":"a"}]}`:                                   "input_schema",
	} {
		hreq, _ := http.NewRequest("POST", srv.URL+anthropictest.Path, strings.NewReader(body))
		hreq.Header.Set("Content-Type", "application/json")
		hreq.Header.Set("anthropic-version", "2026-10-21")
		res, err := http.DefaultClient.Do(hreq)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 400 {
			t.Errorf("%s: %d %s, want 400", body, res.StatusCode, got)
			continue
		}
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("%s: %s, want it to say %q", body, got, want)
		}
	}
	if n := len(srv.TakeProblems()); n != 12 {
		t.Errorf("%d problems recorded, want one per refused request", n)
	}
}

// Images and documents, alone and inside a tool_result, as the SDK sends
// them, are recorded with their bytes decoded; what the API refuses of
// them is refused.
func TestMediaBlocks(t *testing.T) {
	srv := anthropictest.NewServer(t, anthropictest.Text("ok"))
	img := anth.NewImageBlockBase64("image/png", "iVBORw==")
	doc := anth.NewDocumentBlock(anth.Base64PDFSourceParam{Data: "JVBERi0="})
	result := anth.ContentBlockParamUnion{OfToolResult: &anth.ToolResultBlockParam{ToolUseID: "toolu_1", Content: []anth.ToolResultBlockParamContentUnion{
		{OfDocument: doc.OfDocument}, {OfText: &anth.TextBlockParam{Text: "done"}}}}}
	c := client(srv)
	_, err := c.Messages.New(ctx, params(
		anth.NewUserMessage(img, anth.NewTextBlock("and")),
		anth.NewAssistantMessage(anth.NewToolUseBlock("toolu_1", map[string]any{}, "add")),
		anth.NewUserMessage(result),
	))
	if err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0].Messages
	if b := got[0].Content[0]; b.Type != "image" || b.Source != "base64" || b.MediaType != "image/png" || string(b.Bytes) != "\x89PNG" {
		t.Fatalf("image %+v", b)
	}
	r := got[2].Content[0]
	if len(r.Parts) != 2 || r.Parts[0].Type != "document" || string(r.Parts[0].Bytes) != "%PDF-" || r.Content != "done" {
		t.Fatalf("tool_result %+v", r)
	}

	use := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"add","input":{}}]}`
	big := strings.Repeat("A", 5<<20+4)
	for body, want := range map[string]string{
		`[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw=="}}]}]`:                                                "image blocks can only be in user messages",
		`[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/bmp","data":"Qk0="}}]}]`:                                                                                       "Input should be 'image/jpeg'",
		`[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + big + `"}}]}]`:                                                                                "image exceeds 5 MB maximum",
		`[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"not base64!"}}]}]`:                                                                                "not valid base64",
		`[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"text/plain","data":"aGk="}}]}]`:                                                                                   "Input should be 'application/pdf'",
		`[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw=="},"title":"x"}]}]`:                                                                       "image.title: Extra inputs",
		`[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":" "}}]}]`:                                                                                        "non-blank data",
		`[{"role":"user","content":"a"},` + use + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_use","id":"x","name":"add","input":{}}]}]}]`:                "a tool result holds text, image and document blocks",
		`[{"role":"user","content":"a"},` + use + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"image","source":{"type":"url","url":"file:///etc/passwd"}}]}]}]`: "want an http(s) URL",
	} {
		srv := anthropictest.NewServer(t)
		hreq, _ := http.NewRequest("POST", srv.URL+anthropictest.Path, strings.NewReader(`{"model":"m","max_tokens":5,"messages":`+body+`}`))
		hreq.Header.Set("Content-Type", "application/json")
		hreq.Header.Set("anthropic-version", "2026-10-21")
		res, err := http.DefaultClient.Do(hreq)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if problems := srv.TakeProblems(); res.StatusCode != 400 || !bytes.Contains(got, []byte(want)) || len(problems) != 1 {
			t.Errorf("%.200s: %d %s, want a 400 saying %q", body, res.StatusCode, got, want)
		}
	}
}
