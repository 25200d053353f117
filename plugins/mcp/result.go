package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"path"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// part is one content block of a result: a block of the JSON content, or
// media (an image, a sound, an embedded resource's blob) to send as an
// attachment, with what to call it in a marker.
type part struct {
	block any
	media *sdk.Attachment
	what  string
}

// parts splits a result's content into blocks and media, in order. A text
// block that only repeats the structured content (as its JSON, or as one
// of its string fields, which is how servers keep older clients working)
// is left out: the model would read the same thing twice.
func parts(res *mcpsdk.CallToolResult) []part {
	var out []part
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcpsdk.TextContent:
			if res.StructuredContent == nil || !repeats(c.Text, res.StructuredContent) {
				out = append(out, part{block: textBlock(c.Text)})
			}
		case *mcpsdk.ImageContent:
			out = append(out, part{media: &sdk.Attachment{MimeType: orOctets(c.MIMEType), Data: c.Data}, what: "an image"})
		case *mcpsdk.AudioContent:
			out = append(out, part{media: &sdk.Attachment{MimeType: orOctets(c.MIMEType), Data: c.Data}, what: "a sound"})
		case *mcpsdk.EmbeddedResource:
			if r := c.Resource; r != nil && r.Blob != nil {
				a := sdk.Attachment{MimeType: orOctets(r.MIMEType), Filename: filename(r.URI), Data: r.Blob}
				out = append(out, part{media: &a, what: fmt.Sprintf("the resource %q", r.URI)})
				continue
			}
			out = append(out, part{block: block(c)})
		default:
			out = append(out, part{block: block(c)})
		}
	}
	return out
}

// resultValue is the tool result's JSON value, in the simplest shape that
// keeps everything but the media kept as attachments, with a text block
// (a marker) for each medium left out, at its place:
//
//   - one text block and no structured content: the text, as a JSON string;
//   - structured content and no other blocks: the structured content;
//   - otherwise {"content": [blocks...], "structured_content": ...}, each
//     block one of {"type":"text","text"}, {"type":"resource","uri",
//     "mime_type","text"} and {"type":"resource_link","uri","name",...}.
func resultValue(res *mcpsdk.CallToolResult, ps []part, leftOut map[int]string) any {
	var blocks []any
	for i, p := range ps {
		switch m, out := leftOut[i]; {
		case p.media == nil:
			blocks = append(blocks, p.block)
		case out:
			blocks = append(blocks, textBlock(m))
		}
	}
	switch {
	case res.StructuredContent == nil && len(blocks) == 1:
		if t, ok := blocks[0].(map[string]any); ok && t["type"] == "text" {
			return t["text"]
		}
	case res.StructuredContent != nil && len(blocks) == 0:
		return res.StructuredContent
	}
	out := map[string]any{"content": blocks}
	if blocks == nil {
		out["content"] = []any{}
	}
	if res.StructuredContent != nil {
		out["structured_content"] = res.StructuredContent
	}
	return out
}

