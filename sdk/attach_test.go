package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tenxgraph/tenxgraph/sdk"
	pb "github.com/tenxgraph/tenxgraph/sdk/proto/toolprovider/v1"
	"github.com/tenxgraph/tenxgraph/sdk/sdktest"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

func pngOf(t testing.TB, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type chartArgs struct {
	Title string `json:"title"`
}

// A typed tool returns attachments with sdk.ToolResult; they cross the
// plugin protocol as bytes, in order, with their types and names, beside
// the content.
func TestToolResultAttachments(t *testing.T) {
	img, pdf := pngOf(t, 3, 2), []byte("%PDF-1.7\n...")
	p := sdktest.Serve(t, sdk.MustTools("charts", "1",
		sdk.MustTool("chart", "Draw a chart.", func(_ context.Context, in chartArgs) (sdk.ToolResult, error) {
			return sdk.ToolResult{
				Content:     map[string]string{"title": in.Title},
				Attachments: []sdk.Attachment{sdk.Image("image/png", img), sdk.File("application/pdf", "chart.pdf", pdf)},
			}, nil
		}),
		sdk.MustTool("only_image", "An image and nothing else.", func(context.Context, struct{}) (*sdk.ToolResult, error) {
			return &sdk.ToolResult{Attachments: []sdk.Attachment{sdk.Image("image/png", img)}}, nil
		}),
		sdk.MustTool("plain", "No attachments.", func(context.Context, struct{}) (string, error) { return "plain", nil }),
	))
	resp := sdktest.Call(t, p, "chart", chartArgs{Title: "sales"})
	if got := sdktest.Decode[map[string]string](t, resp); got["title"] != "sales" {
		t.Errorf("content %s", resp.Content)
	}
	want := []sdk.Attachment{{MimeType: "image/png", Data: img}, {MimeType: "application/pdf", Filename: "chart.pdf", Data: pdf}}
	if len(resp.Attachments) != len(want) {
		t.Fatalf("%d attachments, want %d: %+v", len(resp.Attachments), len(want), resp.Attachments)
	}
	for i, a := range resp.Attachments {
		if a.MimeType != want[i].MimeType || a.Filename != want[i].Filename || !bytes.Equal(a.Data, want[i].Data) {
			t.Errorf("attachment %d: %s %q %d bytes, want %s %q %d bytes", i, a.MimeType, a.Filename, len(a.Data), want[i].MimeType, want[i].Filename, len(want[i].Data))
		}
	}
	if resp.Size() != int64(len(resp.Content)+len(img)+len(pdf)) {
		t.Errorf("Size() = %d, want the content's and the attachments' bytes", resp.Size())
	}
	resp = sdktest.Call(t, p, "only_image", nil)
	if string(resp.Content) != "null" || len(resp.Attachments) != 1 || !bytes.Equal(resp.Attachments[0].Data, img) {
		t.Errorf("only an image: content %s, %d attachments", resp.Content, len(resp.Attachments))
	}
	if resp = sdktest.Call(t, p, "plain", nil); resp.Attachments != nil {
		t.Errorf("a plain result came with attachments %+v", resp.Attachments)
	}
}

// An attachment the host would refuse is a mistake in the tool: Result
// says which and why, and the call fails rather than send it.
func TestCheckAttachments(t *testing.T) {
	data := []byte("x")
	many := make([]sdk.Attachment, sdk.MaxAttachments+1)
	for i := range many {
		many[i] = sdk.Image("image/png", data)
	}
	for _, c := range []struct {
		atts []sdk.Attachment
		want string
	}{
		{[]sdk.Attachment{{MimeType: "image/png"}}, "attachments[0].data: empty"},
		{[]sdk.Attachment{sdk.Image("image/png", data), {Data: data}}, "attachments[1].mime_type: missing"},
		{[]sdk.Attachment{sdk.Image("png", data)}, `attachments[0].mime_type: "png" is not a media type`},
		{[]sdk.Attachment{sdk.Image("image/", data)}, "is not a media type"},
		{[]sdk.Attachment{sdk.Image("image/png; x", data)}, "is not a media type"},
		{[]sdk.Attachment{sdk.Image("image/"+strings.Repeat("p", 250), data)}, "mime_type: 256 bytes, over the limit of 255"},
		{[]sdk.Attachment{sdk.File("text/plain", "../etc/passwd", data)}, `attachments[0].filename: "../etc/passwd" is a path`},
		{[]sdk.Attachment{sdk.File("text/plain", `c:\boot.ini`, data)}, "is a path"},
		{[]sdk.Attachment{sdk.File("text/plain", "a\nb", data)}, "control character"},
		{[]sdk.Attachment{sdk.File("text/plain", "..", data)}, "not a file's name"},
		{[]sdk.Attachment{sdk.File("text/plain", "\xff", data)}, "not valid UTF-8"},
		{[]sdk.Attachment{sdk.File("text/plain", strings.Repeat("é", 128), data)}, "filename: 256 bytes, over the limit of 255"},
		{many, "101 of them, over the limit of 100"},
	} {
		err := sdk.CheckAttachments(c.atts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.80v: %v, want %q", c.atts, err, c.want)
		}
		if _, err := sdk.Result(sdk.ToolResult{Content: 1, Attachments: c.atts}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Result(%.80v): %v, want %q", c.atts, err, c.want)
		}
	}
	for _, ok := range [][]sdk.Attachment{
		nil,
		many[:sdk.MaxAttachments],
		{sdk.File("text/plain; charset=utf-8", "notes for Zoë.txt", data)},
		{sdk.File("application/vnd.openxmlformats-officedocument.wordprocessingml.document", strings.Repeat("a", 255), data)},
	} {
		if err := sdk.CheckAttachments(ok); err != nil {
			t.Errorf("%.80v: %v", ok, err)
		}
	}
}

// oldResponse is CallTool.Response as a peer built before attachments
// knows it: the same message without field 4 (nor 5, spans, added later).
func oldResponse(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	fd := protodesc.ToFileDescriptorProto(pb.File_toolprovider_v1_toolprovider_proto)
	for _, m := range fd.MessageType {
		if m.GetName() != "CallTool" {
			continue
		}
		for _, nested := range m.NestedType {
			if nested.GetName() == "Response" {
				var fields []*descriptorpb.FieldDescriptorProto
				for _, f := range nested.Field {
					if f.GetNumber() < 4 { // the fields before attachments (4) and spans (5)
						fields = append(fields, f)
					}
				}
				nested.Field = fields
			}
		}
	}
	fd.Name = proto.String("old/toolprovider.proto")
	file, err := protodesc.NewFile(fd, nil)
	if err != nil {
		t.Fatal(err)
	}
	return file.Messages().ByName("CallTool").Messages().ByName("Response")
}

// Attachments are a field an older peer does not know, which protobuf
// lets it skip: a host built before them reads a new plugin's result (its
// content, is_error) and ignores the attachments; a host reads an older
// plugin's result as one without attachments.
func TestAttachmentsAndOlderPeers(t *testing.T) {
	old := oldResponse(t)
	if old.Fields().ByNumber(4) != nil || old.Fields().Len() != 3 {
		t.Fatalf("the old message has fields %v", old.Fields())
	}
	newer, err := proto.Marshal(&pb.CallTool_Response{ContentJson: []byte(`{"ok":true}`), IsError: true,
		Attachments: []*pb.CallTool_Attachment{{MimeType: "image/png", Filename: "a.png", Data: pngOf(t, 1, 1)}}})
	if err != nil {
		t.Fatal(err)
	}
	m := dynamicpb.NewMessage(old)
	if err := proto.Unmarshal(newer, m); err != nil {
		t.Fatalf("an older host cannot read a newer plugin's result: %v", err)
	}
	if got := m.Get(old.Fields().ByName("content_json")).Bytes(); string(got) != `{"ok":true}` || !m.Get(old.Fields().ByName("is_error")).Bool() {
		t.Errorf("an older host read content %s, is_error %v", got, m.Get(old.Fields().ByName("is_error")))
	}
	if num, _, n := protowire.ConsumeField(m.GetUnknown()); num != 4 || n != len(m.GetUnknown()) {
		t.Errorf("the attachments were not kept aside as an unknown field: %x", m.GetUnknown())
	}

	m = dynamicpb.NewMessage(old)
	m.Set(old.Fields().ByName("content_json"), protoreflect.ValueOfBytes([]byte(`"hi"`)))
	older, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var got pb.CallTool_Response
	if err := proto.Unmarshal(older, &got); err != nil || string(got.ContentJson) != `"hi"` || got.Attachments != nil {
		t.Errorf("an older plugin's result read as %v, %v", &got, err)
	}
}

// A megabyte image, as an attachment (bytes in protobuf) and as base64 in
// the JSON content (what tools returned before), through the plugin
// protocol in process: what the plugin encodes, gRPC carries, and the host
// checks (an attachment's fields; the content's JSON, strictly, as the
// host's tool node does). The wire sizes are reported per op.
func BenchmarkMegabyteImage(b *testing.B) {
	img := bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}, 1<<17) // 1 MiB
	p := sdktest.Serve(b, sdk.MustTools("bench", "1",
		sdk.MustTool("attached", "As an attachment.", func(context.Context, struct{}) (sdk.ToolResult, error) {
			return sdk.ToolResult{Content: "a screenshot", Attachments: []sdk.Attachment{sdk.Image("image/png", img)}}, nil
		}),
		sdk.MustTool("base64", "As base64 in the JSON.", func(context.Context, struct{}) (map[string]any, error) {
			return map[string]any{"text": "a screenshot", "image": map[string]any{"mime_type": "image/png", "data": img}}, nil
		}),
	))
	for _, tool := range []string{"attached", "base64"} {
		b.Run(tool, func(b *testing.B) {
			b.ReportAllocs()
			var wire int
			for b.Loop() {
				resp, err := p.CallTool(b.Context(), sdk.CallToolRequest{Name: tool, Arguments: json.RawMessage(`{}`)})
				if err != nil {
					b.Fatal(err)
				}
				if err := sdk.CheckAttachments(resp.Attachments); err != nil {
					b.Fatal(err)
				}
				if err := strictjson.Check(resp.Content); err != nil {
					b.Fatal(err)
				}
				wire = proto.Size(&pb.CallTool_Response{ContentJson: resp.Content, Attachments: toPB(resp.Attachments)})
			}
			b.ReportMetric(float64(wire), "wire-bytes/op")
		})
	}
}

func toPB(atts []sdk.Attachment) []*pb.CallTool_Attachment {
	var out []*pb.CallTool_Attachment
	for _, a := range atts {
		out = append(out, &pb.CallTool_Attachment{MimeType: a.MimeType, Filename: a.Filename, Data: a.Data})
	}
	return out
}
