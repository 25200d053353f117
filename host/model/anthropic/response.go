package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// messagesPath is where the Messages API answers, under the base URL.
const messagesPath = "v1/messages"

// call sends the request and assembles the answer, from its events when it
// is streamed, passing text to onDelta (when set) as it comes.
func (m *Model) call(ctx context.Context, body []byte, stream bool, onDelta func(string)) (model.Response, error) {
	var res *http.Response
	accept := "application/json"
	if stream {
		accept = "text/event-stream"
	}
	if err := m.client.Post(ctx, messagesPath, body, &res, option.WithHeader("Accept", accept)); err != nil {
		return model.Response{}, err
	}
	if res == nil || res.Body == nil {
		return model.Response{}, protocolErrorf("the answer has no body")
	}
	defer res.Body.Close()
	if onDelta == nil {
		onDelta = func(string) {}
	}
	b := builder{maxTokens: m.maxTokens}

	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "application/json" {
		// A plain answer, or a server that ignored "stream": the whole
		// message at once.
		if err := b.whole(res.Body, stream, onDelta); err != nil {
			return model.Response{}, err
		}
		return b.response()
	}

	dec := ssestream.NewDecoder(res)
	if dec == nil {
		return model.Response{}, protocolErrorf("the streaming answer has no body")
	}
	n := 0
	for dec.Next() {
		if err := ctx.Err(); err != nil {
			return model.Response{}, err // cancelled: stop reading now
		}
		ev := dec.Event()
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 && ev.Type == "" {
			continue
		}
		n++
		var e event
		if len(data) > 0 {
			if err := json.Unmarshal(data, &e); err != nil {
				if ev.Type == "error" {
					return model.Response{}, &streamError{msg: errorMessage(data), events: n}
				}
				return model.Response{}, protocolErrorf("malformed stream event %d (%s), not a Messages API event (%v): %s", n, ev.Type, err, excerpt(data))
			}
		}
		typ := ev.Type
		if typ == "" {
			typ = e.Type // a server that sends no "event:" lines
		}
		if typ == "message_stop" {
			b.stopped = true
			drain(res.Body)
			break
		}
		if err := b.add(typ, &e, n, onDelta); err != nil {
			return model.Response{}, err
		}
	}
	if err := dec.Err(); err != nil {
		return model.Response{}, fmt.Errorf("the stream broke off after %d events: %w", n, err)
	}
	if !b.stopped && b.stop == "" {
		return model.Response{}, protocolErrorf("the stream ended after %d events before the model finished (no stop_reason and no message_stop): the connection was cut, or the server does not speak the Messages API's stream format", n)
	}
	return b.response()
}

// drain reads what is left of a finished stream, up to a bound: closing a
// body before its end makes net/http close the connection instead of
// reusing it.
func drain(body io.Reader) {
	_, _ = io.CopyN(io.Discard, body, 4<<10)
}

// event is one stream event's data, every type's fields in one struct so
// that each event is decoded once, with encoding/json (strict about types,
// so an event of the wrong shape is reported rather than read as empty).
type event struct {
	Type  string `json:"type"`
	Index *int   `json:"index"`
	// Message is message_start's (its usage counts the input).
	Message *struct {
		Usage *wireUsage `json:"usage"`
	} `json:"message"`
	// ContentBlock is content_block_start's.
	ContentBlock *wireBlock `json:"content_block"`
	// Delta is content_block_delta's (type, text, partial_json) or
	// message_delta's (stop_reason).
	Delta *struct {
		Type        string  `json:"type"`
		Text        string  `json:"text"`
		PartialJSON string  `json:"partial_json"`
		StopReason  *string `json:"stop_reason"`
	} `json:"delta"`
	// Usage is message_delta's: cumulative counts.
	Usage *wireUsage `json:"usage"`
	// Error is an error event's.
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// wireBlock is a content block of an answer.
type wireBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// wireUsage is an answer's token counts; a count the event leaves out is
// nil (message_delta's counts replace only those it has).
type wireUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
}

// builder assembles one answer.
type builder struct {
	maxTokens int
	blocks    map[int]*blockBuilder
	usage     struct{ input, output, cacheWrite, cacheRead int }
	stop      string // the stop_reason
	stopped   bool   // message_stop seen
}

type blockBuilder struct {
	index    int
	typ      string
	text     strings.Builder
	id, name string
	input    json.RawMessage // the input content_block_start gave
	partial  strings.Builder // input_json_delta pieces
}

