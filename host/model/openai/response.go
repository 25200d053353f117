package openai

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

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// post sends the request and returns the raw answer once its status is a
// success (the SDK has retried what deserved it by then).
func (m *Model) post(ctx context.Context, p chatRequest, stream bool) (*http.Response, error) {
	body, err := p.encode()
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	// The body goes to the SDK as bytes (sent as application/json) and the
	// answer comes back unread: ChatCompletionService.New would encode an
	// empty ChatCompletionNewParams first only for this body to replace it,
	// and apply two more options, on every call.
	var res *http.Response
	var opts []option.RequestOption
	if stream {
		opts = []option.RequestOption{option.WithHeader("Accept", "text/event-stream")}
	}
	if err := m.client.Post(ctx, "chat/completions", body, &res, opts...); err != nil {
		return nil, err
	}
	if res == nil || res.Body == nil {
		return nil, protocolErrorf("the answer has no body")
	}
	return res, nil
}

// complete makes one non-streaming request.
func (m *Model) complete(ctx context.Context, p chatRequest) (model.Response, error) {
	res, err := m.post(ctx, p, false)
	if err != nil {
		return model.Response{}, err
	}
	defer res.Body.Close()
	return readCompletion(res.Body, "")
}

// readCompletion decodes a whole chat completion.
func readCompletion(body io.Reader, what string) (model.Response, error) {
	data, err := io.ReadAll(io.LimitReader(body, maxAnswer+1))
	if err != nil {
		return model.Response{}, fmt.Errorf("reading the answer: %w", err)
	}
	if len(data) > maxAnswer {
		return model.Response{}, protocolErrorf("the answer is larger than %d bytes", maxAnswer)
	}
	var cc completion
	if err := json.Unmarshal(data, &cc); err != nil {
		return model.Response{}, protocolErrorf("%sthe answer is not a chat completion (%v): %s", what, err, excerpt(data))
	}
	return cc.response()
}

// maxAnswer bounds a non-streamed answer (a stream is bounded per line by
// the SSE decoder).
const maxAnswer = 64 << 20

