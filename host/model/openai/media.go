package openai

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

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

// partKind is how a media block goes in a chat message.
type partKind uint8

const (
	standIn   partKind = iota // a text part (message.MediaBlock.Describe)
	imagePart                 // image_url
	filePart                  // file, file_data
	audioPart                 // input_audio
)

// item is one media block of a message as a request's budget sees it,
// in the order the message sends them: a user message's media blocks, a
// tool message's attachments result by result.
type item struct {
	kind partKind // how it is sent when it fits; standIn: never inline
	why  string   // for a standIn: why it is not sent
	size int64    // the bytes it adds to a request
	ref  string   // the blob to read when it is sent, if any
	of   string   // what holds it, for errors: `message "m1"`, `the result of call "c1"`
}

// noun names an item's kind in errors.
func (it item) noun() string {
	switch it.kind {
	case filePart:
		return "file"
	case audioPart:
		return "audio"
	}
	return "image"
}

// mediaOf lists the media blocks msg sends, nil when it has none.
func mediaOf(msg message.Message) []item {
	var out []item
	switch msg.Role {
	case message.RoleUser:
		for _, c := range msg.Content {
			if b, ok := c.(message.MediaBlock); ok {
				it := classify(b)
				it.of = fmt.Sprintf("message %q", msg.ID)
				out = append(out, it)
			}
		}
	case message.RoleTool:
		for _, c := range msg.Content {
			if r, ok := c.(message.ToolResultBlock); ok {
				for _, a := range r.Attachments {
					it := classify(a)
					it.of = fmt.Sprintf("the result of call %q", r.ToolCallID)
					out = append(out, it)
				}
			}
		}
	}
	return out
}

// hasMedia reports whether msgs send any media block.
func hasMedia(msgs []message.Message) bool {
	for _, m := range msgs {
		for _, c := range m.Content {
			switch c := c.(type) {
			case message.MediaBlock:
				return true
			case message.ToolResultBlock:
				if len(c.Attachments) > 0 {
					return true
				}
			}
		}
	}
	return false
}

// classify says how b is sent: as which part, or as a stand-in and why.
func classify(b message.MediaBlock) item {
	size := b.Size
	if b.Data != nil {
		size = int64(len(b.Data))
	}
	it := item{size: size, ref: b.Blob}
	switch b.Kind {
	case message.TypeImage:
		it.kind = imagePart
		if imageMIME(b.MimeType) == "" {
			return item{why: "not sent: Chat Completions takes PNG, JPEG, GIF and WebP images"}
		}
		if b.URL != "" {
			it.size = 0 // the server fetches it
		}
	case message.TypeFile:
		it.kind = filePart
		switch {
		case b.MimeType != "application/pdf":
			return item{why: "not sent: Chat Completions takes PDF files only"}
		case b.URL != "":
			return item{why: "not sent: Chat Completions takes a file's bytes, not its url"}
		}
	case message.TypeAudio:
		it.kind = audioPart
		switch {
		case audioFormat(b.MimeType) == "":
			return item{why: "not sent: Chat Completions takes WAV and MP3 audio only"}
		case b.URL != "":
			return item{why: "not sent: Chat Completions takes audio's bytes, not its url"}
		}
	default:
		return item{why: "not sent: not an image, file or audio"}
	}
	if b.Data == nil && b.URL == "" && b.Blob == "" {
		return item{why: "not sent: the block has no bytes"}
	}
	if why := overLimit(it.kind, it.size); why != "" {
		return item{why: why}
	}
	return it
}

// overLimit says why a part of size bytes is too large to send, or "".
func overLimit(kind partKind, size int64) string {
	switch {
	case kind == imagePart && size > maxImageBytes:
		return "not sent: larger than the 20 MB an image may be"
	case kind == filePart && size > maxFileBytes:
		return "not sent: larger than the 32 MB a PDF may be"
	case kind == audioPart && size > maxAudioBytes:
		return "not sent: larger than the 20 MB audio may be here"
	}
	return ""
}

// leftOut is why a block that would fit on its own is a stand-in.
const leftOut = "left out: a request carries the newest media only, up to 500 images and 50 MB"

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

