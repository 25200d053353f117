package server_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// aguiInput1 is a RunAgentInput as @ag-ui/client 1.0 sends it: with
// protocolVersion "1.0".
func aguiInput1(thread string, msgs ...map[string]any) map[string]any {
	in := aguiInput(thread, msgs...)
	in["protocolVersion"] = "1.0"
	return in
}

// snapshotContent is the content of the message id in a run's
// MESSAGES_SNAPSHOT, as JSON.
func snapshotContent(t *testing.T, evs []aguiEvent, id string) any {
	t.Helper()
	for _, m := range snapshotOf(t, evs) {
		if m["id"] == id {
			return m["content"]
		}
	}
	t.Fatalf("no message %s in the snapshot", id)
	return nil
}

// jsonOf is v as JSON decodes it (numbers as float64), for comparisons.
func jsonOf(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func filePart(typ, ref, mimeType string, meta map[string]any) map[string]any {
	p := map[string]any{"type": typ, "source": map[string]any{"type": "file", "value": ref, "provider": "tenxgraph", "mimeType": mimeType}}
	if meta != nil {
		p["metadata"] = meta
	}
	return p
}

// A client that speaks AG-UI 1.0 (protocolVersion "1.0") gets stored media
// in MESSAGES_SNAPSHOT as 1.0 parts with a file source naming the blob (1.0
// has no binary part, and @ag-ui/client 1.0 drops a binary part with only
// an id); sending those parts back names the blob, as does a url to the
// thread's own blob route, which is never fetched. A client that declares
// no version, or one before 1.0, still gets binary parts.
func TestAGUIMedia1(t *testing.T) {
	e := start(t, setup{})
	img, pdf := testPNG(5, 5), []byte("%PDF-1.4\n1 0 obj <</Type /Catalog>> endobj\ntrailer <</Root 1 0 R>>\n%%EOF\n")
	b64 := base64.StdEncoding.EncodeToString
	user := map[string]any{"id": "u1", "role": "user", "content": []any{
		map[string]any{"type": "text", "text": "look"},
		map[string]any{"type": "image", "source": map[string]any{"type": "data", "value": b64(img), "mimeType": "image/png"}},
		map[string]any{"type": "document", "source": map[string]any{"type": "data", "value": b64(pdf), "mimeType": "application/pdf"}, "metadata": map[string]any{"filename": "a.pdf"}},
	}}
	evs := e.agui(aguiInput1("ag1", user))
	checkAGUI(t, evs, "ag1", "run-ag1")
	if last := evs[len(evs)-1]; last.Type != "RUN_FINISHED" {
		t.Fatalf("the run: %+v", last)
	}
	want := jsonOf(t, []any{
		map[string]any{"type": "text", "text": "look"},
		filePart("image", blobRef(img), "image/png", map[string]any{"size": len(img), "width": 5, "height": 5}),
		filePart("document", blobRef(pdf), "application/pdf", map[string]any{"filename": "a.pdf", "size": len(pdf)}),
	})
	got := snapshotContent(t, evs, "u1")
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MESSAGES_SNAPSHOT's user message:\n got %v\nwant %v", got, want)
	}
	if f := e.thread("ag1").Messages[0].Content[2].(message.MediaBlock); f.Filename != "a.pdf" {
		t.Fatalf("the document's filename (from its metadata): %+v", f)
	}

	// Back: the snapshot's parts as they are, and urls to the thread's own
	// route, relative and on this server (http on loopback: a fetch would
	// be refused, so a run that finishes fetched nothing).
	parts := append([]any{}, got.([]any)...)
	parts = append(parts,
		map[string]any{"type": "image", "source": map[string]any{"type": "url", "value": "/v1/threads/ag1/blobs/" + blobRef(img), "mimeType": "image/png"}},
		map[string]any{"type": "image", "source": map[string]any{"type": "url", "value": e.url + "/v1/threads/ag1/blobs/" + blobRef(img), "mimeType": "image/png"}})
	before := e.usage()
	transcript := snapshotOf(t, evs)
	transcript = append(transcript, map[string]any{"id": "u2", "role": "user", "content": parts})
	in := aguiInput1("ag1", transcript...)
	in["runId"] = "run-2"
	evs = e.agui(in)
	checkAGUI(t, evs, "ag1", "run-2")
	if last := evs[len(evs)-1]; last.Type != "RUN_FINISHED" {
		t.Fatalf("sending the parts back: %+v", last)
	}
	th := e.thread("ag1")
	var u2 message.Message
	for _, m := range th.Messages {
		if m.ID == "u2" {
			u2 = m
		}
	}
	refs := []string{}
	for _, b := range u2.Content {
		if mb, ok := b.(message.MediaBlock); ok {
			refs = append(refs, mb.Blob)
		}
	}
	if !reflect.DeepEqual(refs, []string{blobRef(img), blobRef(pdf), blobRef(img), blobRef(img)}) {
		t.Fatalf("u2's media: %v", u2.Content)
	}
	if after := e.usage(); after != before {
		t.Fatalf("naming blobs changed the store: %+v, then %+v", before, after)
	}

	// Before 1.0 (no version, or a 0.x one): binary parts, as ever.
	for i, v := range []any{nil, "0.0.59"} {
		in := aguiInput("ag1", append(snapshotOf(t, evs), userMsg(fmt.Sprint("old-", i), "hello"))...)
		if v != nil {
			in["protocolVersion"] = v
		}
		in["runId"] = "run-old"
		evs := e.agui(in)
		want := jsonOf(t, map[string]any{"type": "binary", "mimeType": "image/png", "id": blobRef(img)})
		if got := snapshotContent(t, evs, "u1").([]any)[1]; !reflect.DeepEqual(got, want) {
			t.Fatalf("protocolVersion %v: %v, want %v", v, got, want)
		}
	}

	// What is refused, and where the message says it is.
	other := testPNG(7, 7)
	e.agui(aguiInput1("elsewhere", map[string]any{"id": "x1", "role": "user", "content": []any{
		map[string]any{"type": "image", "source": map[string]any{"type": "data", "value": b64(other), "mimeType": "image/png"}}}}))
	for _, c := range []struct {
		name string
		part map[string]any
		code string
		says string
	}{
		{"another provider's handle", map[string]any{"type": "document", "source": map[string]any{"type": "file", "value": "file-abc123", "provider": "openai", "mimeType": "application/pdf"}},
			"invalid_input", `messages[0]: content[0].source.provider: "openai": a handle another provider issued`},
		{"a handle that is not a blob", map[string]any{"type": "image", "source": map[string]any{"type": "file", "value": "file-abc123", "mimeType": "image/png"}},
			"invalid_input", `messages[0]: content[0].source.value: "file-abc123" is not a blob of this server`},
		{"no mimeType", map[string]any{"type": "image", "source": map[string]any{"type": "file", "value": blobRef(img)}},
			"invalid_input", "messages[0]: content[0].source.mimeType: missing"},
		{"another thread's blob", filePart("image", blobRef(other), "image/png", nil),
			"media_refused", "content[0].blob: media refused: " + blobRef(other) + " is not a blob this thread holds"},
		{"a url to another thread's route is a url", map[string]any{"type": "image", "source": map[string]any{"type": "url", "value": "/v1/threads/elsewhere/blobs/" + blobRef(other), "mimeType": "image/png"}},
			"media_refused", "content[0].url: media refused"},
		{"another scheme", map[string]any{"type": "image", "source": map[string]any{"type": "blob", "value": blobRef(img)}},
			"invalid_input", `content[0].source.type: want "data", "url" or "file", got "blob"`},
	} {
		evs := e.agui(aguiInput1("bad1", map[string]any{"id": "b1", "role": "user", "content": []any{c.part}}))
		if last := evs[len(evs)-1]; last.Type != "RUN_ERROR" || last.Code != c.code || !strings.Contains(last.Message, c.says) {
			t.Errorf("%s: %+v; want %s saying %q", c.name, last, c.code, c.says)
		}
	}
	if r := e.do("GET", "/v1/threads/bad1", nil); r.status != 404 {
		t.Fatalf("a refused run made a thread: %d %s", r.status, r.body)
	}
	in = aguiInput1("ag1")
	in["protocolVersion"] = 1.0
	errorOf(t, e.do("POST", "/v1/agui", in), 400, "malformed_request", "protocolVersion: must be a string")
}

