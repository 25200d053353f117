package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
)

// What one request carries at most. The Messages API takes an image of up
// to 5 MB of base64 and 8000 px a side, and a request of up to 32 MB; with
// more than 20 images in a request, none larger than 2000 px a side. A
// request here carries the newest 20 images at most, so every image's size
// stays valid however many the thread holds (and the prompt's cost
// bounded), and 20 MB of media (27 MB of base64), PDFs included, leaving
// the rest of the 32 MB to text. A block over its own limit is sent as a
// text stand-in saying so, on every turn: an oversized image costs a line
// of text, not every later request (the API refuses the whole request).
// Older media beyond the budget are stand-ins too. The page count of a
// PDF (100 pages a request for 200k-token models) is not known here, and
// not enforced.
const (
	maxImageBase64 = 5 << 20
	maxImagePixels = 8000
	maxImages      = 20
	maxMediaBytes  = 20_000_000
	maxPDFBytes    = 20_000_000
)

var limits = model.Limits{Images: maxImages, Bytes: maxMediaBytes, PDFBytes: maxPDFBytes}

// leftOut is why a block that would fit on its own is a stand-in.
const leftOut = model.LeftOut + ", up to 20 images and 20 MB"

// classify says whether b can be sent, and if not why.
func classify(b message.MediaBlock) model.Item {
	size := b.Size
	if b.Data != nil {
		size = int64(len(b.Data))
	}
	it := model.Item{Inline: true, Size: size, Ref: b.Blob}
	switch {
	case b.Data == nil && b.URL == "" && b.Blob == "":
		return model.Item{Why: "not sent: the block has no bytes"}
	case b.Kind == message.TypeImage:
		it.Image = true
		switch {
		case imageMIME(b.MimeType) == "":
			return model.Item{Why: "not sent: the Messages API takes PNG, JPEG, GIF and WebP images"}
		case b.Width > maxImagePixels || b.Height > maxImagePixels:
			return model.Item{Why: "not sent: larger than the 8000 px a side an image may be"}
		case b.URL != "":
			it.Size = 0 // the API fetches it
		}
	case b.Kind == message.TypeFile && b.MimeType == "application/pdf":
		it.PDF = true
		if b.URL != "" {
			it.Size = 0
		}
	case b.Kind == message.TypeFile && isText(b.MimeType):
		if b.URL != "" {
			return model.Item{Why: "not sent: a text file is sent by its bytes, not its url"}
		}
	case b.Kind == message.TypeFile:
		return model.Item{Why: "not sent: the Messages API takes PDF and text files"}
	case b.Kind == message.TypeAudio:
		return model.Item{Why: "not sent: the Messages API takes no audio"}
	default:
		return model.Item{Why: "not sent: not an image, file or audio"}
	}
	if why := overLimit(b, it.Size); why != "" {
		return model.Item{Why: why}
	}
	return it
}

// overLimit says why b, of size bytes, is too large to send, or "".
func overLimit(b message.MediaBlock, size int64) string {
	switch {
	case b.Kind == message.TypeImage && base64.StdEncoding.EncodedLen(int(min(size, 1<<40))) > maxImageBase64:
		return "not sent: larger than the 5 MB (of base64) an image may be"
	case b.Kind == message.TypeFile && size > maxPDFBytes:
		return "not sent: larger than the 20 MB a file may be here"
	}
	return ""
}

// imageMIME is the media_type of an image the API takes, "" for others.
func imageMIME(mime string) string {
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return mime
	case "image/jpg":
		return "image/jpeg"
	}
	return ""
}

// isText reports whether a file of this type is UTF-8 text, which the API
// takes as a plain-text document (the host takes in plain text, Markdown,
// CSV and JSON).
func isText(mime string) bool {
	switch mime {
	case "text/plain", "text/markdown", "text/csv", "application/json":
		return true
	}
	return false
}

// mediaWriter writes a message's media blocks as content blocks, knowing
// which the request carries and the bytes read for it.
type mediaWriter struct {
	media *model.Sends
	have  map[string][]byte
	n     int // media blocks written so far
	json  func(out []byte, v any) ([]byte, error)
}

