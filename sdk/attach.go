package sdk

import (
	"errors"
	"fmt"
	"mime"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Attachment is an image, a sound or a file a tool returns beside its
// result's content: a screenshot, a chart, a PDF it made. Its bytes travel
// to the host as bytes (never as base64 inside the JSON content), and the
// model gets them as media: an image it sees, a document it reads, rather
// than a base64 string that fills its context.
type Attachment struct {
	// MimeType is the bytes' media type ("image/png", "application/pdf"):
	// image/* reaches the model as an image, audio/* as a sound, anything
	// else as a file. The host checks it against the bytes, and refuses a
	// result whose attachment claims to be what it is not.
	MimeType string
	// Filename is the name the bytes go by ("report.pdf"), if any: a name,
	// not a path.
	Filename string
	// Data are the bytes themselves.
	Data []byte
}

// Image is an image attachment: data in the format mimeType names, such as
// "image/png" or "image/jpeg".
func Image(mimeType string, data []byte) Attachment {
	return Attachment{MimeType: mimeType, Data: data}
}

// File is a file attachment, such as a PDF: a sound is a file whose
// mimeType is audio/*, and reaches the model as a sound. filename may be
// empty.
func File(mimeType, filename string, data []byte) Attachment {
	return Attachment{MimeType: mimeType, Filename: filename, Data: data}
}

// ToolResult is a result with attachments, for a typed tool (NewTool) or a
// Func to return: Content is encoded as the result's JSON, as any other
// returned value is, and Attachments travel beside it.
//
//	sdk.MustTool("screenshot", "Take a screenshot of a web page.",
//		func(ctx context.Context, in shotArgs) (sdk.ToolResult, error) {
//			png, err := capture(ctx, in.URL)
//			if err != nil {
//				return sdk.ToolResult{}, err
//			}
//			return sdk.ToolResult{
//				Content:     map[string]any{"url": in.URL, "width": 1280},
//				Attachments: []sdk.Attachment{sdk.Image("image/png", png)},
//			}, nil
//		})
//
// Content may be nil (the result's content is then null) when the
// attachments say it all.
type ToolResult struct {
	// Content is the result the model reads, encoded as JSON.
	Content any
	// Attachments are the images, sounds and files beside it, in order.
	Attachments []Attachment
}

// Limits of a result's attachments, which the host enforces: a result
// beyond them is an error result the model reads.
const (
	// MaxAttachments is the most attachments one result may carry: more
	// than a model can use in one turn, and a bound on the framing a
	// result's message may add to its bytes (see MessageBytes).
	MaxAttachments = 100
	// MaxMimeTypeBytes bounds an attachment's MimeType, parameters
	// included: RFC 6838 allows 127 bytes each of type and subtype.
	MaxMimeTypeBytes = 255
	// MaxFilenameBytes bounds an attachment's Filename, as common file
	// systems bound a name.
	MaxFilenameBytes = 255
)

// CheckAttachments reports the first attachment the host would refuse, by
// its index: more than MaxAttachments, an empty Data, a MimeType that is
// not a media type (type/subtype, optionally with parameters) of at most
// MaxMimeTypeBytes, or a Filename that is not a plain name (valid UTF-8,
// at most MaxFilenameBytes, no slash, backslash or control character, not
// "." or ".."). The host checks every result with it; whether the bytes
// are what MimeType says is checked when the host stores them.
func CheckAttachments(atts []Attachment) error {
	if len(atts) > MaxAttachments {
		return fmt.Errorf("attachments: %d of them, over the limit of %d per result", len(atts), MaxAttachments)
	}
	for i, a := range atts {
		if err := a.check(); err != nil {
			return fmt.Errorf("attachments[%d].%w", i, err)
		}
	}
	return nil
}

func (a Attachment) check() error {
	switch {
	case len(a.Data) == 0:
		return errors.New("data: empty")
	case a.MimeType == "":
		return errors.New("mime_type: missing")
	case len(a.MimeType) > MaxMimeTypeBytes:
		return fmt.Errorf("mime_type: %d bytes, over the limit of %d", len(a.MimeType), MaxMimeTypeBytes)
	}
	mt, _, err := mime.ParseMediaType(a.MimeType)
	if typ, sub, ok := strings.Cut(mt, "/"); err != nil || !ok || typ == "" || sub == "" {
		return fmt.Errorf("mime_type: %q is not a media type such as image/png", a.MimeType)
	}
	switch f := a.Filename; {
	case len(f) > MaxFilenameBytes:
		return fmt.Errorf("filename: %d bytes, over the limit of %d", len(f), MaxFilenameBytes)
	case !utf8.ValidString(f):
		return errors.New("filename: not valid UTF-8")
	case f == "." || f == "..":
		return fmt.Errorf("filename: %q is not a file's name", f)
	case strings.ContainsFunc(f, func(r rune) bool { return r == '/' || r == '\\' || unicode.IsControl(r) }):
		return fmt.Errorf("filename: %q is a path or holds a control character; give the name alone", f)
	}
	return nil
}
