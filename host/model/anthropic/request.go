package anthropic

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tenxgraph/tenxgraph/host/model"
)

// request builds the body of req's call: the model, max_tokens, stream
// (when streams says so),
// the system blocks, the messages (merged into alternating turns) and the
// tools, in that order. The thread is rewritten for the model
// (message.ForModel) first, and each message's encoding is kept per thread
// (history.go).
func (m *Model) request(ctx context.Context, req model.Request) ([]byte, error) {
	return m.requestBody(ctx, req, streams(req, m.maxTokens))
}

// nonStreamingMaxTokens is the largest max_tokens asked for without a
// stream: the SDK's own rule (a longer answer may outlast the 10 minutes a
// network keeps an idle connection), which it enforces on its non-streaming
// method.
const nonStreamingMaxTokens = 128000 / 6

// streams reports whether req's call is streamed: when the caller wants the
// text as it comes, or the answer may take long.
func streams(req model.Request, maxTokens int) bool {
	return req.OnDelta != nil || maxTokens > nonStreamingMaxTokens
}

func (m *Model) requestBody(ctx context.Context, req model.Request, stream bool) ([]byte, error) {
	frags, err := m.fragments(ctx, req)
	if err != nil {
		return nil, err
	}
	var tools []byte
	if len(req.Tools) > 0 {
		ts := make([]wireTool, 0, len(req.Tools))
		for _, t := range req.Tools {
			schema, err := m.schemas.Canonical(t.Parameters)
			if err != nil {
				return nil, fmt.Errorf("anthropic: tool %q: %w", t.Name, err)
			}
			ts = append(ts, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
		}
		if tools, err = encode(ts); err != nil {
			return nil, fmt.Errorf("anthropic: tools: %w", err)
		}
	}
	name, err := encode(m.name)
	if err != nil {
		return nil, err
	}
	return assemble(name, m.maxTokens, stream, frags, tools)
}

// assemble writes the body. System fragments before the first other one
// are the top-level "system"; a later one is user text. Consecutive
// fragments of one role are one turn; fragments without blocks are left
// out.
func assemble(name []byte, maxTokens int, stream bool, frags []fragment, tools []byte) ([]byte, error) {
	n := len(name) + len(tools) + 96
	for _, f := range frags {
		n += len(f.blocks) + 32
	}
	out := make([]byte, 0, n)
	out = append(out, `{"model":`...)
	out = append(out, name...)
	out = append(out, `,"max_tokens":`...)
	out = strconv.AppendInt(out, int64(maxTokens), 10)
	if stream {
		out = append(out, `,"stream":true`...)
	}

	i := 0
	for ; i < len(frags) && (frags[i].role == roleSystem || len(frags[i].blocks) == 0); i++ {
	}
	system := false
	for _, f := range frags[:i] {
		if len(f.blocks) == 0 {
			continue
		}
		if !system {
			out = append(out, `,"system":[`...)
			system = true
		} else {
			out = append(out, ',')
		}
		out = append(out, f.blocks...)
	}
	if system {
		out = append(out, ']')
	}

	out = append(out, `,"messages":[`...)
	turns := 0
	var open byte // the role of the turn being written, 0 for none
	for _, f := range frags[i:] {
		if len(f.blocks) == 0 {
			continue
		}
		role := f.role
		if role == roleSystem {
			role = roleUser
		}
		switch {
		case role == open:
			out = append(out, ',')
		default:
			if open != 0 {
				out = append(out, "]},"...)
			}
			if role == roleAsst {
				out = append(out, `{"role":"assistant","content":[`...)
			} else {
				out = append(out, `{"role":"user","content":[`...)
			}
			open = role
			turns++
		}
		out = append(out, f.blocks...)
	}
	if open != 0 {
		out = append(out, "]}"...)
	}
	out = append(out, ']')
	if turns == 0 {
		return nil, fmt.Errorf("anthropic: no messages to send (the API needs at least one user or assistant message with content)")
	}
	if len(tools) > 0 {
		out = append(out, `,"tools":`...)
		out = append(out, tools...)
	}
	return append(out, '}', '\n'), nil
}
