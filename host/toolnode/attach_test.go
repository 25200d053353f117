package toolnode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/sdk"
)

var (
	pngBytes = []byte("\x89PNG\r\n\x1a\n....")
	wavBytes = []byte("RIFF....WAVEfmt ")
	pdfBytes = []byte("%PDF-1.7\n...")
)

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
// order, their kind from their media type, their bytes as data (which the
// host stores when the run saves); an error result keeps its attachments.
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
	app, err := sg.Compile(checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	res, err := app.Invoke(context.Background(), []message.Message{message.Text(message.RoleUser, "go")}, graph.RunConfig{ThreadID: "a"})
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
		{Kind: message.TypeImage, MimeType: "image/png", Data: pngBytes},
		{Kind: message.TypeAudio, MimeType: "audio/wav", Data: wavBytes},
		{Kind: message.TypeFile, MimeType: "application/pdf", Filename: "report.pdf", Data: pdfBytes},
	}
	if r := results[0]; r.IsError || string(r.Content) != `{"pages":1}` || !sameMedia(r.Attachments, want) {
		t.Errorf("media: %s is_error=%v, attachments %+v; want %+v", r.Content, r.IsError, r.Attachments, want)
	}
	if r := results[1]; !r.IsError || !sameMedia(r.Attachments, want[:1]) {
		t.Errorf("failed: is_error=%v, attachments %+v", r.IsError, r.Attachments)
	}
	if r := results[2]; !r.IsError || r.Attachments != nil ||
		!strings.Contains(string(r.Content), `provider \"attaching\" returned a result for tool \"path\" with attachments the host refuses: attachments[0].filename: \"../../etc/passwd\" is a path`) {
		t.Errorf("path: %s is_error=%v, attachments %+v", r.Content, r.IsError, r.Attachments)
	}
}

func sameMedia(got, want []message.MediaBlock) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Kind != w.Kind || g.MimeType != w.MimeType || g.Filename != w.Filename || !bytes.Equal(g.Data, w.Data) || g.Blob != "" || g.URL != "" {
			return false
		}
	}
	return true
}