// toolResult turns an MCP CallToolResult into the tool's result: its text
// and structured content as the JSON content (see resultValue), truncated
// past the server's max_output_bytes (see resultJSON); its images, sounds
// and embedded blobs as attachments, whole, in order, as long as they and
// the content stay within its max_result_bytes. A medium that does not
// fit, one past sdk.MaxAttachments, or one the host would refuse (no
// bytes, a type that is not a media type) is left out, with a marker in
// the content saying why. A resource link stays a mention in the content:
// the bridge never fetches it. The second result says whether anything
// was cut or left out.
func toolResult(res *mcpsdk.CallToolResult, s Server) (sdk.CallToolResponse, bool, error) {
	ps := parts(res)
	leftOut := map[int]string{}
	var kept []int
	for i, p := range ps {
		switch {
		case p.media == nil:
		case sdk.CheckAttachments([]sdk.Attachment{*p.media}) != nil:
			err := strings.TrimPrefix(sdk.CheckAttachments([]sdk.Attachment{*p.media}).Error(), "attachments[0].")
			leftOut[i] = fmt.Sprintf("[left out by tenxgraph: %s from MCP server %q that the host refuses: %s]", p.what, s.Name, err)
		case len(kept) == sdk.MaxAttachments:
			leftOut[i] = fmt.Sprintf("[left out by tenxgraph: %s of %d bytes (%s); a result carries at most %d attachments]", p.what, len(p.media.Data), p.media.MimeType, sdk.MaxAttachments)
		default:
			kept = append(kept, i)
		}
	}
	content, truncated, err := resultJSON(resultValue(res, ps, leftOut), s.maxOutput(), s.Name)
	if err != nil {
		return sdk.CallToolResponse{}, false, err
	}
	size := int64(len(content))
	for _, i := range kept {
		size += int64(len(ps[i].media.Data))
	}
	if s.MaxResultBytes > 0 && size > s.MaxResultBytes {
		// Keep what fits beside the content as it is with every medium
		// left out, which is at least as long as the content will be.
		worst := maps.Clone(leftOut)
		for _, i := range kept {
			worst[i] = marker(ps[i], s)
		}
		most, _, err := resultJSON(resultValue(res, ps, worst), s.maxOutput(), s.Name)
		if err != nil {
			return sdk.CallToolResponse{}, false, err
		}
		budget := s.MaxResultBytes - int64(len(most))
		fit := kept[:0]
		for _, i := range kept {
			if n := int64(len(ps[i].media.Data)); n <= budget {
				fit, budget = append(fit, i), budget-n
			} else {
				leftOut[i] = marker(ps[i], s)
			}
		}
		kept = fit
		if content, _, err = resultJSON(resultValue(res, ps, leftOut), s.maxOutput(), s.Name); err != nil {
			return sdk.CallToolResponse{}, false, err
		}
	}
	resp := sdk.CallToolResponse{Content: content, IsError: res.IsError}
	for _, i := range kept {
		resp.Attachments = append(resp.Attachments, *ps[i].media)
	}
	return resp, truncated || len(leftOut) > 0, nil
}

// marker is the text in place of a medium left out for its size.
func marker(p part, s Server) string {
	return fmt.Sprintf("[left out by tenxgraph: %s of %d bytes (%s); with the rest of the result it passes max_result_bytes (%d) of MCP server %q]",
		p.what, len(p.media.Data), p.media.MimeType, s.MaxResultBytes, s.Name)
}

func textBlock(text string) map[string]any { return map[string]any{"type": "text", "text": text} }

// orOctets is a medium's type, or application/octet-stream when the server
// gave none (a resource may leave it out).
func orOctets(mimeType string) string {
	if mimeType == "" {
		return "application/octet-stream"
	}
	return mimeType
}

// filename is the last segment of a resource's URI, when it is a name the
// host takes ("demo://resource/session/README.md.gz": "README.md.gz").
func filename(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return ""
	}
	name := u.Path
	if name == "" {
		name = u.Opaque
	}
	name = path.Base(name)
	if sdk.CheckAttachments([]sdk.Attachment{{MimeType: "a/b", Filename: name, Data: []byte{0}}}) != nil || name == "/" {
		return ""
	}
	return name
}

// repeats says whether text carries nothing the structured content lacks.
func repeats(text string, structured any) bool {
	var v any
	if json.Unmarshal([]byte(text), &v) == nil && reflect.DeepEqual(v, normalize(structured)) {
		return true
	}
	if m, ok := structured.(map[string]any); ok {
		for _, f := range m {
			if s, ok := f.(string); ok && s == text {
				return true
			}
		}
	}
	return false
}

// normalize gives v the types json.Unmarshal into any would give it.
func normalize(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}

