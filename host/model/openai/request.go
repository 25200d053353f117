package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/sdk"
)

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
