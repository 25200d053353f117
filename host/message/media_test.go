package message_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/message"
)

const ref = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// Media blocks read and write the wire shapes of DESIGN's "Images and
// files", in a user message and among a tool result's attachments.
func TestMediaRoundTrip(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n....")
	b64 := base64.StdEncoding.EncodeToString(png)
	for _, c := range []struct {
		in, out string
	}{
		{`{"type":"image","mime_type":"image/png","data":"` + b64 + `"}`, ``},
		{`{"type":"file","mime_type":"application/pdf","filename":"a.pdf","url":"https://example.com/a.pdf"}`, ``},
		{`{"type":"audio","mime_type":"audio/wav","blob":"` + ref + `","size":12}`, ``},
		{`{"type":"image","mime_type":"image/png","blob":"` + ref + `","size":1234,"width":64,"height":48}`, ``},
		// Unpadded and wrapped base64 are read; written padded.
		{`{"type":"image","mime_type":"image/png","data":"` + strings.TrimRight(b64, "=") + `"}`, `{"type":"image","mime_type":"image/png","data":"` + b64 + `"}`},
		{`{"type":"image","mime_type":"image/png","data":"` + b64[:4] + `\n` + b64[4:] + `"}`, `{"type":"image","mime_type":"image/png","data":"` + b64 + `"}`},
		{`{"type":"image","mime_type":"image/png","data":"` + b64[:4] + `\r\n` + b64[4:] + `\r\n"}`, `{"type":"image","mime_type":"image/png","data":"` + b64 + `"}`},
		{`{"type":"image","mime_type":"image/png","data":" ` + b64[:4] + ` \t` + b64[4:] + `"}`, `{"type":"image","mime_type":"image/png","data":"` + b64 + `"}`},
		{`{"type":"image","mime_type":"image/png","data":"` + strings.TrimRight(b64, "=")[:4] + `\n` + strings.TrimRight(b64, "=")[4:] + `\n"}`, `{"type":"image","mime_type":"image/png","data":"` + b64 + `"}`},
		{`{"type":"tool_result","tool_call_id":"c1","content":{"ok":true},"is_error":false,"attachments":[{"type":"image","mime_type":"image/png","blob":"` + ref + `"}]}`, ``},
		// No attachments: the shape tool results had before media.
		{`{"type":"tool_result","tool_call_id":"c1","content":1,"is_error":false}`, ``},
	} {
		b, err := message.UnmarshalBlock(json.RawMessage(c.in))
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		got, err := message.MarshalBlock(b)
		if err != nil {
			t.Errorf("%s: marshal: %v", c.in, err)
			continue
		}
		want := c.out
		if want == "" {
			want = c.in
		}
		if string(got) != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
	b, err := message.UnmarshalBlock(json.RawMessage(`{"type":"image","mime_type":"image/png","data":"` + b64 + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	if m := b.(message.MediaBlock); string(m.Data) != string(png) || m.Kind != message.TypeImage || m.BlockType() != "image" {
		t.Errorf("decoded %+v", m)
	}
}

// A media block is refused, with the path of what is wrong, when its
// source is missing, doubled or malformed.
func TestMediaRefused(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"type":"image","data":"AAAA"}`, "mime_type: missing"},
		{`{"type":"image","mime_type":"image/png"}`, "exactly one source"},
		{`{"type":"image","mime_type":"image/png","data":"AAAA","url":"https://x/y.png"}`, "got data and url"},
		{`{"type":"image","mime_type":"image/png","data":"not base64!"}`, "data: not base64"},
		{`{"type":"image","mime_type":"image/png","data":""}`, "data: empty"},
		{`{"type":"image","mime_type":"image/png","blob":"sha256:ABC"}`, "blob: want \"sha256:\""},
		{`{"type":"image","mime_type":"image/png","blob":"` + strings.ToUpper(ref) + `"}`, "blob: want"},
		{`{"type":"image","mime_type":"image/png","url":""}`, "url: empty"},
		{`{"type":"image","mime_type":"image/png","data":"AAAA","text":"x"}`, "text: unknown key for a image block"},
		{`{"type":"tool_result","tool_call_id":"c","content":1,"attachments":[{"type":"text","text":"x"}]}`, "attachments[0].type: an attachment is an image, file or audio block"},
		{`{"type":"tool_result","tool_call_id":"c","content":1,"attachments":[{"type":"image","mime_type":"image/png"}]}`, "attachments[0]: a image block takes exactly one source"},
		{`{"type":"text","text":"x","attachments":[]}`, "attachments: unknown key for a text block"},
	} {
		_, err := message.UnmarshalBlock(json.RawMessage(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
}

func TestValidBlobRef(t *testing.T) {
	for ref, want := range map[string]bool{
		ref:                  true,
		ref[:len(ref)-1]:     false,
		ref + "0":            false,
		"sha1:" + ref[7:]:    false,
		strings.ToUpper(ref): false,
		"":                   false,
	} {
		if got := message.ValidBlobRef(ref); got != want {
			t.Errorf("%q: %v, want %v", ref, got, want)
		}
	}
}
