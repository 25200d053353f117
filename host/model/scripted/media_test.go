package scripted

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
)

const ref = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

var (
	png = message.MediaBlock{Kind: message.TypeImage, MimeType: "image/png", Blob: ref, Size: 1234, Width: 64, Height: 64}
	pdf = message.MediaBlock{Kind: message.TypeFile, MimeType: "application/pdf", Filename: "a.pdf", Blob: ref, Size: 12345}
)

const mediaScript = `{"rules": [
  {"match": "(\\[image [^\\]]*\\])", "text": "I see $1; it costs $$0."},
  {"match": "(?i)what is in this image", "text": "I see no image."},
  {"match": "(?i)screenshot", "tool_calls": [{"name": "screenshot"}],
   "then": "{{result 0}} {{attachments 0}}"},
  {"match": "(?i)fetch", "tool_calls": [{"name": "fetch"}]}
]}`

// The scripted model reads a message's media as stand-ins in its text, so
// a rule matches an image and quotes it; without one, the question is
// answered as text.
func TestScriptSeesMedia(t *testing.T) {
	th := &thread{t: t, m: mustParse(t, mediaScript), tools: tools("screenshot", "fetch")}
	th.msgs = append(th.msgs, message.Message{Role: message.RoleUser, Content: []message.Block{
		message.TextBlock{Text: "what is in this image?"}, png}})
	wantText(t, th.generate(), "I see [image image/png 64x64]; it costs $0.")
	wantText(t, th.say("what is in this image?"), "I see no image.")
}

// A result's attachments reach a then template through attachments, and
// the default reply names them.
func TestScriptSeesAttachments(t *testing.T) {
	th := &thread{t: t, m: mustParse(t, mediaScript), tools: tools("screenshot", "fetch")}
	th.say("take a screenshot")
	wantText(t, th.answer(message.ToolResultBlock{Content: json.RawMessage(`"taken"`), Attachments: []message.MediaBlock{png}}),
		"taken [image image/png 64x64]")
	th.say("fetch it")
	wantText(t, th.answer(message.ToolResultBlock{Content: json.RawMessage(`{"ok":true}`), Attachments: []message.MediaBlock{pdf, png}}),
		`I called fetch, which returned {"ok":true} [file application/pdf a.pdf 12345 bytes] [image image/png 64x64].`)
}

// A text rule's capture groups are checked when the script loads, as a
// call's arguments are.
func TestTextCaptureGroupsChecked(t *testing.T) {
	_, err := Parse([]byte(`{"rules": [{"match": "(?i)price", "text": "It costs $5."}]}`))
	if err == nil || !strings.Contains(err.Error(), "rules[0].text") || !strings.Contains(err.Error(), "$5 refers to a capture group") {
		t.Fatalf("error %v", err)
	}
}

// Media count in the usage estimate, as their stand-ins' words.
func TestUsageCountsMedia(t *testing.T) {
	m := mustParse(t, mediaScript)
	req := model.Request{Messages: []message.Message{{Role: message.RoleUser, Content: []message.Block{png}}}}
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.InputTokens == 0 {
		t.Fatalf("usage %+v: the image counted for nothing", resp.Usage)
	}
}

// The quickstart answers a message carrying an image by quoting what it
// sees of it, and the question without one by saying so; a message its
// other rules answer gets their answer, image or not.
func TestQuickstartAnswersAnImage(t *testing.T) {
	m, err := Load("../../../examples/quickstart/script.json")
	if err != nil {
		t.Fatal(err)
	}
	th := &thread{t: t, m: m, tools: allTools}
	th.msgs = append(th.msgs, message.Message{Role: message.RoleUser, Content: []message.Block{
		message.TextBlock{Text: "what is in this image?"}, png}})
	if got := th.generate().Text(); !strings.HasPrefix(got, "Your message carries [image image/png 64x64]. I am the scripted model") {
		t.Fatalf("reply %q", got)
	}
	if got := th.say("what is in this picture?").Text(); got != "I see no picture in your message: attach one (an image or file block beside your text) and ask again." {
		t.Fatalf("reply %q", got)
	}
	// The quickstart's other rules answer first, an image attached or not.
	wantCalls(t, th.say("what is 2+3*4"), `call_5_0 calculator {"expression":"2+3*4"}`)
	th.msgs = append(th.msgs, message.Message{Role: message.RoleUser, Content: []message.Block{
		message.TextBlock{Text: "what is on my clipboard?"}, png}})
	wantCalls(t, th.generate(), `call_7_0 read_clipboard {}`)
}