func (b *builder) add(typ string, e *event, n int, onDelta func(string)) error {
	switch typ {
	case "ping":
	case "error":
		se := &streamError{events: n, msg: "(no message)"}
		if e.Error != nil {
			se.typ, se.msg = e.Error.Type, e.Error.Message
		}
		return se
	case "message_start":
		if e.Message == nil {
			return protocolErrorf("malformed stream event %d: message_start without a message", n)
		}
		b.count(e.Message.Usage)
	case "content_block_start":
		if e.Index == nil || *e.Index < 0 || e.ContentBlock == nil {
			return protocolErrorf("malformed stream event %d: content_block_start needs an index of 0 or more and a content_block", n)
		}
		return b.start(*e.Index, *e.ContentBlock, onDelta)
	case "content_block_delta":
		if e.Index == nil || e.Delta == nil {
			return protocolErrorf("malformed stream event %d: content_block_delta needs an index and a delta", n)
		}
		c := b.blocks[*e.Index]
		if c == nil {
			return protocolErrorf("malformed stream event %d: a delta for content block %d, which was never started", n, *e.Index)
		}
		switch e.Delta.Type {
		case "text_delta":
			if c.typ != "text" {
				return protocolErrorf("malformed stream event %d: a text_delta for content block %d, a %s block", n, c.index, c.typ)
			}
			if e.Delta.Text != "" {
				c.text.WriteString(e.Delta.Text)
				onDelta(e.Delta.Text)
			}
		case "input_json_delta":
			if c.typ != "tool_use" {
				return protocolErrorf("malformed stream event %d: an input_json_delta for content block %d, a %s block", n, c.index, c.typ)
			}
			c.partial.WriteString(e.Delta.PartialJSON)
		}
		// thinking_delta, signature_delta, citations_delta…: not kept.
	case "content_block_stop":
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != nil {
			b.stop = *e.Delta.StopReason
		}
		b.count(e.Usage)
	}
	// Other event types: the API may add some, and clients are to
	// ignore what they do not know.
	return nil
}

func (b *builder) start(index int, cb wireBlock, onDelta func(string)) error {
	if b.blocks == nil {
		b.blocks = map[int]*blockBuilder{}
	}
	if b.blocks[index] != nil {
		return protocolErrorf("content block %d started twice", index)
	}
	c := &blockBuilder{index: index, typ: cb.Type, id: cb.ID, name: cb.Name, input: cb.Input}
	b.blocks[index] = c
	if cb.Type == "text" && cb.Text != "" {
		c.text.WriteString(cb.Text)
		onDelta(cb.Text)
	}
	return nil
}

// count takes the counts u has: message_start's, then message_delta's
// cumulative ones.
func (b *builder) count(u *wireUsage) {
	if u == nil {
		return
	}
	for _, f := range []struct {
		from *int
		to   *int
	}{{u.InputTokens, &b.usage.input}, {u.OutputTokens, &b.usage.output}, {u.CacheCreationInputTokens, &b.usage.cacheWrite}, {u.CacheReadInputTokens, &b.usage.cacheRead}} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
}

// maxAnswer bounds a non-streamed answer (a stream is bounded per line by
// the SSE decoder).
const maxAnswer = 64 << 20

// whole reads a non-streamed answer: one message object.
func (b *builder) whole(body io.Reader, streamed bool, onDelta func(string)) error {
	data, err := io.ReadAll(io.LimitReader(body, maxAnswer+1))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if len(data) > maxAnswer {
		return protocolErrorf("the answer is larger than %d bytes", maxAnswer)
	}
	var msg struct {
		Type       string      `json:"type"`
		Content    []wireBlock `json:"content"`
		StopReason *string     `json:"stop_reason"`
		Usage      *wireUsage  `json:"usage"`
	}
	if err := json.Unmarshal(data, &msg); err != nil || msg.Type != "message" {
		if err == nil {
			err = fmt.Errorf("type %q, want \"message\"", msg.Type)
		}
		what := ""
		if streamed {
			what = "asked for a stream, got JSON, and "
		}
		return protocolErrorf("%sthe answer is not a Messages API message (%v): %s", what, err, excerpt(data))
	}
	for i, cb := range msg.Content {
		if err := b.start(i, cb, onDelta); err != nil {
			return err
		}
	}
	if msg.StopReason != nil {
		b.stop = *msg.StopReason
	}
	b.stopped = true
	b.count(msg.Usage)
	return nil
}

