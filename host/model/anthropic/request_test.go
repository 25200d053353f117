package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	anth "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/tenxgraph/tenxgraph/host/memo"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/sdk"
)

func testModel(t *testing.T) *Model {
	t.Helper()
	m, err := New(Config{Model: "claude-test", BaseURL: "http://127.0.0.1:1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func body(t *testing.T, m *Model, req model.Request) []byte {
	t.Helper()
	b, err := m.request(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func text(role message.Role, id, s string) message.Message {
	return message.Message{ID: id, Role: role, Content: []message.Block{message.TextBlock{Text: s}}}
}

func call(id, name, args string) message.ToolCallBlock {
	return message.ToolCallBlock{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

// The mapping of a thread to a request, checked on the body and through the
// SDK's own request types: system prompt on top, a later system message as
// user text, blank text left out, a message left with nothing dropped,
// turns of one role merged (tool results first), results in call order
// with is_error, ids the API refuses replaced the same on both sides.
func TestRequestMapping(t *testing.T) {
	m := testModel(t)
	odd := "call/1 with spaces"
	thread := []message.Message{
		text(message.RoleSystem, "s", "You are terse."),
		text(message.RoleUser, "u1", "add 2 and 3, and read my clipboard"),
		{ID: "a1", Role: message.RoleAssistant, Content: []message.Block{
			message.TextBlock{Text: "  \n"},
			message.TextBlock{Text: "Working on it."},
			call(odd, "add", `{"a": 2, "b": 3}`),
			call("call_clip", "read_clipboard", ``),
		}},
		{ID: "t1", Role: message.RoleTool, Content: []message.Block{
			message.ToolResultBlock{ToolCallID: "call_clip", Content: json.RawMessage(`"hi"`)},
			message.ToolResultBlock{ToolCallID: odd, Content: json.RawMessage(`{"error": "boom"}`), IsError: true},
		}},
		text(message.RoleSystem, "s2", "The user is in a hurry."),
		text(message.RoleUser, "u2", "and?"),
		text(message.RoleAssistant, "a2", " "), // nothing left: dropped
		text(message.RoleAssistant, "a3", "14"),
		text(message.RoleAssistant, "a4", "and hi"),
		text(message.RoleUser, "u3", "thanks"),
	}
	tools := []sdk.ToolSpec{{Name: "add", Description: "Add.", Parameters: json.RawMessage(`{"type":"object","properties":{"b":{"type":"number"},"a":{"type":"number"}}}`)}, {Name: "read_clipboard"}}
	raw := body(t, m, model.Request{Messages: thread, Tools: tools, OnDelta: func(string) {}})
	if plain := body(t, m, model.Request{Messages: thread, Tools: tools}); bytes.Contains(plain, []byte(`"stream"`)) || !bytes.Equal(plain, bytes.Replace(raw, []byte(`,"stream":true`), nil, 1)) {
		t.Fatalf("without OnDelta: %s\nwant the same body without a stream", plain)
	}

	var p anth.MessageNewParams
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("the SDK cannot read the body: %v\n%s", err, raw)
	}
	if p.Model != "claude-test" || p.MaxTokens != DefaultMaxTokens || len(p.System) != 1 || p.System[0].Text != "You are terse." {
		t.Fatalf("model %q max_tokens %d system %+v", p.Model, p.MaxTokens, p.System)
	}
	if len(p.Tools) != 2 || p.Tools[0].OfTool == nil || p.Tools[0].OfTool.Name != "add" || p.Tools[1].OfTool.Name != "read_clipboard" {
		t.Fatalf("tools %s", raw)
	}
	if !bytes.Contains(raw, []byte(`"input_schema":{"properties":{"a":{"type":"number"},"b":{"type":"number"}},"type":"object"}`)) ||
		!bytes.Contains(raw, []byte(`{"name":"read_clipboard","input_schema":{"properties":{},"type":"object"}}`)) {
		t.Fatalf("tool schemas in %s", raw)
	}
	if !bytes.Contains(raw, []byte(`"stream":true`)) {
		t.Fatalf("not streamed: %s", raw)
	}
	roles := []string{}
	for _, mp := range p.Messages {
		switch {
		case mp.OfUser != nil:
			roles = append(roles, "user")
		case mp.OfAssistant != nil:
			roles = append(roles, "assistant")
		default:
			roles = append(roles, "?")
		}
	}
	if fmt.Sprint(roles) != "[user assistant user assistant user]" {
		t.Fatalf("turns %v in %s", roles, raw)
	}
	a1 := p.Messages[1].OfAssistant.Content
	if len(a1) != 3 || a1[0].OfText == nil || a1[0].OfText.Text != "Working on it." || a1[1].OfToolUse == nil || a1[2].OfToolUse == nil {
		t.Fatalf("assistant turn %s", raw)
	}
	hashed := a1[1].OfToolUse.ID
	if hashed == odd || !strings.HasPrefix(hashed, "toolu_h") || a1[2].OfToolUse.ID != "call_clip" || a1[1].OfToolUse.Name != "add" {
		t.Fatalf("tool_use ids %q %q", hashed, a1[2].OfToolUse.ID)
	}
	if !bytes.Contains(raw, []byte(`"input":{"a": 2, "b": 3}`)) && !bytes.Contains(raw, []byte(`"input":{"a":2,"b":3}`)) {
		t.Fatalf("input of add in %s", raw)
	}
	if !bytes.Contains(raw, []byte(`{"type":"tool_use","id":"call_clip","name":"read_clipboard","input":{}}`)) {
		t.Fatalf("empty arguments not sent as {}: %s", raw)
	}
	u2 := p.Messages[2].OfUser.Content
	if len(u2) != 4 || u2[0].OfToolResult == nil || u2[1].OfToolResult == nil || u2[2].OfText == nil || u2[3].OfText == nil {
		t.Fatalf("tool results and the next user text are not one turn, results first: %s", raw)
	}
	if r := u2[0].OfToolResult; r.ToolUseID != hashed || !r.IsError.Value || r.Content[0].OfText.Text != `{"error":"boom"}` {
		t.Fatalf("first result %s (want the add call's, first, as an error)", raw)
	}
	if r := u2[1].OfToolResult; r.ToolUseID != "call_clip" || r.IsError.Value || r.Content[0].OfText.Text != "hi" {
		t.Fatalf("second result %s", raw)
	}
	if u2[2].OfText.Text != "The user is in a hurry." || u2[3].OfText.Text != "and?" {
		t.Fatalf("later system message and user text: %s", raw)
	}
	if a := p.Messages[3].OfAssistant.Content; len(a) != 2 || a[0].OfText.Text != "14" || a[1].OfText.Text != "and hi" {
		t.Fatalf("merged assistant turn: %s", raw)
	}
	if bytes.Contains(raw, []byte(`"text":" `)) || bytes.Contains(raw, []byte(`"text":""`)) {
		t.Fatalf("blank text sent: %s", raw)
	}
}

// A thread with nothing to send is an error, not an empty request.
func TestNothingToSend(t *testing.T) {
	m := testModel(t)
	for _, msgs := range [][]message.Message{
		nil,
		{text(message.RoleSystem, "s", "only a system prompt")},
		{text(message.RoleUser, "u", " \t")},
	} {
		if _, err := m.request(context.Background(), model.Request{Messages: msgs}); err == nil || !strings.Contains(err.Error(), "no messages to send") {
			t.Errorf("%+v: error %v", msgs, err)
		}
	}
}

func TestToolID(t *testing.T) {
	for id, same := range map[string]bool{
		"call_abc12345_3_1": true, "toolu_01A-b": true, "": false, "a.b": false, "a b": false,
		"ünï": false, strings.Repeat("a", 64): true, strings.Repeat("a", 65): false,
	} {
		got := toolID(id)
		if (got == id) != same {
			t.Errorf("toolID(%q) = %q", id, got)
		}
		if got != toolID(id) || (!same && (len(got) > maxToolID || strings.ContainsFunc(got, func(r rune) bool {
			return !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		}))) {
			t.Errorf("toolID(%q) = %q: not a stable id of the allowed characters", id, got)
		}
	}
}

// turns is a thread of remote-tool turns, as a graph's state grows (the
// pending remote call's filler replaced by the client's result later).
func turns(n int, tag string) []message.Message {
	var out []message.Message
	for i := range n {
		id := func(s string) string { return fmt.Sprintf("%s-%d-%s", tag, i, s) }
		calc, clip := id("c0"), id("c1")
		out = append(out,
			text(message.RoleUser, id("u"), fmt.Sprintf("turn %d <&> \u2028 %q", i, tag)),
			message.Message{ID: id("a"), Role: message.RoleAssistant, Content: []message.Block{
				call(calc, "calculator", `{"expression":"2+3*4"}`), call(clip, "read_clipboard", `{}`)}},
			message.Message{ID: id("t"), Role: message.RoleTool, Content: []message.Block{
				message.ToolResultBlock{ToolCallID: calc, Content: json.RawMessage(`{"result":14}`)},
				message.RemoteToolCallBlock{ID: clip, Name: "read_clipboard", Arguments: json.RawMessage(`{}`), Node: "tools"}}},
			message.Message{ID: id("r"), Role: message.RoleTool, Content: []message.Block{
				message.ToolResultBlock{ToolCallID: clip, Content: json.RawMessage(`{"text":"hi"}`)}}},
			text(message.RoleAssistant, id("z"), "14, and hi"),
		)
	}
	return out
}

// A thread's every call, as it grows one message at a time (through the
// pause, whose filler the client's result replaces), is the body the whole
// thread encoded anew would be; so is a thread deleted and re-created
// under its id, and a call without a thread id.
func TestHistoriesEncodeWhatTheWholeThreadWould(t *testing.T) {
	m := testModel(t)
	fresh := testModel(t)
	tools := []sdk.ToolSpec{{Name: "calculator", Parameters: json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string"}}}`)}}
	thread := append([]message.Message{text(message.RoleSystem, "sys", "be brief")}, turns(12, "one")...)
	for n := 1; n <= len(thread); n++ {
		req := model.Request{ThreadID: "t", Messages: thread[:n], Tools: tools}
		if n == 1 {
			continue // a system prompt alone is nothing to send
		}
		if got, want := body(t, m, req), body(t, fresh, model.Request{Messages: thread[:n], Tools: tools}); !bytes.Equal(got, want) {
			t.Fatalf("%d messages:\ngot  %s\nwant %s", n, got, want)
		}
	}
	if h, want := m.histories.Get("t"), len(message.ForModel(thread)); h.Len() != want {
		t.Fatalf("the history holds %d messages, want %d (it was not kept)", h.Len(), want)
	}
	other := turns(10, "two")
	for _, req := range []model.Request{
		{ThreadID: "t", Messages: other},
		{ThreadID: "t", Messages: other[:len(other)-3]},
	} {
		if got, want := body(t, m, req), body(t, fresh, model.Request{Messages: req.Messages}); !bytes.Equal(got, want) {
			t.Fatalf("%d messages of thread %q:\ngot  %s\nwant %s", len(req.Messages), req.ThreadID, got, want)
		}
	}
}

// Histories are bounded in number, the least recently used going first,
// and short threads keep none.
func TestHistoriesBounded(t *testing.T) {
	m := testModel(t)
	hs := &m.histories
	body(t, m, model.Request{ThreadID: "short", Messages: turns(1, "s")})
	if hs.Len() != 0 {
		t.Fatalf("a thread of 5 messages keeps its history (%d kept)", hs.Len())
	}
	thread := turns(8, "b")
	for i := range memo.DefaultThreads + 10 {
		body(t, m, model.Request{ThreadID: fmt.Sprint("t", i), Messages: thread})
	}
	if hs.Len() != memo.DefaultThreads || hs.Has("t0") {
		t.Fatalf("%d histories kept (t0 among them: %v), want %d, the least recently used gone", hs.Len(), hs.Has("t0"), memo.DefaultThreads)
	}
	one := hs.Get(fmt.Sprint("t", memo.DefaultThreads+9))
	if hs.Bytes() != memo.DefaultThreads*one.Bytes() || one.Bytes() < 1000 {
		t.Fatalf("%d bytes counted for %d histories of %d", hs.Bytes(), memo.DefaultThreads, one.Bytes())
	}
}

// With media, through the pause and past the request's 20 images (the
// oldest becoming stand-ins as the thread grows), every call is the body
// of the whole thread encoded anew and the SDK reads it; a call on a
// thread that gained nothing reads no blob.
func TestHistoriesEncodeMediaAsTheWholeThreadWould(t *testing.T) {
	m, fresh := testModel(t), testModel(t)
	blobs, reads := map[string][]byte{}, map[string]int{}
	reader := model.BlobReaderFunc(func(_ context.Context, ref string) ([]byte, error) {
		reads[ref]++
		return blobs[ref], nil
	})
	ref := func(data string) string {
		r := fmt.Sprintf("sha256:%064x", len(blobs)+1)
		blobs[r] = []byte(data)
		return r
	}
	thread := turns(30, "m")
	for i := range thread {
		msg := &thread[i]
		switch {
		case msg.Role == message.RoleUser:
			msg.Content = append(msg.Content[:1:1], message.MediaBlock{Kind: message.TypeImage, MimeType: "image/png", Blob: ref("png " + msg.ID), Size: 10})
		case msg.Role == message.RoleTool && len(msg.Content) == 1:
			r := msg.Content[0].(message.ToolResultBlock)
			r.Attachments = []message.MediaBlock{
				{Kind: message.TypeFile, MimeType: "application/pdf", Filename: `r "1".pdf`, Blob: ref("pdf " + msg.ID), Size: 10},
				{Kind: message.TypeFile, MimeType: "text/plain", Data: []byte("<note> \u2028 " + msg.ID)},
				{Kind: message.TypeImage, MimeType: "image/jpeg", URL: "https://example.com/a.jpg?<&>"},
			}
			msg.Content = []message.Block{r}
		}
	}
	for n := 1; n <= len(thread); n++ {
		req := model.Request{ThreadID: "t", Messages: thread[:n], Blobs: reader}
		got := body(t, m, req)
		if want := body(t, fresh, model.Request{Messages: thread[:n], Blobs: reader}); !bytes.Equal(got, want) {
			t.Fatalf("%d messages:\ngot  %s\nwant %s", n, got, want)
		}
		var p anth.MessageNewParams
		if err := json.Unmarshal(got, &p); err != nil {
			t.Fatalf("%d messages: the SDK cannot read the body: %v", n, err)
		}
	}
	last := body(t, m, model.Request{ThreadID: "t", Messages: thread, Blobs: reader})
	if n := bytes.Count(last, []byte(`"type":"image","source":{"type":"base64"`)) + bytes.Count(last, []byte(`"type":"image","source":{"type":"url"`)); n != maxImages {
		t.Fatalf("%d images sent, want %d", n, maxImages)
	}
	for r := range reads {
		reads[r] = 0
	}
	body(t, m, model.Request{ThreadID: "t", Messages: thread, Blobs: reader})
	for r, n := range reads {
		if n != 0 {
			t.Fatalf("%s read again (%d) for a call on a thread that gained nothing", r, n)
		}
	}
}
