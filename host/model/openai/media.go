package openai

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
)

// What one request carries at most, by OpenAI's published limits for Chat
// Completions: an image up to 20 MB, 500 images and 50 MB of them per
// request, PDFs up to 32 MB in all. Audio has no published limit; 20 MB
// is ours. A block over its own limit is sent as a text stand-in saying
// so (message.MediaBlock.Describe), on every turn, so an oversized image
// costs the model a line of text instead of failing every later request.
// When a thread's media do not all fit in one request, the newest are
// sent and every older one becomes a stand-in. Sizes are those the host
// stored with the blocks (Size), checked again on the bytes read.
const (
	maxImageBytes = 20_000_000
	maxFileBytes  = 32_000_000
	maxAudioBytes = 20_000_000
	maxImages     = 500
	maxMediaBytes = 50_000_000 // all media sent in one request
	maxPDFBytes   = 32_000_000 // the PDFs among them
)

// limits are what one request carries.
var limits = model.Limits{Images: maxImages, Bytes: maxMediaBytes, PDFBytes: maxPDFBytes}

// classify says whether b can be sent, and if not why.
func classify(b message.MediaBlock) model.Item {
	size := b.Size
	if b.Data != nil {
		size = int64(len(b.Data))
	}
	it := model.Item{Inline: true, Size: size, Ref: b.Blob}
	switch b.Kind {
	case message.TypeImage:
		it.Image = true
		if imageMIME(b.MimeType) == "" {
			return model.Item{Why: "not sent: Chat Completions takes PNG, JPEG, GIF and WebP images"}
		}
		if b.URL != "" {
			it.Size = 0 // the server fetches it
		}
	case message.TypeFile:
		it.PDF = true
		switch {
		case b.MimeType != "application/pdf":
			return model.Item{Why: "not sent: Chat Completions takes PDF files only"}
		case b.URL != "":
			return model.Item{Why: "not sent: Chat Completions takes a file's bytes, not its url"}
		}
	case message.TypeAudio:
		switch {
		case audioFormat(b.MimeType) == "":
			return model.Item{Why: "not sent: Chat Completions takes WAV and MP3 audio only"}
		case b.URL != "":
			return model.Item{Why: "not sent: Chat Completions takes audio's bytes, not its url"}
		}
	default:
		return model.Item{Why: "not sent: not an image, file or audio"}
	}
	if b.Data == nil && b.URL == "" && b.Blob == "" {
		return model.Item{Why: "not sent: the block has no bytes"}
	}
	if why := overLimit(b.Kind, it.Size); why != "" {
		return model.Item{Why: why}
	}
	return it
}

// overLimit says why a block of size bytes is too large to send, or "".
func overLimit(kind string, size int64) string {
	switch {
	case kind == message.TypeImage && size > maxImageBytes:
		return "not sent: larger than the 20 MB an image may be"
	case kind == message.TypeFile && size > maxFileBytes:
		return "not sent: larger than the 32 MB a PDF may be"
	case kind == message.TypeAudio && size > maxAudioBytes:
		return "not sent: larger than the 20 MB audio may be here"
	}
	return ""
}

// leftOut is why a block that would fit on its own is a stand-in.
const leftOut = model.LeftOut + ", up to 500 images and 50 MB"

// imageMIME is the type a data URL names for an image Chat Completions
// takes, "" for others.
func imageMIME(mime string) string {
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return mime
	case "image/jpg":
		return "image/jpeg"
	}
	return ""
}

// audioFormat is input_audio's format for a type, "" when it takes none.
func audioFormat(mime string) string {
	switch mime {
	case "audio/wav", "audio/wave", "audio/x-wav", "audio/vnd.wave":
		return "wav"
	case "audio/mpeg", "audio/mp3":
		return "mp3"
	}
	return ""
}

// appendPart writes p as encoding/json writes the part of OpenAI's wire
// format (TestHistoriesEncodeMediaAsTheWholeThreadWould checks the two
// agree); str writes a JSON string.
func appendPart(b []byte, p chatPart, str func([]byte, string) []byte) []byte {
	switch p.Type {
	case "text":
		b = append(b, `{"type":"text","text":`...)
		b = str(b, p.Text)
	case "image_url":
		b = append(b, `{"type":"image_url","image_url":{"url":`...)
		if p.Data == nil {
			b = str(b, p.URL)
		} else {
			b = appendDataURL(b, p.MIME, p.Data)
		}
		b = append(b, '}')
	case "file":
		b = append(b, `{"type":"file","file":{"filename":`...)
		b = str(b, p.Filename)
		b = append(b, `,"file_data":`...)
		b = appendDataURL(b, p.MIME, p.Data)
		b = append(b, '}')
	case "input_audio":
		b = append(b, `{"type":"input_audio","input_audio":{"data":"`...)
		b = base64.StdEncoding.AppendEncode(b, p.Data)
		b = append(b, `","format":`...)
		b = str(b, p.Format)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendDataURL writes "data:<mime>;base64,<data>" as a JSON string. The
// type is one of the few the provider sends (imageMIME, a PDF's), which
// need no escaping.
func appendDataURL(b []byte, mime string, data []byte) []byte {
	b = append(b, `"data:`...)
	b = append(b, mime...)
	b = append(b, `;base64,`...)
	b = base64.StdEncoding.AppendEncode(b, data)
	return append(b, '"')
}

// sender turns one message's media blocks into parts, knowing which the
// request carries and the bytes read for it.
type sender struct {
	media *model.Sends // nil when the message has none
	have  map[string][]byte
	n     int // media blocks seen so far
	grow  int // bytes their encodings take
}

// part is the message's next media block, b, as a part, and whether it is
// the block itself rather than a stand-in.
func (s *sender) part(b message.MediaBlock) (chatPart, bool, error) {
	k := s.n
	s.n++
	if s.media == nil || k >= len(s.media.Items) {
		return chatPart{}, false, errors.New("media blocks changed while the message was encoded") // unreachable: messages are not changed in place
	}
	it := s.media.Items[k]
	switch {
	case !it.Inline:
		return standInPart(b, it.Why), false, nil
	case !s.media.Sent(k):
		return standInPart(b, leftOut), false, nil
	case b.URL != "": // an image (classify sends no other by url)
		return chatPart{Type: "image_url", URL: b.URL}, true, nil
	}
	raw := b.Data
	if raw == nil {
		var ok bool
		if raw, ok = s.have[b.Blob]; !ok {
			return chatPart{}, false, fmt.Errorf("blob %s was not read", b.Blob) // unreachable: Encodings reads first
		}
	}
	if why := overLimit(b.Kind, int64(len(raw))); why != "" {
		return standInPart(b, why), false, nil
	}
	s.grow += base64.StdEncoding.EncodedLen(len(raw)) + 64
	switch b.Kind {
	case message.TypeImage:
		return chatPart{Type: "image_url", MIME: imageMIME(b.MimeType), Data: raw}, true, nil
	case message.TypeFile:
		name := b.Filename
		if name == "" {
			name = "document.pdf"
		}
		return chatPart{Type: "file", Filename: name, MIME: "application/pdf", Data: raw}, true, nil
	default:
		return chatPart{Type: "input_audio", Data: raw, Format: audioFormat(b.MimeType)}, true, nil
	}
}

func standInPart(b message.MediaBlock, why string) chatPart {
	return chatPart{Type: "text", Text: model.StandIn(b, why)}
}
