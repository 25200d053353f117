package anthropic_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"strings"
	"sync"
	"testing"

	anth "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/model/anthropic/anthropictest"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

// blobStore is a thread's blobs for tests: a map, counting reads.
type blobStore struct {
	mu    sync.Mutex
	bytes map[string][]byte
	reads int
	fail  error
}

func (s *blobStore) put(data []byte) string {
	sum := sha256.Sum256(data)
	ref := message.BlobPrefix + hex.EncodeToString(sum[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bytes == nil {
		s.bytes = map[string][]byte{}
	}
	s.bytes[ref] = data
	return ref
}

func (s *blobStore) ReadBlob(_ context.Context, ref string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.fail != nil {
		return nil, s.fail
	}
	if b, ok := s.bytes[ref]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("no blob %s in this thread", ref)
}

var (
	pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR fake image bytes")
	pdfBytes = []byte("%PDF-1.4\n1 0 obj << >> endobj\n%%EOF\n")
)

func stored(s *blobStore, kind, mime, name string, data []byte) message.MediaBlock {
	b := message.MediaBlock{Kind: kind, MimeType: mime, Filename: name, Blob: s.put(data), Size: int64(len(data))}
	if kind == message.TypeImage {
		b.Width, b.Height = 64, 48
	}
	return b
}

// A user's image reaches the API as an image block with a base64 source,
// a PDF as a document titled with its name, a text file as a text
// document, and a sound as a stand-in (the API takes none); the SDK's own
// types read the body.
func TestUserMediaBlocks(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := anthropictest.NewServer(t, anthropictest.Text("A cat."))
		blobs := &blobStore{}
		req := model.Request{ThreadID: "t-user", Blobs: blobs, Messages: []message.Message{{ID: "u1", Role: message.RoleUser, Content: []message.Block{
			stored(blobs, message.TypeImage, "image/png", "cat.png", pngBytes),
			stored(blobs, message.TypeFile, "application/pdf", "a.pdf", pdfBytes),
			stored(blobs, message.TypeFile, "text/plain", "notes.txt", []byte("buy <milk>")),
			stored(blobs, message.TypeAudio, "audio/wav", "", []byte("RIFF")),
			message.TextBlock{Text: "what is in these?"},
		}}}}
		if stream {
			req.OnDelta = func(string) {}
		}
		if _, err := newModel(t, srv).Generate(ctx, req); err != nil {
			t.Fatal(err)
		}
		got := srv.Requests()[0]
		c := got.Messages[0].Content
		if len(c) != 5 {
			t.Fatalf("content %+v", c)
		}
		if c[0].Type != "image" || c[0].Source != "base64" || c[0].MediaType != "image/png" || !bytes.Equal(c[0].Bytes, pngBytes) {
			t.Errorf("block 0 %+v, want the image, base64", c[0])
		}
		if c[1].Type != "document" || c[1].Source != "base64" || c[1].MediaType != "application/pdf" || !bytes.Equal(c[1].Bytes, pdfBytes) || c[1].Title != "a.pdf" {
			t.Errorf("block 1 %+v, want the PDF as a document", c[1])
		}
		if c[2].Type != "document" || c[2].Source != "text" || c[2].Data != "buy <milk>" || c[2].Title != "notes.txt" {
			t.Errorf("block 2 %+v, want the text file as a text document", c[2])
		}
		if c[3].Type != "text" || c[3].Text != "[audio audio/wav 4 bytes: not sent: the Messages API takes no audio]" {
			t.Errorf("block 3 %+v, want a stand-in", c[3])
		}
		if c[4].Text != "what is in these?" {
			t.Errorf("block 4 %+v", c[4])
		}
		var p anth.MessageNewParams
		if err := json.Unmarshal(got.Body, &p); err != nil {
			t.Fatal(err)
		}
		u := p.Messages[0].OfUser.Content
		if u[0].OfImage == nil || u[0].OfImage.Source.OfBase64 == nil || u[1].OfDocument == nil || u[1].OfDocument.Source.OfBase64 == nil || u[2].OfDocument.Source.OfText == nil {
			t.Fatalf("the SDK reads %+v", u)
		}
	}
}

// A remote tool's attachments go inside its tool_result, before its text,
// in the one user turn that answers the calls; the SDK reads them as the
// result's image and document.
func TestToolResultAttachments(t *testing.T) {
	srv := anthropictest.NewServer(t, anthropictest.Text("A one-page report and a cat."))
	blobs := &blobStore{}
	pdf := stored(blobs, message.TypeFile, "application/pdf", "report.pdf", pdfBytes)
	img := stored(blobs, message.TypeImage, "image/png", "", pngBytes)
	msgs := []message.Message{
		{ID: "u1", Role: message.RoleUser, Content: []message.Block{message.TextBlock{Text: "fetch and look"}}},
		{ID: "a1", Role: message.RoleAssistant, Content: []message.Block{
			message.ToolCallBlock{ID: "c1", Name: "fetch", Arguments: json.RawMessage(`{}`)},
			message.ToolCallBlock{ID: "c2", Name: "add", Arguments: json.RawMessage(`{"a":1,"b":2}`)},
		}},
		{ID: "t1", Role: message.RoleTool, Content: []message.Block{
			message.ToolResultBlock{ToolCallID: "c1", Content: json.RawMessage(`{"pages":1}`), Attachments: []message.MediaBlock{pdf, img}, IsError: true},
			message.ToolResultBlock{ToolCallID: "c2", Content: json.RawMessage(`3`)},
		}},
	}
	if _, err := newModel(t, srv).Generate(ctx, model.Request{ThreadID: "t-tools", Blobs: blobs, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
	if len(got.Messages) != 3 {
		t.Fatalf("turns %+v", got.Messages)
	}
	results := got.Messages[2].Content
	if len(results) != 2 || results[0].Type != "tool_result" || results[1].Type != "tool_result" || results[1].Content != "3" || results[1].Parts != nil {
		t.Fatalf("the user turn %+v: want two tool_results, the second as before", results)
	}
	r := results[0]
	if !r.IsError || r.Content != `{"pages":1}` || len(r.Parts) != 3 ||
		r.Parts[0].Type != "document" || !bytes.Equal(r.Parts[0].Bytes, pdfBytes) || r.Parts[0].Title != "report.pdf" ||
		r.Parts[1].Type != "image" || r.Parts[1].MediaType != "image/png" || !bytes.Equal(r.Parts[1].Bytes, pngBytes) ||
		r.Parts[2].Type != "text" {
		t.Fatalf("tool_result %+v: want the document, the image, then the text", r)
	}
	var p anth.MessageNewParams
	if err := json.Unmarshal(got.Body, &p); err != nil {
		t.Fatal(err)
	}
	tr := p.Messages[2].OfUser.Content[0].OfToolResult
	if tr == nil || len(tr.Content) != 3 || tr.Content[0].OfDocument == nil || tr.Content[1].OfImage == nil || tr.Content[2].OfText == nil {
		t.Fatalf("the SDK reads the tool_result as %+v", tr)
	}
}

// An image the API would refuse (over 5 MB of base64) is a stand-in, on
// every turn, so the thread goes on; more than 20 images send the newest
// 20; a blob that cannot be read is an error naming it.
func TestMediaLimits(t *testing.T) {
	srv := anthropictest.NewServer(t)
	srv.Handle(func(anthropictest.Request) anthropictest.Reply { return anthropictest.Text("ok") })
	m := newModel(t, srv)
	blobs := &blobStore{}
	big := stored(blobs, message.TypeImage, "image/png", "big.png", bytes.Repeat([]byte{7}, 4_000_000))
	var msgs []message.Message
	for i := range 22 {
		img := stored(blobs, message.TypeImage, "image/png", "", append([]byte(fmt.Sprint(i)), pngBytes...))
		content := []message.Block{message.TextBlock{Text: fmt.Sprint("image ", i)}, img}
		if i == 0 {
			content = append(content, big)
		}
		msgs = append(msgs, message.Message{ID: fmt.Sprint("u", i), Role: message.RoleUser, Content: content},
			message.Message{ID: fmt.Sprint("a", i), Role: message.RoleAssistant, Content: []message.Block{message.TextBlock{Text: "ok"}}})
	}
	if _, err := m.Generate(ctx, model.Request{ThreadID: "t-limits", Blobs: blobs, Messages: msgs}); err != nil {
		t.Fatal(err) // the fake server refuses an image over 5 MB of base64
	}
	turns := srv.Requests()[0].Messages
	if c := turns[0].Content; len(c) != 3 || c[1].Type != "text" || !strings.Contains(c[1].Text, "left out: a request carries the newest media only") ||
		c[2].Text != "[image image/png big.png 64x48: not sent: larger than the 5 MB (of base64) an image may be]" {
		t.Fatalf("the first turn %+v", c)
	}
	if c := turns[2].Content; c[1].Type != "text" {
		t.Fatalf("the second turn's image was sent: %+v (want the newest 20 only)", c)
	}
	for i := 2; i < 22; i++ {
		if c := turns[2*i].Content; c[1].Type != "image" {
			t.Fatalf("turn %d: %+v", i, c)
		}
	}

	blobs.fail = errors.New("disk on fire")
	img := stored(blobs, message.TypeImage, "image/png", "", []byte("new"))
	_, err := m.Generate(ctx, model.Request{ThreadID: "t-limits", Blobs: blobs, Messages: append(msgs, message.Message{ID: "u99", Role: message.RoleUser, Content: []message.Block{img}})})
	if err == nil || !strings.Contains(err.Error(), "anthropic: cannot read the image blob "+img.Blob+` of message "u99": disk on fire`) {
		t.Fatalf("error %v", err)
	}
}

// realPNG is a w×h PNG, as the host's ingest takes in (it reads the
// header).
func realPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The prebuilt agent against the wire, with media sent as data and taken
// in by the graph: the user's image arrives as a base64 image block; the
// graph pauses for a remote tool, whose result comes back from the client
// with a PDF attached, and the next request carries the PDF as a document
// inside the tool_result. The model reads the bytes through the run.
func TestReactRemoteAttachment(t *testing.T) {
	srv := anthropictest.NewServer(t,
		anthropictest.ToolUses(anthropictest.Use("toolu_1", "read_clipboard", `{}`)),
		anthropictest.Text("A cat, and your clipboard holds a one-page PDF."),
	)
	g, err := agent.React(ctx, agent.Env{Model: newModel(t, srv)})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AttachRemoteTools([]graph.RemoteToolConfig{{Node: "tools", Name: clipboardTool.Name, Description: clipboardTool.Description, Parameters: clipboardTool.Parameters}}); err != nil {
		t.Fatal(err)
	}
	app, err := thread.Compile(g, checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	cfg := thread.RunConfig{ThreadID: "media"}
	cat := realPNG(t, 3, 2)
	res, _, _ := stream(t, app, []message.Message{{Role: message.RoleUser, Content: []message.Block{
		message.TextBlock{Text: "what is in this image, and on my clipboard?"},
		message.MediaBlock{Kind: message.TypeImage, MimeType: "image/png", Data: cat}}}}, cfg)
	if res.Status != graph.StatusInterrupted || len(res.RemoteToolCalls) != 1 {
		t.Fatalf("status %q, remote calls %+v", res.Status, res.RemoteToolCalls)
	}
	if b := srv.Requests()[0].Messages[0].Content[1]; b.Type != "image" || b.Source != "base64" || b.MediaType != "image/png" || !bytes.Equal(b.Bytes, cat) {
		t.Fatalf("the user's image arrived as %+v", b)
	}
	res, _, _ = stream(t, app, []message.Message{{Role: message.RoleTool, Content: []message.Block{
		message.ToolResultBlock{ToolCallID: res.RemoteToolCalls[0].ID, Content: json.RawMessage(`{"text":"see the file"}`),
			Attachments: []message.MediaBlock{{Kind: message.TypeFile, MimeType: "application/pdf", Filename: "clip.pdf", Data: pdfBytes}}},
	}}}, cfg)
	if res.Status != graph.StatusCompleted {
		t.Fatalf("status after resume %q", res.Status)
	}
	turns := srv.Requests()[1].Messages
	r := turns[len(turns)-1].Content[0]
	if r.Type != "tool_result" || len(r.Parts) != 2 || r.Parts[0].Type != "document" || r.Parts[0].Title != "clip.pdf" || !bytes.Equal(r.Parts[0].Bytes, pdfBytes) ||
		r.Parts[1].Text != `{"text":"see the file"}` {
		t.Fatalf("the tool_result %+v: want the PDF as a document inside it", r)
	}
	if b := turns[0].Content[1]; b.Type != "image" || !bytes.Equal(b.Bytes, cat) {
		t.Fatalf("the user's image is gone from the history: %+v", b)
	}
}