// completion is a whole chat.completion, decoded with encoding/json like a
// stream's chunks (strict about types, so an answer of the wrong shape is
// reported rather than read as empty). The SDK's reflective decoder it
// replaces took about 5 % of the server's CPU per round trip.
type completion struct {
	Choices []struct {
		Message struct {
			Content   *string         `json:"content"`
			Refusal   *string         `json:"refusal"`
			ToolCalls []toolCallDelta `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
}

func (cc *completion) response() (model.Response, error) {
	if len(cc.Choices) == 0 {
		return model.Response{}, protocolErrorf("the answer has no choices")
	}
	ch := cc.Choices[0]
	var b builder
	switch {
	case ch.Message.Content != nil && *ch.Message.Content != "":
		b.text.WriteString(*ch.Message.Content)
	case ch.Message.Refusal != nil:
		b.text.WriteString(*ch.Message.Refusal)
	}
	for i, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return model.Response{}, protocolErrorf("tool_calls[%d] has type %q; only function tools were offered", i, tc.Type)
		}
		// Each call comes whole: its place in the list is its index.
		tc.Index = &i
		if err := b.addCall(tc); err != nil {
			return model.Response{}, protocolErrorf("tool_calls[%d]: %v", i, err)
		}
	}
	if ch.FinishReason != nil {
		b.finish = *ch.FinishReason
	}
	b.usage = cc.Usage
	return b.response(false)
}

// stream makes one streaming request and assembles the answer from its
// chunks, passing text to onDelta as it comes.
func (m *Model) stream(ctx context.Context, p chatRequest, onDelta func(string)) (model.Response, error) {
	p.Stream, p.StreamOptions = true, &streamOptions{IncludeUsage: true}
	res, err := m.post(ctx, p, true)
	if err != nil {
		return model.Response{}, err
	}
	defer res.Body.Close()

	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "application/json" {
		// The server ignored "stream": take the whole answer at once.
		resp, err := readCompletion(res.Body, "asked for a stream, got JSON, and ")
		if err == nil && resp.Message.Text() != "" {
			onDelta(resp.Message.Text())
		}
		return resp, err
	}

	dec := ssestream.NewDecoder(res)
	if dec == nil {
		return model.Response{}, protocolErrorf("the streaming answer has no body")
	}
	var b builder
	n := 0
	for dec.Next() {
		ev := dec.Event()
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		n++
		if string(data) == "[DONE]" {
			b.done = true
			drain(res.Body)
			break
		}
		var c chunk
		err := json.Unmarshal(data, &c)
		if ev.Type == "error" || (err == nil && len(c.Error) > 0 && string(c.Error) != "null") {
			return model.Response{}, protocolErrorf("the server reported an error in the middle of the stream (chunk %d): %s", n, errorMessage(data))
		}
		if err != nil {
			return model.Response{}, protocolErrorf("malformed stream chunk %d, not a chat completion chunk (%v): %s", n, err, excerpt(data))
		}
		if err := b.add(c, n, onDelta); err != nil {
			return model.Response{}, err
		}
	}
	if err := dec.Err(); err != nil {
		return model.Response{}, fmt.Errorf("the stream broke off after %d chunks: %w", n, err)
	}
	return b.response(true)
}

// drain reads what is left of a finished stream, up to a bound: the stream
// is read up to its "data: [DONE]", and closing a body before its end (here,
// the chunked encoding's last chunk) makes net/http close the connection
// instead of reusing it. Under load, one model call in five opened a new
// connection.
func drain(body io.Reader) {
	_, _ = io.CopyN(io.Discard, body, 4<<10)
}

// chunk is one streamed chat.completion.chunk, decoded with encoding/json
// (strict about types, unlike the SDK's lenient decoder, so a chunk of the
// wrong shape is reported rather than read as empty).
type chunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   *string         `json:"content"`
			Refusal   *string         `json:"refusal"`
			ToolCalls []toolCallDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// builder assembles one answer.
type builder struct {
	text   strings.Builder
	calls  map[int]*callBuilder
	last   int // index of the call the latest delta went to
	finish string
	usage  *wireUsage
	done   bool // [DONE] seen
}

type callBuilder struct {
	index    int
	id, name string
	args     strings.Builder
	object   json.RawMessage // arguments sent whole as an object
}

func (b *builder) at(index int) *callBuilder {
	if b.calls == nil {
		b.calls = map[int]*callBuilder{}
	}
	c := b.calls[index]
	if c == nil {
		c = &callBuilder{index: index}
		b.calls[index] = c
	}
	b.last = index
	return c
}

func (b *builder) add(c chunk, n int, onDelta func(string)) error {
	if c.Usage != nil {
		b.usage = c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // n is never set, so there is one choice
		}
		var text string
		if ch.Delta.Content != nil {
			text += *ch.Delta.Content
		}
		if ch.Delta.Refusal != nil {
			text += *ch.Delta.Refusal
		}
		if text != "" {
			b.text.WriteString(text)
			onDelta(text)
		}
		for j, d := range ch.Delta.ToolCalls {
			if err := b.addCall(d); err != nil {
				return protocolErrorf("malformed stream chunk %d: tool_calls[%d]: %v", n, j, err)
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			b.finish = *ch.FinishReason
		}
	}
	return nil
}

// addCall merges one tool-call delta into the call at its index. The id and
// the name count whenever they come (some servers send the id last, some
// repeat the name in every delta); argument fragments are concatenated.
func (b *builder) addCall(d toolCallDelta) error {
	var index int
	switch {
	case d.Index != nil:
		if *d.Index < 0 {
			return fmt.Errorf("negative index %d", *d.Index)
		}
		index = *d.Index
	case len(b.calls) == 0:
		index = 0
	default:
		// No index (some servers send each call whole, unnumbered): a
		// new id starts a new call, anything else continues the last one.
		index = b.last
		if last := b.calls[b.last]; d.ID != "" && last.id != "" && d.ID != last.id {
			index = b.maxIndex() + 1
		}
	}
	c := b.at(index)
	if d.ID != "" && c.id == "" {
		c.id = d.ID
	}
	switch name := d.Function.Name; {
	case name == "" || name == c.name:
	case c.name == "":
		c.name = name
	default:
		c.name += name
	}
	args := bytes.TrimSpace(d.Function.Arguments)
	switch {
	case len(args) == 0 || string(args) == "null":
	case args[0] == '"':
		var s string
		if err := json.Unmarshal(args, &s); err != nil {
			return fmt.Errorf("function.arguments: %v", err)
		}
		c.args.WriteString(s)
	case args[0] == '{':
		c.object = json.RawMessage(args)
	default:
		return fmt.Errorf("function.arguments is %s, want a string", excerpt(args))
	}
	return nil
}

func (b *builder) maxIndex() int {
	m := -1
	for i := range b.calls {
		m = max(m, i)
	}
	return m
}

// response checks the assembled answer and turns it into a message.
func (b *builder) response(streamed bool) (model.Response, error) {
	if streamed && !b.done && b.finish == "" {
		return model.Response{}, protocolErrorf("the stream ended before the model finished (no finish_reason and no [DONE]): the connection was cut, or the server does not speak the Chat Completions stream format")
	}
	calls := make([]*callBuilder, 0, len(b.calls))
	for _, c := range b.calls {
		calls = append(calls, c)
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i].index < calls[j].index })

	if b.finish == "length" && len(calls) > 0 {
		last := calls[len(calls)-1]
		return model.Response{}, protocolErrorf("the model hit its output token limit (finish_reason \"length\") in the middle of a tool call to %q: its arguments are cut off after %d bytes. Raise the output limit (max_tokens, or the server's context size) or ask for less in one step", last.name, last.args.Len())
	}
	text := b.text.String()
	if b.finish == "content_filter" && text == "" && len(calls) == 0 {
		return model.Response{}, protocolErrorf("the server's content filter stopped the answer before it said anything (finish_reason \"content_filter\")")
	}

	msg := message.Message{Role: message.RoleAssistant}
	if text != "" || len(calls) == 0 {
		msg.Content = append(msg.Content, message.TextBlock{Text: text})
	}
	for i, c := range calls {
		if c.name == "" {
			return model.Response{}, protocolErrorf("tool call %d (index %d, id %q) has no function name", i, c.index, c.id)
		}
		id := c.id
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		msg.Content = append(msg.Content, message.ToolCallBlock{ID: id, Name: c.name, Arguments: arguments(c)})
	}
	var usage model.Usage
	if b.usage != nil {
		usage = model.Usage{InputTokens: b.usage.PromptTokens, OutputTokens: b.usage.CompletionTokens}
	}
	return model.Response{Message: msg, Usage: usage}, nil
}

// arguments is the call's arguments as a JSON object. Empty arguments are
// {}. Anything that is not one JSON object the thread can be read back with
// (package strictjson: no key twice, at most MaxDepth deep) is kept as the
// model's text under InvalidArgumentsKey: a thread must stay valid JSON to
// be checkpointed and read again, and
// the ToolNode's schema check then answers the call with an error result the
// model can act on, instead of the run failing.
func arguments(c *callBuilder) json.RawMessage {
	if c.object != nil {
		var b bytes.Buffer
		if strictjson.Check(c.object) == nil && json.Compact(&b, c.object) == nil {
			return b.Bytes()
		}
		return invalidArguments(string(c.object))
	}
	raw := c.args.String()
	t := strings.TrimSpace(raw)
	if t == "" || t == "null" {
		return json.RawMessage(`{}`)
	}
	if t[0] == '{' && strictjson.Check([]byte(t)) == nil {
		var b bytes.Buffer
		_ = json.Compact(&b, []byte(t)) // valid, so it compacts
		return b.Bytes()
	}
	return invalidArguments(raw)
}

func invalidArguments(text string) json.RawMessage {
	raw, _ := json.Marshal(map[string]string{InvalidArgumentsKey: text}) // strings always encode
	return raw
}

// errorMessage is the message of an error body in any of the shapes
// servers use: {"error": {"message": ...}}, {"error": "..."},
// {"message": ...}, {"detail": ...}, or the start of anything else.
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
