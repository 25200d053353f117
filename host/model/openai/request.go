package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/sdk"
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

// params builds the request for req. The thread goes through
// message.ForModel again: it is a no-op for a thread that is already
// model-shaped (what agent.ModelNode sends) and makes a raw thread valid for
// callers that use the model directly.
func (m *Model) params(ctx context.Context, req model.Request) (chatRequest, error) {
	p := chatRequest{Model: m.name}
	msgs, err := m.messages(ctx, req)
	if err != nil {
		return p, err
	}
	if !slices.ContainsFunc(msgs, func(f []byte) bool { return len(f) > 0 }) {
		return p, fmt.Errorf("openai: no messages to send")
	}
	p.messages = msgs
	if len(req.Tools) > 0 {
		tools, err := m.schemas.chatTools(req.Tools)
		if err != nil {
			return p, err
		}
		p.Tools = tools
		// Several calls in one step; OpenAI refuses the flag without tools.
		p.ParallelToolCalls = true
	}
	return p, nil
}

// encode writes the request's body: encoding/json's encoding of its
// fields, in their order, with the messages as they were encoded.
func (p chatRequest) encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p.Model); err != nil {
		return nil, err
	}
	model := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	var r bytes.Buffer
	enc = json.NewEncoder(&r)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p.chatRequestRest); err != nil {
		return nil, err
	}
	tail := bytes.TrimSuffix(r.Bytes(), []byte("\n")) // {...}
	n := len(model) + len(tail) + 32
	for _, m := range p.messages {
		n += len(m) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, `{"model":`...)
	out = append(out, model...)
	out = append(out, `,"messages":[`...)
	for _, m := range p.messages {
		if len(m) > 0 { // params made sure one is
			out = append(out, m...)
			out = append(out, ',')
		}
	}
	out[len(out)-1] = ']' // the last comma
	if len(tail) > 2 {
		out = append(out, ',')
		out = append(out, tail[1:]...)
	} else {
		out = append(out, '}')
	}
	return append(out, '\n'), nil
}

// chatMessagesOf maps a model-shaped thread's i-th message to chat messages:
// one, except that a tool message becomes one per result, in the order
// the results are listed (which ForModel makes the call order), followed
// by one user message with the results' attachments when they have any
// (a tool message takes text only). s sends the message's media.
func chatMessagesOf(i int, msg message.Message, s *sender) ([]chatMessage, error) {
	switch msg.Role {
	case message.RoleSystem:
		text := msg.Text()
		return []chatMessage{{Role: string(msg.Role), Content: &text}}, nil
	case message.RoleUser:
		if s.media == nil {
			text := msg.Text()
			return []chatMessage{{Role: "user", Content: &text}}, nil
		}
		var p parts
		for _, c := range msg.Content {
			switch c := c.(type) {
			case message.TextBlock:
				p.text(c.Text)
			case message.MediaBlock:
				part, media, err := s.part(c)
				if err != nil {
					return nil, fmt.Errorf("openai: messages[%d]: %w", i, err)
				}
				p.add(part, media)
			}
		}
		return []chatMessage{p.message()}, nil
	case message.RoleAssistant:
		return []chatMessage{assistantMessage(msg)}, nil
	case message.RoleTool:
		var out []chatMessage
		var p parts
		for _, r := range msg.ToolResults() {
			text := ResultText(r)
			if len(r.Attachments) > 0 {
				text += "\n\nAttached, in the user message after the tool results: " + message.DescribeAll(r.Attachments)
				p.text(fmt.Sprintf("Attached to the result of %s:", r.ToolCallID))
				for _, a := range r.Attachments {
					part, media, err := s.part(a)
					if err != nil {
						return nil, fmt.Errorf("openai: messages[%d]: %w", i, err)
					}
					p.add(part, media)
				}
			}
			out = append(out, chatMessage{Role: "tool", Content: &text, ToolCallID: r.ToolCallID})
		}
		if len(p.list) > 0 {
			out = append(out, p.message())
		}
		return out, nil
	}
	return nil, fmt.Errorf("openai: messages[%d]: role %q cannot be sent to a chat model", i, msg.Role)
}

func assistantMessage(msg message.Message) chatMessage {
	a := chatMessage{Role: "assistant"}
	text, calls := msg.Text(), msg.ToolCalls()
	// OpenAI's own answers carry "content": null next to tool_calls; an
	// assistant message with neither gets "" rather than nothing.
	if text != "" || len(calls) == 0 {
		a.Content = &text
	}
	for _, c := range calls {
		a.ToolCalls = append(a.ToolCalls, chatToolCall{ID: c.ID, Type: "function",
			Function: chatFunction{Name: c.Name, Arguments: argumentsText(c.Arguments)}})
	}
	return a
}

func argumentsText(args json.RawMessage) string {
	a := bytes.TrimSpace(args)
	if len(a) == 0 || string(a) == "null" {
		return "{}"
	}
	return string(a)
}

// ResultText is the text a tool result is sent as: a JSON string result as
// its text, any other JSON value as compact JSON, and an error result
// prefixed with "Error: " so the model knows the call failed.
func ResultText(r message.ToolResultBlock) string {
	text := jsonText(r.Content)
	if r.IsError {
		return "Error: " + text
	}
	return text
}

func jsonText(raw json.RawMessage) string {
	c := bytes.TrimSpace(raw)
	if len(c) == 0 {
		return "null"
	}
	if c[0] == '"' {
		var s string
		if json.Unmarshal(c, &s) == nil {
			return s
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, c) == nil {
		return b.String()
	}
	return string(c)
}

// schemaCache keeps the canonical encoding of the tool schemas a Model has
// sent (see model.Schemas).
type schemaCache struct{ model.Schemas }

func (c *schemaCache) chatTools(specs []sdk.ToolSpec) ([]chatTool, error) {
	out := make([]chatTool, 0, len(specs))
	for _, t := range specs {
		params, err := c.Canonical(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("openai: tool %q: %w", t.Name, err)
		}
		out = append(out, chatTool{Type: "function", Function: chatFunctionDef{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	return out, nil
}