// AG-UI 1.0 tool messages may carry content parts: a frontend tool's
// images and documents are its result's attachments, as over the JSON
// API, and a 1.0 client gets them back as parts (in MESSAGES_SNAPSHOT, and
// in TOOL_CALL_RESULT when results are echoed); a client before 1.0 gets
// the text.
func TestAGUIToolResultMedia(t *testing.T) {
	e := start(t, setup{})
	img := testPNG(4, 3)
	for _, interrupts := range []bool{false, true} {
		thread := "tool-media"
		if interrupts {
			thread += "-interrupts"
		}
		in := aguiInput1(thread, userMsg("u1", "zzconfetti please"))
		in["tools"] = []any{confettiTool}
		if interrupts {
			in["forwardedProps"] = map[string]any{"tenxgraph": map[string]any{"interrupts": true}}
		}
		evs := e.agui(in)
		ss := starts(evs)
		if len(ss) != 1 {
			t.Fatalf("run 1: %v", eventTypes(evs))
		}
		callID := ss[0].ToolCallID
		transcript := append(snapshotOf(t, evs), map[string]any{"id": "tool-1", "role": "tool", "toolCallId": callID, "content": []any{
			map[string]any{"type": "text", "text": `{"shown":`},
			map[string]any{"type": "image", "source": map[string]any{"type": "data", "value": base64.StdEncoding.EncodeToString(img), "mimeType": "image/png"}, "metadata": map[string]any{"filename": "confetti.png"}},
			map[string]any{"type": "text", "text": `true}`},
		}})
		in2 := aguiInput1(thread, transcript...)
		in2["runId"], in2["tools"], in2["forwardedProps"] = "run-2", in["tools"], in["forwardedProps"]
		evs = e.agui(in2)
		checkAGUI(t, evs, thread, "run-2")
		if last := evs[len(evs)-1]; last.Type != "RUN_FINISHED" {
			t.Fatalf("interrupts %v: the result with an image: %+v", interrupts, last)
		}
		var result message.ToolResultBlock
		for _, m := range e.thread(thread).Messages {
			for _, r := range m.ToolResults() {
				if r.ToolCallID == callID {
					result = r
				}
			}
		}
		if string(result.Content) != `{"shown":true}` || len(result.Attachments) != 1 || result.Attachments[0].Blob != blobRef(img) || result.Attachments[0].Filename != "confetti.png" {
			t.Fatalf("interrupts %v: the stored result: %+v", interrupts, result)
		}
		want := jsonOf(t, []any{
			map[string]any{"type": "text", "text": `{"shown":true}`},
			filePart("image", blobRef(img), "image/png", map[string]any{"filename": "confetti.png", "size": len(img), "width": 4, "height": 3}),
		})
		if got := snapshotContent(t, evs, "tool-1"); !reflect.DeepEqual(got, want) {
			t.Fatalf("interrupts %v: the tool message in MESSAGES_SNAPSHOT:\n got %v\nwant %v", interrupts, got, want)
		}
		// With interrupts the client's results are echoed, as parts.
		echoed := ofType(evs, "TOOL_CALL_RESULT")
		if !interrupts && len(echoed) != 0 || interrupts && len(echoed) != 1 {
			t.Fatalf("interrupts %v: %d TOOL_CALL_RESULT", interrupts, len(echoed))
		}
		if interrupts {
			var parts any
			if err := json.Unmarshal([]byte(echoed[0].Content), &parts); err != nil || !reflect.DeepEqual(parts, want) {
				t.Fatalf("TOOL_CALL_RESULT content %s, want %v", echoed[0].Content, want)
			}
		}
		// Before 1.0, a tool message is text.
		old := aguiInput(thread, append(snapshotOf(t, evs), userMsg("u-old", "hello"))...)
		old["runId"] = "run-old"
		if got := snapshotContent(t, e.agui(old), "tool-1"); got != `{"shown":true}` {
			t.Fatalf("interrupts %v: before 1.0 the tool message is %v", interrupts, got)
		}
	}

	// A part the server does not take, in a tool message, is refused with
	// its path, and the call still waits for its result.
	stored := e.usage()
	in := aguiInput1("tool-media-bad", userMsg("u1", "zzconfetti please"))
	in["tools"] = []any{confettiTool}
	evs := e.agui(in)
	callID := starts(evs)[0].ToolCallID
	bad := append(snapshotOf(t, evs), map[string]any{"id": "tool-1", "role": "tool", "toolCallId": callID, "content": []any{
		map[string]any{"type": "text", "text": "ok"},
		map[string]any{"type": "video", "source": map[string]any{"type": "url", "value": "https://example.com/v.mp4"}},
	}})
	evs = e.agui(aguiInput1("tool-media-bad", bad...))
	if last := evs[len(evs)-1]; last.Type != "RUN_ERROR" || last.Code != "invalid_input" || !strings.Contains(last.Message, "messages[2]: content[1].type: video is not accepted") {
		t.Fatalf("a video in a tool message: %+v", last)
	}
	// Bytes that are not what the part says: refused as the result's
	// attachment, as over the JSON API.
	pdf := []byte("%PDF-1.4\n1 0 obj <</Type /Catalog>> endobj\ntrailer <</Root 1 0 R>>\n%%EOF\n")
	bad[len(bad)-1]["content"] = []any{
		map[string]any{"type": "text", "text": "ok"},
		map[string]any{"type": "image", "source": map[string]any{"type": "data", "value": base64.StdEncoding.EncodeToString(pdf), "mimeType": "image/png"}},
	}
	evs = e.agui(aguiInput1("tool-media-bad", bad...))
	if last := evs[len(evs)-1]; last.Type != "RUN_ERROR" || last.Code != "media_refused" || !strings.Contains(last.Message, "messages[0].content[0].attachments[0]: media refused: declared image/png, but the bytes are application/pdf") {
		t.Fatalf("a lying image in a tool message: %+v", last)
	}
	if th := e.thread("tool-media-bad"); th.Status != "interrupted" || len(th.RemoteToolCalls) != 1 {
		t.Fatalf("after the refused results: %+v", th)
	}
	if u := e.usage(); u != stored {
		t.Fatalf("the refused results changed the store: %+v, then %+v", stored, u)
	}
}