// chatPart is one part of a user message's content array. A media part
// holds its bytes, which appendPart writes in base64 straight into the
// message's encoding: once, with no string built on the way and no
// encoding/json scan of megabytes that need no escaping.
type chatPart struct {
	Type     string // "text", "image_url", "file" or "input_audio"
	Text     string // a text part's text
	URL      string // an image_url part's url, when it names one
	MIME     string // the type of a data: URL (image_url, file)
	Data     []byte // the bytes of an image_url, file or input_audio part
	Filename string // a file part's
	Format   string // an input_audio part's: "wav" or "mp3"
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
// request carries (the first cut are left out) and the bytes read for it.
type sender struct {
	items []item
	cut   int
	have  map[string][]byte
	n     int // media blocks seen so far
	grow  int // bytes their encodings take
}

// part is the n-th media block of the message, b, as a part, and whether
// it is the block itself rather than a stand-in.
func (s *sender) part(b message.MediaBlock) (chatPart, bool, error) {
	k := s.n
	s.n++
	if k >= len(s.items) {
		return chatPart{}, false, errors.New("media blocks changed while the message was encoded") // unreachable: messages are not changed in place
	}
	it := s.items[k]
	switch {
	case it.kind == standIn:
		return standInPart(b, it.why), false, nil
	case k < s.cut:
		return standInPart(b, leftOut), false, nil
	case b.URL != "": // an image (classify sends no other by url)
		return chatPart{Type: "image_url", URL: b.URL}, true, nil
	}
	raw := b.Data
	if raw == nil {
		var ok bool
		if raw, ok = s.have[b.Blob]; !ok {
			return chatPart{}, false, fmt.Errorf("blob %s was not read", b.Blob) // unreachable: encode reads first
		}
	}
	if why := overLimit(it.kind, int64(len(raw))); why != "" {
		return standInPart(b, why), false, nil
	}
	s.grow += base64.StdEncoding.EncodedLen(len(raw)) + 64
	switch it.kind {
	case imagePart:
		return chatPart{Type: "image_url", MIME: imageMIME(b.MimeType), Data: raw}, true, nil
	case filePart:
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
	return chatPart{Type: "text", Text: strings.TrimSuffix(b.Describe(), "]") + ": " + why + "]"}
}

// parts builds a message's content: text parts and media parts in the
// order of the blocks.
type parts struct {
	list    []chatPart
	standIn []bool // list[i] stands in for a media block
	media   bool   // some part is a media part
}

func (p *parts) text(s string) {
	if s != "" {
		p.list, p.standIn = append(p.list, chatPart{Type: "text", Text: s}), append(p.standIn, false)
	}
}

func (p *parts) add(part chatPart, media bool) {
	p.list, p.standIn = append(p.list, part), append(p.standIn, !media)
	p.media = p.media || media
}

// message is a user message of the parts: its content is the parts when
// one is a media part; else one string (text parts joined, stand-ins set
// off by a space, as message.TextView does), which every server takes,
// also one that reads text only.
func (p *parts) message() chatMessage {
	if p.media {
		return chatMessage{Role: "user", parts: p.list}
	}
	var b strings.Builder
	for i, part := range p.list {
		if i > 0 && (p.standIn[i] || p.standIn[i-1]) && !endsSpace(b.String()) && !strings.HasPrefix(part.Text, " ") && !strings.HasPrefix(part.Text, "\n") {
			b.WriteByte(' ')
		}
		b.WriteString(part.Text)
	}
	text := b.String()
	return chatMessage{Role: "user", Content: &text}
}

func endsSpace(s string) bool { return strings.HasSuffix(s, " ") || strings.HasSuffix(s, "\n") }

// need is a blob a message sends that has not been read yet.
type need struct {
	ref, kind, of string
}

// readBlobs reads the blobs needed, once each, into have.
func readBlobs(ctx context.Context, blobs model.BlobReader, needs []need, have map[string][]byte) error {
	for _, n := range needs {
		if _, ok := have[n.ref]; ok {
			continue
		}
		if blobs == nil {
			return fmt.Errorf("openai: %s holds the %s blob %s, and this host keeps no blobs to read it from", n.of, n.kind, n.ref)
		}
		raw, err := blobs.ReadBlob(ctx, n.ref)
		if err != nil {
			return fmt.Errorf("openai: cannot read the %s blob %s of %s: %w", n.kind, n.ref, n.of, err)
		}
		if raw == nil {
			raw = []byte{}
		}
		have[n.ref] = raw
	}
	return nil
}
