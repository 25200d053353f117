package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// resultValue turns an MCP CallToolResult into the tool result's JSON value,
// in the simplest shape that keeps everything:
//
//   - one text block and no structured content: the text, as a JSON string;
//   - structured content and no other blocks: the structured content;
//   - otherwise {"content": [blocks...], "structured_content": ...}, each
//     block one of {"type":"text","text"}, {"type":"image"|"audio",
//     "mime_type","data" (base64)}, {"type":"resource","uri","mime_type",
//     "text"|"blob" (base64)} and {"type":"resource_link","uri","name",...}.
//
// A text block that only repeats the structured content (as its JSON, or
// as one of its string fields, which is how servers keep older clients
// working) is left out: the model would read the same thing twice.
func resultValue(res *mcpsdk.CallToolResult) any {
	var blocks []any
	for _, c := range res.Content {
		if t, ok := c.(*mcpsdk.TextContent); ok && res.StructuredContent != nil && repeats(t.Text, res.StructuredContent) {
			continue
		}
		blocks = append(blocks, block(c))
	}
	switch {
	case res.StructuredContent == nil && len(blocks) == 1:
		if t, ok := res.Content[0].(*mcpsdk.TextContent); ok {
			return t.Text
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

func block(c mcpsdk.Content) map[string]any {
	switch c := c.(type) {
	case *mcpsdk.TextContent:
		return map[string]any{"type": "text", "text": c.Text}
	case *mcpsdk.ImageContent:
		return map[string]any{"type": "image", "mime_type": c.MIMEType, "data": base64.StdEncoding.EncodeToString(c.Data)}
	case *mcpsdk.AudioContent:
		return map[string]any{"type": "audio", "mime_type": c.MIMEType, "data": base64.StdEncoding.EncodeToString(c.Data)}
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
			if r.Blob != nil {
				b["blob"] = base64.StdEncoding.EncodeToString(r.Blob)
			} else {
				b["text"] = r.Text
			}
		}
		return b
	}
	raw, _ := json.Marshal(c)
	var v map[string]any
	_ = json.Unmarshal(raw, &v)
	return v
}

// encode marshals without escaping <, > and & (a model reads this).
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// resultJSON is resultValue encoded, and truncated when it is longer than
// limit bytes: the longest texts are cut where the budget runs out, each
// cut ending in a marker that says how much is missing and which setting
// shows more; base64 data that does not fit whole is left out (half an
// image is no image), with a marker in its place. A result never fails
// for being large. The encoded result stays within limit, give or take a
// marker's length.
func resultJSON(res *mcpsdk.CallToolResult, limit int, server string) (json.RawMessage, bool, error) {
	v := resultValue(res)
	raw, err := encode(v)
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
		out, err := encode(t.walk(v, ""))
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
	out, err := encode(t.walk(v, ""))
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
		case key == "data" || key == "blob":
			t.cut = true
			return fmt.Sprintf("[left out by tenxgraph: %d bytes of base64 data; the whole result is %d bytes, over max_output_bytes (%d) of MCP server %q]", n, t.total, t.limit, t.server)
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
