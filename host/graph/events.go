package graph

import (
	"time"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// Event reports progress of a run. Type names the event (it becomes the SSE
// event name over HTTP) and Data holds the payload documented with each type.
type Event struct {
	Type string
	Data any
}

// Event types. The payload of each is the type named in its comment.
const (
	// EventRunStarted: RunStarted.
	EventRunStarted = "run_started"
	// EventNodeStarted and EventNodeFinished: NodeEvent.
	EventNodeStarted  = "node_started"
	EventNodeFinished = "node_finished"
	// EventTextDelta: TextDelta, model text as it is produced.
	EventTextDelta = "text_delta"
	// EventMessage: message.Message, each message added to the thread.
	EventMessage = "message"
	// EventToolStarted and EventToolFinished: ToolEvent, server tools.
	EventToolStarted  = "tool_started"
	EventToolFinished = "tool_finished"
	// EventToolIgnored: ToolIgnored, a per-run tool that was not offered.
	EventToolIgnored = "tool_ignored"
	// EventInterrupted: Interrupted, the run paused.
	EventInterrupted = "interrupted"
	// EventUsage: Usage, tokens a model call used.
	EventUsage = "usage"
	// EventEnd: Result; always the last event of a run that did not fail.
	EventEnd = "end"
)

// RunStarted opens a run's stream.
type RunStarted struct {
	ThreadID string `json:"thread_id"`
	RunID    string `json:"run_id"`
	// Resumed is true when the run continues a paused thread.
	Resumed bool `json:"resumed"`
}

// NodeEvent marks a node starting or finishing a super-step.
type NodeEvent struct {
	Node string `json:"node"`
	Step int    `json:"step"`
}

// TextDelta is a piece of model text.
type TextDelta struct {
	Node string `json:"node"`
	// MessageID is the id the finished message will have.
	MessageID string `json:"message_id"`
	Text      string `json:"text"`
}

// ToolEvent reports a server tool call.
type ToolEvent struct {
	Node     string        `json:"node"`
	ID       string        `json:"id"`
	Name     string        `json:"name"`
	Provider string        `json:"provider"`
	IsError  bool          `json:"is_error,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
}

// ToolIgnored says a per-run tool was not offered and why.
type ToolIgnored struct {
	Node   string `json:"node"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Interrupted lists the calls a paused run waits for.
type Interrupted struct {
	RemoteToolCalls []message.RemoteToolCallBlock `json:"remote_tool_calls"`
}

// Usage is token accounting for one model call.
type Usage struct {
	Node         string `json:"node"`
	InputTokens  int    `json:"input_tokens"`
	OutputTokens int    `json:"output_tokens"`
}
