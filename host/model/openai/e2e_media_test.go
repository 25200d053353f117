package openai_test

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model/openai"
	"github.com/tenxgraph/tenxgraph/host/model/openai/openaitest"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

// realPNG is a w×h PNG, as the host's ingest takes in (it reads the
// header).
func realPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The prebuilt agent against the wire, with media sent as data and taken
// in by the graph (stored once, the thread holding references): the
// user's image reaches the server as an image_url part; the graph pauses
// for a remote tool, whose result comes back from the client with a PDF
// and an image attached, and the next request carries them as a file part
// and an image_url part in a user message after the tool message, the
// first image still in its place, with no base64 in any text. The model
// reads the bytes through the run (Request.Blobs), as under serve.
func TestReactMediaEndToEnd(t *testing.T) {
	srv := openaitest.NewServer(t,
		openaitest.Calls(openaitest.Call("call_clip", "read_clipboard", `{}`)),
		openaitest.Text("A cat, a one-page report and a dog."),
	)
	m, err := openai.New(openai.Config{Model: "test-model", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	g, err := agent.React(ctx, agent.Env{Model: m})
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

	cat, dog := realPNG(t, 4, 3), realPNG(t, 5, 2)
	res, _, _ := stream(t, app, []message.Message{{Role: message.RoleUser, Content: []message.Block{
		message.TextBlock{Text: "what is in this image, and on my clipboard?"},
		message.MediaBlock{Kind: message.TypeImage, MimeType: "image/png", Data: cat}}}}, cfg)
	if res.Status != graph.StatusInterrupted || len(res.RemoteToolCalls) != 1 {
		t.Fatalf("status %q, remote calls %+v", res.Status, res.RemoteToolCalls)
	}
	first := srv.Requests()[0].Messages
	if len(first) != 1 || len(first[0].Parts) != 2 || first[0].Parts[1].Type != "image_url" || !bytes.Equal(first[0].Parts[1].Data, cat) {
		t.Fatalf("first request %+v: want the user's image as an image_url part", first)
	}

	res, _, _ = stream(t, app, []message.Message{{Role: message.RoleTool, Content: []message.Block{
		message.ToolResultBlock{ToolCallID: res.RemoteToolCalls[0].ID, Content: json.RawMessage(`{"text":"see the file"}`), Attachments: []message.MediaBlock{
			{Kind: message.TypeFile, MimeType: "application/pdf", Filename: "clip.pdf", Data: pdfBytes},
			{Kind: message.TypeImage, MimeType: "image/png", Data: dog}}},
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
	if !bytes.Equal(second[0].Parts[1].Data, cat) {
		t.Fatalf("the first image is gone from the history: %+v", second[0])
	}
	if tool := second[2].Content; !strings.HasPrefix(tool, `{"text":"see the file"}`) || !strings.Contains(tool, "[file application/pdf clip.pdf 36 bytes] [image image/png 5x2]") || strings.Contains(tool, "JVBER") {
		t.Fatalf("tool message %q", tool)
	}
	p := second[3].Parts
	if len(p) != 3 || p[1].Type != "file" || p[1].Filename != "clip.pdf" || !bytes.Equal(p[1].Data, pdfBytes) ||
		p[2].Type != "image_url" || p[2].MimeType != "image/png" || !bytes.Equal(p[2].Data, dog) {
		t.Fatalf("the attachments' message %+v: want the PDF as a file part, the image as an image_url part", p)
	}
	// The thread keeps references, not bytes.
	th, err := app.Thread(ctx, "media")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(th.Messages)
	if bytes.Contains(raw, []byte(`"data"`)) || bytes.Count(raw, []byte(`"blob":"sha256:`)) != 3 {
		t.Fatalf("the thread holds %s", raw)
	}
}
