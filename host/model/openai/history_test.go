package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/memo"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// wholeRequest is a request encoded the plain way, every message every
// time: what the histories must reproduce byte for byte.
type wholeRequest struct {
	Model             string         `json:"model"`
	Messages          []any          `json:"messages"`
	Tools             []chatTool     `json:"tools,omitempty"`
	ParallelToolCalls bool           `json:"parallel_tool_calls,omitempty"`
	Stream            bool           `json:"stream,omitempty"`
	StreamOptions     *streamOptions `json:"stream_options,omitempty"`
}

// Media are read from blobs, every one sent (the thread is within the
// request's budget).
func wholeBody(t testing.TB, m *Model, req model.Request, blobs ...map[string][]byte) []byte {
	t.Helper()
	var have map[string][]byte
	if len(blobs) > 0 {
		have = blobs[0]
	}
	var msgs []any
	for i, msg := range message.ForModel(req.Messages) {
		var media *model.Sends
		if items := model.Items(msg, classify); len(items) > 0 {
			media = &model.Sends{Items: items}
		}
		c, err := chatMessagesOf(i, msg, &sender{media: media, have: have})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range c {
			msgs = append(msgs, wire(c))
		}
	}
	w := wholeRequest{Model: m.name, Messages: msgs}
	if len(req.Tools) > 0 {
		tools, err := m.schemas.chatTools(req.Tools)
		if err != nil {
			t.Fatal(err)
		}
		w.Tools, w.ParallelToolCalls = tools, true
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// wire is c as encoding/json writes OpenAI's shapes: the reference the
// hand-written encoding of content parts must match.
func wire(c chatMessage) any {
	if c.parts == nil {
		return c
	}
	type url struct {
		URL string `json:"url"`
	}
	type file struct {
		Filename string `json:"filename"`
		FileData string `json:"file_data"`
	}
	type audio struct {
		Data   string `json:"data"`
		Format string `json:"format"`
	}
	type part struct {
		Type       string `json:"type"`
		Text       string `json:"text,omitempty"`
		ImageURL   *url   `json:"image_url,omitempty"`
		File       *file  `json:"file,omitempty"`
		InputAudio *audio `json:"input_audio,omitempty"`
	}
	dataURL := func(mime string, data []byte) string {
		return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
	}
	var parts []part
	for _, p := range c.parts {
		w := part{Type: p.Type, Text: p.Text}
		switch p.Type {
		case "image_url":
			w.ImageURL = &url{URL: p.URL}
			if p.Data != nil {
				w.ImageURL.URL = dataURL(p.MIME, p.Data)
			}
		case "file":
			w.File = &file{Filename: p.Filename, FileData: dataURL(p.MIME, p.Data)}
		case "input_audio":
			w.InputAudio = &audio{Data: base64.StdEncoding.EncodeToString(p.Data), Format: p.Format}
		}
		parts = append(parts, w)
	}
	return struct {
		Role    string `json:"role"`
		Content []part `json:"content"`
	}{c.Role, parts}
}

func body(t testing.TB, m *Model, req model.Request) []byte {
	t.Helper()
	p, err := m.params(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// turns is a thread of remote-tool turns, as a graph's state grows: each
// turn a user message, the model's two calls, a tool message with the
// server tool's result and the pending remote call, the client's result,
// and the answer. Until the client's result comes, the model is sent a
// filler for the pending call (message.ForModel), which the result then
// replaces: an earlier message's rewrite changes.
func turns(n int, tag string) []message.Message {
	var out []message.Message
	for i := range n {
		id := func(s string) string { return fmt.Sprintf("%s-%d-%s", tag, i, s) }
		calc, clip := id("c0"), id("c1")
		out = append(out,
			message.Message{ID: id("u"), Role: message.RoleUser, Content: []message.Block{message.TextBlock{Text: fmt.Sprintf("turn %d <&> \u2028 %q", i, tag)}}},
			message.Message{ID: id("a"), Role: message.RoleAssistant, Content: []message.Block{
				message.ToolCallBlock{ID: calc, Name: "calculator", Arguments: json.RawMessage(`{"expression":"2+3*4"}`)},
				message.ToolCallBlock{ID: clip, Name: "read_clipboard", Arguments: json.RawMessage(`{}`)}}},
			message.Message{ID: id("t"), Role: message.RoleTool, Content: []message.Block{
				message.ToolResultBlock{ToolCallID: calc, Content: json.RawMessage(`{"result":14}`)},
				message.RemoteToolCallBlock{ID: clip, Name: "read_clipboard", Arguments: json.RawMessage(`{}`), Node: "tools"}}},
			message.Message{ID: id("r"), Role: message.RoleTool, Content: []message.Block{
				message.ToolResultBlock{ToolCallID: clip, Content: json.RawMessage(`{"text":"hi"}`)}}},
			message.Message{ID: id("z"), Role: message.RoleAssistant, Content: []message.Block{message.TextBlock{Text: "14, and hi"}}},
		)
	}
	return out
}

// A thread's every call, as it grows one message at a time (through the
// pause, whose filler the client's result replaces), is the body the whole
// thread encoded anew would be; so is a thread deleted and re-created
// under its id with other messages, and a call without a thread id.
func TestHistoriesEncodeWhatTheWholeThreadWould(t *testing.T) {
	m, err := New(Config{Model: "gpt-test", BaseURL: "http://127.0.0.1:1/v1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	tools := []sdk.ToolSpec{{Name: "calculator", Description: "calc", Parameters: json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string"}}}`)}}
	thread := turns(12, "one")
	for n := 1; n <= len(thread); n++ {
		req := model.Request{ThreadID: "t", Messages: thread[:n], Tools: tools}
		if got, want := body(t, m, req), wholeBody(t, m, req); !bytes.Equal(got, want) {
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
		{Messages: thread},
	} {
		if got, want := body(t, m, req), wholeBody(t, m, req); !bytes.Equal(got, want) {
			t.Fatalf("%d messages of thread %q:\ngot  %s\nwant %s", len(req.Messages), req.ThreadID, got, want)
		}
	}
}

// Histories are bounded in number and in bytes, the least recently used
// going first, and short threads keep none.
func TestHistoriesBounded(t *testing.T) {
	m, err := New(Config{Model: "gpt-test", BaseURL: "http://127.0.0.1:1/v1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	const max, maxBytes = memo.DefaultThreads, memo.DefaultBytes
	hs := &m.histories
	body(t, m, model.Request{ThreadID: "short", Messages: turns(1, "s")})
	if hs.Len() != 0 {
		t.Fatalf("a thread of 5 messages keeps its history (%d kept)", hs.Len())
	}
	thread := turns(8, "b")
	for i := range max + 10 {
		body(t, m, model.Request{ThreadID: fmt.Sprint("t", i), Messages: thread})
	}
	if hs.Len() != max {
		t.Fatalf("%d histories kept, want %d", hs.Len(), max)
	}
	if hs.Has("t0") {
		t.Fatal("the least recently used history was kept")
	}
	one := hs.Get(fmt.Sprint("t", max+9))
	if hs.Bytes() != max*one.Bytes() || one.Bytes() < 1000 {
		t.Fatalf("%d bytes counted for %d histories of %d", hs.Bytes(), max, one.Bytes())
	}
	// One history larger than the byte bound is kept alone.
	big := turns(1, "x")
	big[0].Content = []message.Block{message.TextBlock{Text: string(bytes.Repeat([]byte("a"), maxBytes))}}
	long := append(turns(8, "y"), big[0])
	body(t, m, model.Request{ThreadID: "big", Messages: long})
	if hs.Len() != 1 || !hs.Has("big") {
		t.Fatalf("%d histories after one over the byte bound, want that one alone", hs.Len())
	}
}

// mediaTurns is turns with media: every other user message carries an
// image, and the client's result a PDF, stored as blobs in blobs.
func mediaTurns(n int, tag string, blobs map[string][]byte) []message.Message {
	out := turns(n, tag)
	ref := func(data string) string {
		r := fmt.Sprintf("sha256:%064x", len(blobs)+1)
		blobs[r] = []byte(data)
		return r
	}
	for i := range out {
		m := &out[i]
		switch {
		case m.Role == message.RoleUser && i%10 == 0:
			m.Content = append(m.Content[:1:1], message.MediaBlock{Kind: message.TypeImage, MimeType: "image/png", Blob: ref("png " + m.ID), Size: 100})
		case m.Role == message.RoleUser:
			m.Content = append(m.Content[:1:1],
				message.MediaBlock{Kind: message.TypeAudio, MimeType: "audio/mpeg", Blob: ref("mp3 " + m.ID), Size: 100},
				message.MediaBlock{Kind: message.TypeImage, MimeType: "image/jpeg", URL: "https://example.com/a.jpg?x=<&>"},
				message.TextBlock{Text: "and <these> \u2028 \"files\""},
				message.MediaBlock{Kind: message.TypeFile, MimeType: "text/plain", Filename: "notes.txt", Blob: ref("txt " + m.ID), Size: 5},
				message.MediaBlock{Kind: message.TypeFile, MimeType: "application/pdf", Filename: "a \"<b>\" \u2028.pdf", Data: []byte("%PDF-1.4 " + m.ID)})
		case m.Role == message.RoleTool && len(m.Content) == 1:
			r := m.Content[0].(message.ToolResultBlock)
			r.Attachments = []message.MediaBlock{{Kind: message.TypeFile, MimeType: "application/pdf", Filename: "r.pdf", Blob: ref("pdf " + m.ID), Size: 100}}
			m.Content = []message.Block{r}
		}
	}
	return out
}

// With media too, every call is the body the whole thread encoded anew
// would be, through the pause (the client's result, with its attachment,
// replaces the filler), and each blob is read once.
func TestHistoriesEncodeMediaAsTheWholeThreadWould(t *testing.T) {
	m, err := New(Config{Model: "gpt-test", BaseURL: "http://127.0.0.1:1/v1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	blobs := map[string][]byte{}
	reads := map[string]int{}
	reader := model.BlobReaderFunc(func(_ context.Context, ref string) ([]byte, error) {
		reads[ref]++
		return blobs[ref], nil
	})
	thread := mediaTurns(12, "one", blobs)
	for n := 1; n <= len(thread); n++ {
		req := model.Request{ThreadID: "t", Messages: thread[:n], Blobs: reader}
		if got, want := body(t, m, req), wholeBody(t, m, req, blobs); !bytes.Equal(got, want) {
			t.Fatalf("%d messages:\ngot  %s\nwant %s", n, got, want)
		}
	}
	if len(reads) != len(blobs)-6 { // the text files are not sent
		t.Fatalf("%d blobs read of %d", len(reads), len(blobs))
	}
	for ref, n := range reads {
		if n != 1 {
			t.Fatalf("%s read %d times", ref, n)
		}
	}
	if !bytes.Contains(body(t, m, model.Request{ThreadID: "t", Messages: thread, Blobs: reader}), []byte(`"type":"file","file":{"filename":"r.pdf","file_data":"data:application/pdf;base64,`)) {
		t.Fatal("no file part")
	}
}

// Calls on one thread at once each get the whole thread's body; blobs are
// read with no lock held, so they may be read more than once, never
// mixed up.
func TestHistoriesConcurrentMedia(t *testing.T) {
	m, err := New(Config{Model: "gpt-test", BaseURL: "http://127.0.0.1:1/v1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	blobs := map[string][]byte{}
	thread := mediaTurns(6, "c", blobs)
	reader := model.BlobReaderFunc(func(_ context.Context, ref string) ([]byte, error) { return blobs[ref], nil })
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1 + g%3; n <= len(thread); n += 3 {
				req := model.Request{ThreadID: "t", Messages: thread[:n], Blobs: reader}
				if got, want := body(t, m, req), wholeBody(t, m, req, blobs); !bytes.Equal(got, want) {
					t.Errorf("%d messages:\ngot  %s\nwant %s", n, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}
