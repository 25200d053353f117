package openai

import (
	"bytes"
	"encoding/json"
	"fmt"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// params builds the request body for req. The thread goes through
// message.ForModel again: it is a no-op for a thread that is already
// model-shaped (what agent.ModelNode sends) and makes a raw thread valid for
// callers that use the model directly.
func (m *Model) params(req model.Request) (oai.ChatCompletionNewParams, error) {
	p := oai.ChatCompletionNewParams{Model: m.name}
	msgs, err := chatMessages(message.ForModel(req.Messages))
	if err != nil {
		return p, err
	}
	if len(msgs) == 0 {
		return p, fmt.Errorf("openai: no messages to send")
	}
	p.Messages = msgs
	if len(req.Tools) > 0 {
		tools, err := chatTools(req.Tools)
		if err != nil {
			return p, err
		}
		p.Tools = tools
		// Several calls in one step; OpenAI refuses the flag without tools.
		p.ParallelToolCalls = oai.Bool(true)
	}
	return p, nil
}

// chatMessages maps a model-shaped thread to chat messages: one per
// message, except that a tool message becomes one chat message per result,
// in the order the results are listed (which ForModel makes the call order).
func chatMessages(thread []message.Message) ([]oai.ChatCompletionMessageParamUnion, error) {
	out := make([]oai.ChatCompletionMessageParamUnion, 0, len(thread))
	for i, msg := range thread {
		switch msg.Role {
		case message.RoleSystem:
			out = append(out, oai.SystemMessage(msg.Text()))
		case message.RoleUser:
			out = append(out, oai.UserMessage(msg.Text()))
		case message.RoleAssistant:
			out = append(out, assistantMessage(msg))
		case message.RoleTool:
			for _, r := range msg.ToolResults() {
				out = append(out, oai.ToolMessage(ResultText(r), r.ToolCallID))
			}
		default:
			return nil, fmt.Errorf("openai: messages[%d]: role %q cannot be sent to a chat model", i, msg.Role)
		}
	}
	return out, nil
}

func assistantMessage(msg message.Message) oai.ChatCompletionMessageParamUnion {
	var a oai.ChatCompletionAssistantMessageParam
	text, calls := msg.Text(), msg.ToolCalls()
	// OpenAI's own answers carry "content": null next to tool_calls; an
	// assistant message with neither gets "" rather than nothing.
	if text != "" || len(calls) == 0 {
		a.Content.OfString = oai.String(text)
	}
	for _, c := range calls {
		a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
				ID: c.ID,
				Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name:      c.Name,
					Arguments: argumentsText(c.Arguments),
				},
			},
		})
	}
	return oai.ChatCompletionMessageParamUnion{OfAssistant: &a}
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

func chatTools(specs []sdk.ToolSpec) ([]oai.ChatCompletionToolUnionParam, error) {
	out := make([]oai.ChatCompletionToolUnionParam, 0, len(specs))
	for _, t := range specs {
		raw := bytes.TrimSpace(t.Parameters)
		if len(raw) == 0 {
			raw = sdk.EmptyObjectSchema
		}
		// Numbers stay as written (no float64 round trip of, say, a
		// maximum of 2^63-1).
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var schema map[string]any
		if err := dec.Decode(&schema); err != nil || schema == nil {
			return nil, fmt.Errorf("openai: tool %q: parameters are not a JSON object", t.Name)
		}
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(schema)}
		if t.Description != "" {
			fd.Description = oai.String(t.Description)
		}
		out = append(out, oai.ChatCompletionFunctionTool(fd))
	}
	return out, nil
}
