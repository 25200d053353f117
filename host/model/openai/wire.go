package openai

import (
	"encoding/json"
	"strings"
)

// chatRequest is a Chat Completions request. encode writes it as it goes
// on the wire, with encoding/json from these few types rather than through
// the SDK's parameter types, whose reflective encoder took a tenth of the
// server's CPU per round trip, and with each message's encoding kept from
// the thread's last call (see Model.messages); the SDK still sends it
// (retries, middleware, error answers).
type chatRequest struct {
	Model string
	// messages are the chat messages, encoded (see Model.messages);
	// encode puts them in the JSON array "messages".
	messages [][]byte
	chatRequestRest
}

// chatRequestRest is a request's fields after the messages, as they go on
// the wire.
type chatRequestRest struct {
	Tools             []chatTool     `json:"tools,omitempty"`
	ParallelToolCalls bool           `json:"parallel_tool_calls,omitempty"`
	Stream            bool           `json:"stream,omitempty"`
	StreamOptions     *streamOptions `json:"stream_options,omitempty"`
}

type chatMessage struct {
	Role string `json:"role"`
	// Content is null only for an assistant message with tool calls and
	// no text, as in OpenAI's own answers.
	Content    *string        `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	// parts, when set, are a user message's content instead: an array
	// with media, written by appendPart.
	parts []chatPart
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON text
}

type chatTool struct {
	Type     string          `json:"type"` // "function"
	Function chatFunctionDef `json:"function"`
}

type chatFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
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
