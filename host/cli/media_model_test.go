package cli_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/model/anthropic/anthropictest"
	"github.com/tenxgraph/tenxgraph/host/model/openai/openaitest"
)

// The real binary, with each model provider against its fake server over
// HTTP: a user's image sent as data is stored, the thread holds its
// reference, and the model gets the bytes (OpenAI: an image_url part;
// Anthropic: a base64 image block); a remote tool's PDF, sent back by the
// client as data, reaches the model in the next call (OpenAI: a file part
// in a user message after the tool message; Anthropic: a document inside
// the tool_result), and the thread's blob route serves it.
func TestMediaReachesTheModels(t *testing.T) {
	bin, _ := built(t)
	var pic bytes.Buffer
	if err := png.Encode(&pic, image.NewGray(image.Rect(0, 0, 3, 2))); err != nil {
		t.Fatal(err)
	}
	pdf := []byte("%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n")
	b64 := base64.StdEncoding.EncodeToString

	openaiSrv := openaitest.NewServer(t,
		openaitest.Calls(openaitest.Call("call_1", "read_clipboard", `{}`)),
		openaitest.Text("A picture and a PDF."))
	anthropicSrv := anthropictest.NewServer(t,
		anthropictest.ToolUses(anthropictest.Use("toolu_1", "read_clipboard", `{}`)),
		anthropictest.Text("A picture and a PDF."))

	for _, c := range []struct {
		provider, base string
		check          func(t *testing.T)
	}{
		{"openai", openaiSrv.URL, func(t *testing.T) {
			reqs := openaiSrv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls", len(reqs))
			}
			user := reqs[0].Messages[0]
			if len(user.Parts) != 2 || user.Parts[1].Type != "image_url" || !bytes.Equal(user.Parts[1].Data, pic.Bytes()) {
				t.Fatalf("the user's message reached the model as %+v", user)
			}
			msgs := reqs[1].Messages
			last := msgs[len(msgs)-1]
			if tool := msgs[len(msgs)-2]; tool.Role != "tool" || !strings.Contains(tool.Content, "[file application/pdf clip.pdf") {
				t.Fatalf("the tool message %+v", tool)
			}
			if last.Role != "user" || len(last.Parts) != 2 || last.Parts[1].Type != "file" || !bytes.Equal(last.Parts[1].Data, pdf) {
				t.Fatalf("the message after the tool message %+v: want the PDF as a file part", last)
			}
		}},
		{"anthropic", anthropicSrv.URL, func(t *testing.T) {
			reqs := anthropicSrv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls", len(reqs))
			}
			if b := reqs[0].Messages[0].Content[1]; b.Type != "image" || b.Source != "base64" || !bytes.Equal(b.Bytes, pic.Bytes()) {
				t.Fatalf("the user's image reached the model as %+v", b)
			}
			turns := reqs[1].Messages
			r := turns[len(turns)-1].Content[0]
			if r.Type != "tool_result" || len(r.Parts) != 2 || r.Parts[0].Type != "document" || !bytes.Equal(r.Parts[0].Bytes, pdf) {
				t.Fatalf("the tool_result %+v: want the PDF as a document inside it", r)
			}
		}},
	} {
		t.Run(c.provider, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "10xgraph.json")
			if err := os.WriteFile(cfg, []byte(`{"agent": "tenxgraph:react",
  "model": {"provider": "`+c.provider+`", "model": "test-model", "base_url": "`+c.base+`"},
  "remote_tools": [{"name": "read_clipboard", "description": "Read the clipboard.", "parameters": {"type": "object", "properties": {}}}],
  "checkpointer": {"type": "sqlite", "path": "state.db"}}`), 0o600); err != nil {
				t.Fatal(err)
			}
			_, base := serving(t, bin, "--config", cfg)
			res := do(t, "POST", base+"/v1/graph/invoke", "", `{"input": {"messages": [{"role": "user", "content": [
  {"type": "text", "text": "what is this, and what is on my clipboard?"},
  {"type": "image", "mime_type": "image/png", "data": "`+b64(pic.Bytes())+`"}]}]}, "config": {"thread_id": "m1"}}`)
			if res.code != 200 || res.status() != "interrupted" || len(res.pending()) != 1 {
				t.Fatalf("invoke: %d %s", res.code, res.raw)
			}
			if !strings.Contains(res.messages(), `"blob":"sha256:`) || strings.Contains(res.messages(), b64(pic.Bytes())) {
				t.Fatalf("the thread holds %s, want a reference", res.messages())
			}
			res = do(t, "POST", base+"/v1/graph/invoke", "", `{"input": {"messages": [{"role": "tool", "content": [{"type": "tool_result", "tool_call_id": "`+res.pending()[0]+`",
  "content": {"picked": "clip.pdf"}, "attachments": [{"type": "file", "mime_type": "application/pdf", "filename": "clip.pdf", "data": "`+b64(pdf)+`"}]}]}]}, "config": {"thread_id": "m1"}}`)
			if res.code != 200 || res.status() != "completed" {
				t.Fatalf("resume: %d %s", res.code, res.raw)
			}
			c.check(t)
			// The blob route serves the stored PDF to whoever may read the thread.
			m := regexp.MustCompile(`"blob":"(sha256:[0-9a-f]{64})","filename":"clip.pdf"`).FindStringSubmatch(res.messages())
			if m == nil {
				t.Fatalf("no PDF in %s", res.messages())
			}
			ref := m[1]
			if got := do(t, "GET", fmt.Sprintf("%s/v1/threads/m1/blobs/%s", base, ref), "", ""); got.code != 200 || got.raw != string(pdf) {
				t.Fatalf("GET the blob %q: %d %q", ref, got.code, got.raw)
			}
		})
	}
}
