package service_test

import (
	"bytes"
	"context"
	"image/png"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/service"
)

const attachScript = `{"rules": [
  {"match": "^image$", "tool_calls": [{"name": "image", "arguments": {"filename": "dot.png"}}]},
  {"match": "^image named (.*)$", "tool_calls": [{"name": "image", "arguments": {"filename": "$1"}}]},
  {"match": "^101 images$", "tool_calls": [{"name": "image", "arguments": {"n": 101}}]},
  {"match": "^tiny image$", "tool_calls": [{"name": "get-tiny-image", "arguments": {}}]}
]}`

// checkImage checks a tool result's one attachment: an image block of the
// given type and name whose bytes are a PNG of w x h, held as data until
// the run saves, or as a reference to the blob the host stored.
func checkImage(t *testing.T, r message.ToolResultBlock, filename string, w, h int) []byte {
	t.Helper()
	if r.IsError || len(r.Attachments) != 1 {
		t.Fatalf("result %s is_error=%v with %d attachments, want one", r.Content, r.IsError, len(r.Attachments))
	}
	a := r.Attachments[0]
	if a.Kind != message.TypeImage || a.MimeType != "image/png" || a.Filename != filename {
		t.Fatalf("attachment %s %s %q, want an image/png image named %q", a.Kind, a.MimeType, a.Filename, filename)
	}
	if a.Data == nil {
		if !message.ValidBlobRef(a.Blob) || a.Size == 0 {
			t.Fatalf("attachment with neither data nor a stored blob: %+v", a)
		}
		return nil
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(a.Data))
	if err != nil || cfg.Width != w || cfg.Height != h {
		t.Fatalf("the attachment's data is not a %dx%d PNG: %+v, %v", w, h, cfg, err)
	}
	return a.Data
}

// savedResult reads a thread back and returns its one tool result.
func savedResult(t *testing.T, s *service.Service, thread string) message.ToolResultBlock {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := s.App.Thread(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	var got []message.ToolResultBlock
	for _, m := range res.Messages {
		got = append(got, m.ToolResults()...)
	}
	if len(got) != 1 {
		t.Fatalf("thread %s holds %d tool results, want 1", thread, len(got))
	}
	return got[0]
}

// A real plugin process's image reaches the thread as the tool result's
// image block, saved with the thread; attachments the host refuses (a
// name that is a path, more than a result may carry) give the model an
// error result instead, and none of them is kept.
func TestPluginImageReachesTheThread(t *testing.T) {
	s := startConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"}, "plugins": [{"name": "hostile", "command": [`+js(hostile(t))+`]}]}`, attachScript)
	r := toolResult(t, s, "img", "image")
	if string(r.Content) != `"a red dot"` {
		t.Errorf("content %s", r.Content)
	}
	if data := checkImage(t, r, "dot.png", 4, 3); data != nil {
		img, _ := png.Decode(bytes.NewReader(data))
		if red, _, _, _ := img.At(1, 2).RGBA(); red>>8 != 255 {
			t.Errorf("pixel 1,2 is not the plugin's red")
		}
	}
	checkImage(t, savedResult(t, s, "img"), "dot.png", 4, 3)

	for text, want := range map[string]string{
		"image named ../../.ssh/id_rsa": `attachments[0].filename: \"../../.ssh/id_rsa\" is a path`,
		"101 images":                    "attachments: 101 of them, over the limit of 100 per result",
	} {
		thread := strings.ReplaceAll(text, "/", "-")
		for _, r := range []message.ToolResultBlock{toolResult(t, s, thread, text), savedResult(t, s, thread)} {
			if !r.IsError || r.Attachments != nil || !strings.Contains(string(r.Content), `provider \"hostile\" returned a result for tool \"image\" with attachments the host refuses: `+want) {
				t.Errorf("%s: %s is_error=%v with %d attachments; want an error result saying %s", text, r.Content, r.IsError, len(r.Attachments), want)
			}
		}
	}
}

// server-everything's get-tiny-image, through the MCP bridge's own
// process: its PNG reaches the thread as an image attachment, the text
// around it as the content.
func TestMCPImageReachesTheThread(t *testing.T) {
	nm := mcpModules(t)
	s := startConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"},
	  "mcp_servers": {"everything": {"command": "node", "args": [`+js(filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js"))+`, "stdio"],
	                  "allow_tools": ["get-tiny-image"], "timeout": "20s"}}}`, attachScript)
	r := toolResult(t, s, "tiny", "tiny image")
	if !strings.Contains(string(r.Content), "The image above is the MCP logo.") || strings.Contains(string(r.Content), "iVBOR") {
		t.Errorf("content %s: want the text, without the image as base64", r.Content)
	}
	checkImage(t, r, "", 20, 20)
	checkImage(t, savedResult(t, s, "tiny"), "", 20, 20)
}
