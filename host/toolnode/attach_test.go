package toolnode_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/sdk"
)

var (
	pngBytes = encodePNG()
	wavBytes = []byte("RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00\x80\x3e\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00")
	pdfBytes = []byte("%PDF-1.7\n%%EOF\n")
)

// encodePNG is a real 3×2 PNG: the host reads an image's header before it
// keeps it.
func encodePNG() []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 3, 2))); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// attaching answers "media" with an image, a sound and a file beside its
// content, "failed" with an error result and a screenshot, and "path"
// with an attachment whose name is a path.
type attaching struct{}

func (attaching) Metadata(context.Context, sdk.MetadataRequest) (sdk.MetadataResponse, error) {
	return sdk.MetadataResponse{Name: "attaching", Tools: []sdk.ToolSpec{spec("media"), spec("failed"), spec("path")}}, nil
}

func (attaching) CallTool(_ context.Context, req sdk.CallToolRequest) (sdk.CallToolResponse, error) {
	switch req.Name {
	case "media":
		return sdk.CallToolResponse{Content: json.RawMessage(`{"pages":1}`), Attachments: []sdk.Attachment{
			sdk.Image("Image/PNG", pngBytes), sdk.File("audio/wav", "", wavBytes), sdk.File("application/pdf", "report.pdf", pdfBytes)}}, nil
	case "failed":
		return sdk.CallToolResponse{Content: json.RawMessage(`"the page did not load"`), IsError: true,
			Attachments: []sdk.Attachment{sdk.Image("image/png", pngBytes)}}, nil
	}
	return sdk.CallToolResponse{Content: json.RawMessage(`1`), Attachments: []sdk.Attachment{sdk.File("text/plain", "../../etc/passwd", []byte("x"))}}, nil
}

// A provider's attachments become the tool result's media blocks, in
// order, their kind from their media type, their bytes stored as blobs of
// the thread; an error result keeps its attachments.
// Attachments the host refuses make an error result naming the problem,
// and none of them reaches the thread.
func TestAttachmentsBecomeMediaBlocks(t *testing.T) {
	calls := 0
	m := model.Func(func(ctx context.Context, req model.Request) (model.Response, error) {
		calls++
		if calls > 1 {
			return model.Response{Message: message.Text(message.RoleAssistant, "done")}, nil
		}
		return model.Response{Message: message.Message{Role: message.RoleAssistant, Content: []message.Block{
			message.ToolCallBlock{ID: "c1", Name: "media", Arguments: json.RawMessage(`{}`)},
			message.ToolCallBlock{ID: "c2", Name: "failed", Arguments: json.RawMessage(`{}`)},
			message.ToolCallBlock{ID: "c3", Name: "path", Arguments: json.RawMessage(`{}`)}}}}, nil
	})
	sg, err := agent.React(context.Background(), agent.Env{Model: m, Providers: map[string][]sdk.Provider{"tools": {attaching{}}}})
	if err != nil {
		t.Fatal(err)
	}
	app, err := thread.Compile(sg, checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	res, err := app.Invoke(context.Background(), []message.Message{message.Text(message.RoleUser, "go")}, thread.RunConfig{ThreadID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var results []message.ToolResultBlock
	for _, msg := range res.Messages {
		results = append(results, msg.ToolResults()...)
	}
	if len(results) != 3 {
		t.Fatalf("results %+v, want three", results)
	}
	want := []message.MediaBlock{
		{Kind: message.TypeImage, MimeType: "image/png", Data: pngBytes, Width: 3, Height: 2},
		{Kind: message.TypeAudio, MimeType: "audio/wav", Data: wavBytes},
		{Kind: message.TypeFile, MimeType: "application/pdf", Filename: "report.pdf", Data: pdfBytes},
	}
	if r := results[0]; r.IsError || string(r.Content) != `{"pages":1}` || !sameMedia(t, app, r.Attachments, want) {
		t.Errorf("media: %s is_error=%v, attachments %+v; want %+v", r.Content, r.IsError, r.Attachments, want)
	}
	if r := results[1]; !r.IsError || !sameMedia(t, app, r.Attachments, want[:1]) {
		t.Errorf("failed: is_error=%v, attachments %+v", r.IsError, r.Attachments)
	}
	if r := results[2]; !r.IsError || r.Attachments != nil ||
		!strings.Contains(string(r.Content), `provider \"attaching\" returned a result for tool \"path\" with attachments the host refuses: attachments[0].filename: \"../../etc/passwd\" is a path`) {
		t.Errorf("path: %s is_error=%v, attachments %+v", r.Content, r.IsError, r.Attachments)
	}
}

// sameMedia reports whether got are want as the thread keeps them: each a
// reference to the blob of want's bytes, which the thread holds, with its
// size (and an image's pixels), and no bytes of its own.
func sameMedia(t *testing.T, app *thread.App, got, want []message.MediaBlock) bool {
	t.Helper()
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		sum := sha256.Sum256(w.Data)
		ref := message.BlobPrefix + hex.EncodeToString(sum[:])
		if g.Kind != w.Kind || g.MimeType != w.MimeType || g.Filename != w.Filename || g.Data != nil || g.URL != "" ||
			g.Blob != ref || g.Size != int64(len(w.Data)) || g.Width != w.Width || g.Height != w.Height {
			return false
		}
		b, err := app.Blob(context.Background(), "", "a", ref)
		if err != nil || !bytes.Equal(b.Data, w.Data) {
			t.Errorf("blob %s of the thread: %v", ref, err)
			return false
		}
	}
	return true
}