// block is a content block that stays in the JSON content: a resource
// link, an embedded resource's text, or a content type this bridge does
// not know, as the SDK encodes it.
func block(c mcpsdk.Content) map[string]any {
	switch c := c.(type) {
	case *mcpsdk.ResourceLink:
		b := map[string]any{"type": "resource_link", "uri": c.URI, "name": c.Name}
		for k, v := range map[string]string{"title": c.Title, "description": c.Description, "mime_type": c.MIMEType} {
			if v != "" {
				b[k] = v
			}
		}
		if c.Size != nil {
			b["size"] = *c.Size
		}
		return b
	case *mcpsdk.EmbeddedResource:
		b := map[string]any{"type": "resource"}
		if r := c.Resource; r != nil {
			b["uri"] = r.URI
			if r.MIMEType != "" {
				b["mime_type"] = r.MIMEType
			}
			b["text"] = r.Text
		}
		return b
	}
	raw, _ := json.Marshal(c)
	var v map[string]any
	_ = json.Unmarshal(raw, &v)
	return v
}

// marshalPlain marshals without escaping <, > and & (a model reads this).
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// resultJSON is a result's value encoded, and truncated when it is longer
// than limit bytes: the longest texts are cut where the budget runs out,
// each cut ending in a marker that says how much is missing and which
// setting shows more. A result never fails for being large. The encoded
// result stays within limit, give or take a marker's length.
func resultJSON(v any, limit int, server string) (json.RawMessage, bool, error) {
	raw, err := marshalPlain(v)
	if err != nil {
		return nil, false, fmt.Errorf("encode the result: %w", err)
	}
	if len(raw) <= limit {
		return raw, false, nil
	}
	total := len(raw)
	budget := limit - 256
	for range 4 {
		t := truncator{budget: max(budget, 0), total: total, limit: limit, server: server}
		out, err := marshalPlain(t.walk(v, ""))
		if err != nil {
			return nil, false, fmt.Errorf("encode the result: %w", err)
		}
		// Escaping makes encoded text longer than the text: shrink the
		// budget by what it overshot, and try again.
		if len(out) <= limit || budget <= 0 {
			return out, true, nil
		}
		budget -= len(out) - limit + 256
	}
	t := truncator{total: total, limit: limit, server: server}
	out, err := marshalPlain(t.walk(v, ""))
	return out, true, err
}

// truncator cuts a result's strings to a byte budget, in document order.
type truncator struct {
	budget int
	total  int // the whole result's encoded size
	limit  int
	server string
	cut    bool
}

func (t *truncator) marker(shown, of int) string {
	return fmt.Sprintf("[truncated by tenxgraph: %d of %d bytes shown; the whole result is %d bytes, over max_output_bytes (%d) of MCP server %q]",
		shown, of, t.total, t.limit, t.server)
}

func (t *truncator) walk(v any, key string) any {
	switch x := v.(type) {
	case string:
		n := len(x)
		switch {
		case n <= t.budget:
			t.budget -= n
			return x
		case t.budget < 16 && t.cut && n < 64:
			return x // a short value (a type, a name) after a cut: keep
		}
		k := t.budget
		for k > 0 && k < n && !utf8.RuneStart(x[k]) {
			k--
		}
		t.budget, t.cut = 0, true
		if k == 0 {
			return t.marker(0, n)
		}
		return x[:k] + "\n" + t.marker(k, n)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = t.walk(e, "")
		}
		return out
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		// Short fields first, so a block keeps its type, uri and name even
		// when its text is cut; then document (key) order.
		sort.Slice(keys, func(i, j int) bool {
			si, sj := isSmall(x[keys[i]]), isSmall(x[keys[j]])
			if si != sj {
				return si
			}
			return keys[i] < keys[j]
		})
		out := make(map[string]any, len(x))
		for _, k := range keys {
			out[k] = t.walk(x[k], k)
		}
		return out
	}
	if raw, err := json.Marshal(v); err == nil {
		t.budget -= min(len(raw), t.budget)
	}
	return v
}

func isSmall(v any) bool {
	switch x := v.(type) {
	case string:
		return len(x) < 256
	case []any, map[string]any:
		return false
	}
	return true
}