// response checks the assembled answer and turns it into a message.
func (b *builder) response() (model.Response, error) {
	blocks := make([]*blockBuilder, 0, len(b.blocks))
	for _, c := range b.blocks {
		blocks = append(blocks, c)
	}
	sort.Slice(blocks, func(i, j int) bool { return blocks[i].index < blocks[j].index })

	msg := message.Message{Role: message.RoleAssistant}
	calls, text := 0, 0
	var last *blockBuilder
	for _, c := range blocks {
		switch c.typ {
		case "text":
			if c.text.Len() == 0 {
				continue
			}
			msg.Content = append(msg.Content, message.TextBlock{Text: c.text.String()})
			text += c.text.Len()
		case "tool_use":
			if c.name == "" {
				return model.Response{}, protocolErrorf("tool_use block %d (id %q) has no name", c.index, c.id)
			}
			id := c.id
			if id == "" {
				id = fmt.Sprintf("toolu_%d", calls)
			}
			msg.Content = append(msg.Content, message.ToolCallBlock{ID: id, Name: c.name, Arguments: arguments(c)})
			calls++
		default:
			continue // thinking, redacted_thinking, server tools' blocks: not kept
		}
		last = c
	}

	switch b.stop {
	case "max_tokens", "model_context_window_exceeded":
		limit := fmt.Sprintf("its output limit (stop_reason %q)", b.stop)
		raise := fmt.Sprintf("Raise model.max_tokens (now %d) or ask for less in one step", b.maxTokens)
		if b.stop == "model_context_window_exceeded" {
			limit = "the end of its context window (stop_reason \"model_context_window_exceeded\")"
			raise = "The thread is too long for this model: start a new thread or use a model with a larger context"
		}
		if last != nil && last.typ == "tool_use" {
			return model.Response{}, protocolErrorf("the model hit %s in the middle of a tool call to %q: its input is cut off after %d bytes. %s", limit, last.name, last.partial.Len(), raise)
		}
		if calls == 0 && text == 0 {
			return model.Response{}, protocolErrorf("the model hit %s before it said anything. %s", limit, raise)
		}
	case "refusal":
		if calls > 0 || text == 0 {
			return model.Response{}, protocolErrorf("the model declined to answer (stop_reason \"refusal\"): Anthropic's safety systems stopped the answer; rephrase the request or start a new thread")
		}
	case "pause_turn":
		if calls == 0 && text == 0 {
			return model.Response{}, protocolErrorf("the model paused its turn (stop_reason \"pause_turn\") without saying anything")
		}
	}
	if len(msg.Content) == 0 {
		msg.Content = []message.Block{message.TextBlock{Text: ""}}
	}
	u := b.usage
	return model.Response{Message: msg, Usage: model.Usage{
		InputTokens:              u.input + u.cacheWrite + u.cacheRead,
		OutputTokens:             u.output,
		CacheCreationInputTokens: u.cacheWrite,
		CacheReadInputTokens:     u.cacheRead,
	}}, nil
}

// arguments is a tool_use block's input as a JSON object: the pieces of
// its input_json_delta events joined, or the input its start gave when
// there were none. Empty input is {}. Anything that is not one JSON object
// the thread can be read back with (package strictjson) is kept as the
// model's text under message.InvalidArgumentsKey, so the ToolNode answers
// the call with an error result the model can act on instead of the run
// failing.
func arguments(c *blockBuilder) json.RawMessage {
	raw := c.partial.String()
	if strings.TrimSpace(raw) == "" {
		raw = string(bytes.TrimSpace(c.input))
	}
	t := strings.TrimSpace(raw)
	if t == "" || t == "null" {
		return json.RawMessage(`{}`)
	}
	if t[0] == '{' && strictjson.Check([]byte(t)) == nil {
		var b bytes.Buffer
		_ = json.Compact(&b, []byte(t)) // valid, so it compacts
		return b.Bytes()
	}
	out, _ := json.Marshal(map[string]string{message.InvalidArgumentsKey: raw}) // strings always encode
	return out
}

// errorMessage is the message of an error body in any of the shapes
// servers use: Anthropic's {"type": "error", "error": {"message": ...}},
// {"error": "..."}, {"message": ...}, {"detail": ...}, or the start of
// anything else.
func errorMessage(data []byte) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(data, &e) != nil {
		return snippet(data)
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(e.Error, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	for _, raw := range []json.RawMessage{e.Error, e.Message, e.Detail} {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	return snippet(data)
}

// snippet is the start of data as one line of text, for error messages.
func snippet(data []byte) string {
	const limit = 300
	s := strings.Join(strings.Fields(string(data)), " ")
	if len(s) > limit {
		s = strings.ToValidUTF8(s[:limit], "") + "…"
	}
	if s == "" {
		return "(empty)"
	}
	return s
}

func excerpt(data []byte) string {
	const limit = 200
	s := string(data)
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// streamError is an error event in the middle of a stream: the server's
// error type and message.
type streamError struct {
	typ, msg string
	events   int
}

func (e *streamError) Error() string {
	s := fmt.Sprintf("the server reported an error in the middle of the stream (event %d): %s", e.events, e.msg)
	if e.typ != "" {
		s += " (" + e.typ + ")"
	}
	if e.typ == "overloaded_error" {
		s += "; Anthropic's servers are overloaded, try again later"
	}
	return s
}
