package service_test

import (
	"bytes"
	"context"
	"image/png"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model/anthropic/anthropictest"
	"github.com/tenxgraph/tenxgraph/host/model/openai/openaitest"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

// pngSize reads a PNG's size, or fails the test.
func pngSize(t *testing.T, what string, data []byte) (int, int) {
	t.Helper()
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", what, err)
	}
	return cfg.Width, cfg.Height
}

// A real plugin's image and a real MCP server's (server-everything's
// get-tiny-image), called in one step, reach each model as images: for
// Chat Completions in one user message after the tool messages, which
// name them and carry no base64; for Anthropic inside each tool_result.
func TestToolImagesReachTheModels(t *testing.T) {
	nm := mcpModules(t)
	openaiSrv := openaitest.NewServer(t,
		openaitest.Calls(openaitest.Call("c1", "image", `{"filename": "dot.png"}`), openaitest.Call("c2", "get-tiny-image", `{}`)),
		openaitest.Text("A red dot and the MCP logo."))
	anthropicSrv := anthropictest.NewServer(t,
		anthropictest.ToolUses(anthropictest.Use("c1", "image", `{"filename": "dot.png"}`), anthropictest.Use("c2", "get-tiny-image", `{}`)),
		anthropictest.Text("A red dot and the MCP logo."))
	for _, c := range []struct {
		provider, base string
		check          func(t *testing.T)
	}{
		{"openai", openaiSrv.URL, func(t *testing.T) {
			reqs := openaiSrv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls, want 2", len(reqs))
			}
			msgs := reqs[1].Messages
			if len(msgs) < 4 {
				t.Fatalf("the second call's messages: %+v", msgs)
			}
			for _, m := range msgs[len(msgs)-3 : len(msgs)-1] {
				if m.Role != "tool" || !strings.Contains(m.Content, "[image image/png") || strings.Contains(m.Content, "iVBOR") {
					t.Errorf("tool message %+v: want text naming its image, without base64", m)
				}
			}
			last := msgs[len(msgs)-1]
			var images [][]byte
			for _, p := range last.Parts {
				if p.Type == "image_url" {
					images = append(images, p.Data)
				}
			}
			if last.Role != "user" || len(images) != 2 {
				t.Fatalf("the message after the tool messages: %+v; want a user message with both images", last)
			}
			if w, h := pngSize(t, "the plugin's image", images[0]); w != 4 || h != 3 {
				t.Errorf("the plugin's image is %dx%d, want 4x3", w, h)
			}
			if w, h := pngSize(t, "the MCP server's image", images[1]); w != 20 || h != 20 {
				t.Errorf("the MCP server's image is %dx%d, want 20x20", w, h)
			}
		}},
		{"anthropic", anthropicSrv.URL, func(t *testing.T) {
			reqs := anthropicSrv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls, want 2", len(reqs))
			}
			turns := reqs[1].Messages
			results := turns[len(turns)-1].Content
			if len(results) != 2 {
				t.Fatalf("the last turn %+v: want two tool_results", results)
			}
			for i, want := range [][2]int{{4, 3}, {20, 20}} {
				r := results[i]
				var img *anthropictest.Block
				for j := range r.Parts {
					if r.Parts[j].Type == "image" {
						img = &r.Parts[j]
					}
				}
				if r.Type != "tool_result" || img == nil || img.Source != "base64" || strings.Contains(r.Content, "iVBOR") {
					t.Fatalf("tool_result %d %+v: want its image inside, as base64", i, r)
				}
				if w, h := pngSize(t, "an image in a tool_result", img.Bytes); w != want[0] || h != want[1] {
					t.Errorf("tool_result %d's image is %dx%d, want %dx%d", i, w, h, want[0], want[1])
				}
			}
		}},
	} {
		t.Run(c.provider, func(t *testing.T) {
			s := startConfig(t, `{"agent": "tenxgraph:react",
			  "model": {"provider": "`+c.provider+`", "model": "test-model", "base_url": "`+c.base+`"},
			  "checkpointer": {"type": "memory"},
			  "plugins": [{"name": "hostile", "command": [`+js(hostile(t))+`]}],
			  "mcp_servers": {"everything": {"command": "node", "args": [`+js(filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js"))+`, "stdio"],
			                  "allow_tools": ["get-tiny-image"], "timeout": "20s"}}}`, `{"rules": []}`)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := s.App.Invoke(ctx, []message.Message{message.Text(message.RoleUser, "show me two pictures")}, thread.RunConfig{ThreadID: "pics"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != graph.StatusCompleted {
				t.Fatalf("status %s", res.Status)
			}
			c.check(t)
		})
	}
}
