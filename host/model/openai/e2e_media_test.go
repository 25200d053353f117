package openai_test

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
	"github.com/tenxgraph/tenxgraph/host/model/openai"
	"github.com/tenxgraph/tenxgraph/host/model/openai/openaitest"
)

// The prebuilt agent against the wire, with media: the graph pauses for a
// remote tool, the client's result comes back with a PDF and an image
// attached, and the next request carries them as a file part and an
// image_url part in a user message after the tool message, with no base64
// in any text; the thread keeps references only.
func TestReactMediaEndToEnd(t *testing.T) {
	srv := openaitest.NewServer(t,
		openaitest.Calls(openaitest.Call("call_clip", "read_clipboard", `{}`)),
		openaitest.Text("A cat, and a one-page report."),
	)
	m, err := openai.New(openai.Config{Model: "test-model", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	blobs := newBlobs()
	// The host gives the model its thread's blobs.
	withBlobs := model.Func(func(ctx context.Context, req model.Request) (model.Response, error) {
		req.Blobs = blobs
		return m.Generate(ctx, req)
	})
	g, err := agent.React(ctx, agent.Env{Model: withBlobs})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AttachRemoteTools([]graph.RemoteToolConfig{{Node: "tools", Name: clipboardTool.Name, Description: clipboardTool.Description, Parameters: clipboardTool.Parameters}}); err != nil {
		t.Fatal(err)
	}
	app, err := g.Compile(checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	cfg := graph.RunConfig{ThreadID: "media"}

	res, _, _ := stream(t, app, []message.Message{message.Text(message.RoleUser, "what is on my clipboard?")}, cfg)
	if res.Status != graph.StatusInterrupted || len(res.RemoteToolCalls) != 1 {
		t.Fatalf("status %q, remote calls %+v", res.Status, res.RemoteToolCalls)
	}

	img := stored(blobs, message.TypeImage, "image/png", "cat.png", pngBytes)
	pdf := stored(blobs, message.TypeFile, "application/pdf", "clip.pdf", pdfBytes)
	res, _, _ = stream(t, app, []message.Message{{Role: message.RoleTool, Content: []message.Block{
		message.ToolResultBlock{ToolCallID: res.RemoteToolCalls[0].ID, Content: json.RawMessage(`{"text":"see the file"}`), Attachments: []message.MediaBlock{pdf, img}},
	}}}, cfg)
	if res.Status != graph.StatusCompleted {
		t.Fatalf("status after resume %q", res.Status)
	}
	second := srv.Requests()[1].Messages
	roles := make([]string, len(second))
	for i, m := range second {
		roles[i] = m.Role
	}
	if strings.Join(roles, " ") != "user assistant tool user" {
		t.Fatalf("second request's roles %v", roles)
	}
	if tool := second[2].Content; !strings.HasPrefix(tool, `{"text":"see the file"}`) || !strings.Contains(tool, "[file application/pdf clip.pdf 36 bytes]") || strings.Contains(tool, "JVBER") {
		t.Fatalf("tool message %q", tool)
	}
	p := second[3].Parts
	if len(p) != 3 || p[1].Type != "file" || p[1].Filename != "clip.pdf" || !bytes.Equal(p[1].Data, pdfBytes) ||
		p[2].Type != "image_url" || p[2].MimeType != "image/png" || !bytes.Equal(p[2].Data, pngBytes) {
		t.Fatalf("the attachments' message %+v: want the PDF as a file part, the image as an image_url part", p)
	}
	// The thread keeps references, not bytes.
	th, err := app.Thread(ctx, "media")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(th.Messages)
	if bytes.Contains(raw, []byte("base64")) || !bytes.Contains(raw, []byte(pdf.Blob)) {
		t.Fatalf("the thread holds %s", raw)
	}
}