// appendMedia writes the message's next media block, b: an image or
// document block with a base64 source (an image's or PDF's url as a url
// source, a text file as a text document), or a text stand-in.
func (w *mediaWriter) appendMedia(out []byte, b message.MediaBlock) ([]byte, error) {
	k := w.n
	w.n++
	if w.media == nil || k >= len(w.media.Items) {
		return nil, fmt.Errorf("media blocks changed while the message was encoded") // unreachable: messages are not changed in place
	}
	it := w.media.Items[k]
	switch {
	case !it.Inline:
		return w.standIn(out, b, it.Why)
	case !w.media.Sent(k):
		return w.standIn(out, b, leftOut)
	case b.URL != "":
		return w.urlSource(out, b)
	}
	raw := b.Data
	if raw == nil {
		var ok bool
		if raw, ok = w.have[b.Blob]; !ok {
			return nil, fmt.Errorf("blob %s was not read", b.Blob) // unreachable: Encodings reads first
		}
	}
	if why := overLimit(b, int64(len(raw))); why != "" {
		return w.standIn(out, b, why)
	}
	switch {
	case b.Kind == message.TypeImage:
		out = append(out, `{"type":"image","source":{"type":"base64","media_type":"`...)
		out = append(out, imageMIME(b.MimeType)...)
		out = append(out, `","data":"`...)
		out = base64.StdEncoding.AppendEncode(out, raw)
		return append(out, `"}}`...), nil
	case isText(b.MimeType):
		if !utf8.Valid(raw) || isBlank(string(raw)) {
			return w.standIn(out, b, "not sent: not plain UTF-8 text")
		}
		out = append(out, `{"type":"document","source":{"type":"text","media_type":"text/plain","data":`...)
		out, err := w.json(out, string(raw))
		if err != nil {
			return nil, err
		}
		return w.title(append(out, '}'), b)
	default: // a PDF
		out = append(out, `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"`...)
		out = base64.StdEncoding.AppendEncode(out, raw)
		return w.title(append(out, `"}`...), b)
	}
}

// urlSource writes an image or a PDF given by its url.
func (w *mediaWriter) urlSource(out []byte, b message.MediaBlock) ([]byte, error) {
	kind := "document"
	if b.Kind == message.TypeImage {
		kind = "image"
	}
	out = append(out, `{"type":"`+kind+`","source":{"type":"url","url":`...)
	out, err := w.json(out, b.URL)
	if err != nil {
		return nil, err
	}
	out = append(out, '}')
	if kind == "image" {
		return append(out, '}'), nil
	}
	return w.title(out, b)
}

// title ends a document block, with the file's name as its title.
func (w *mediaWriter) title(out []byte, b message.MediaBlock) ([]byte, error) {
	if b.Filename != "" {
		var err error
		out = append(out, `,"title":`...)
		if out, err = w.json(out, b.Filename); err != nil {
			return nil, err
		}
	}
	return append(out, '}'), nil
}

func (w *mediaWriter) standIn(out []byte, b message.MediaBlock, why string) ([]byte, error) {
	return w.json(out, textBlock{Type: "text", Text: model.StandIn(b, why)})
}

// encodeMedia encodes a message with media (see encodeMessage): written
// by hand into one buffer, the bytes in base64 straight into it, with
// encoding/json for the rest. A tool result with attachments carries
// them inside its content, before its text (images before text, as the
// API's documentation advises).
func encodeMedia(i int, msg message.Message, f fragment, s *model.Sends, blobs map[string][]byte) (fragment, error) {
	var scratch bytes.Buffer
	enc := json.NewEncoder(&scratch)
	enc.SetEscapeHTML(false)
	js := func(out []byte, v any) ([]byte, error) {
		scratch.Reset()
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		return append(out, scratch.Bytes()[:scratch.Len()-1]...), nil
	}
	w := &mediaWriter{media: s, have: blobs, json: js}
	grow := 256 * len(msg.Content)
	for k, it := range s.Items {
		if s.Sent(k) {
			grow += base64.StdEncoding.EncodedLen(int(it.Size)) + 128
		}
	}
	out := make([]byte, 0, grow)
	var err error
	for j, block := range msg.Content {
		at := len(out)
		if at > 0 {
			out = append(out, ',')
		}
		switch b := block.(type) {
		case message.MediaBlock:
			if msg.Role != message.RoleUser {
				out = out[:at]
				continue
			}
			out, err = w.appendMedia(out, b)
		case message.ToolResultBlock:
			if msg.Role != message.RoleTool {
				out = out[:at]
				continue
			}
			out, err = w.appendResult(out, b)
		default:
			v := appendBlock(msg.Role, block)
			if v == nil {
				out = out[:at]
				continue
			}
			out, err = js(out, v)
		}
		if err != nil {
			return f, fmt.Errorf("anthropic: messages[%d].content[%d]: %w", i, j, err)
		}
	}
	f.blocks = out
	return f, nil
}

// appendResult writes a tool_result block: as appendBlock makes it, or,
// with attachments, with its content an array of them and its text.
func (w *mediaWriter) appendResult(out []byte, r message.ToolResultBlock) ([]byte, error) {
	if len(r.Attachments) == 0 {
		return w.json(out, appendBlock(message.RoleTool, r))
	}
	out = append(out, `{"type":"tool_result","tool_use_id":`...)
	out, err := w.json(out, toolID(r.ToolCallID))
	if err != nil {
		return nil, err
	}
	out = append(out, `,"content":[`...)
	for k, a := range r.Attachments {
		if k > 0 {
			out = append(out, ',')
		}
		if out, err = w.appendMedia(out, a); err != nil {
			return nil, err
		}
	}
	if text := resultText(r.Content); text != "" {
		out = append(out, ',')
		if out, err = w.json(out, textBlock{Type: "text", Text: text}); err != nil {
			return nil, err
		}
	}
	out = append(out, ']')
	if r.IsError {
		out = append(out, `,"is_error":true`...)
	}
	return append(out, '}'), nil
}
