package graph

import (
	"github.com/tenxgraph/tenxgraph/host/message"
)

// Event reports progress of a run. Type names the event (it becomes the SSE
// event name over HTTP) and Data holds the payload documented with each type.
// Nodes add their own types (the ToolNode's tool events are in toolnode).
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

// Interrupted lists what a paused run waits for.
type Interrupted struct {
	RemoteToolCalls  []message.RemoteToolCallBlock  `json:"remote_tool_calls"`
	ApprovalRequests []message.ApprovalRequestBlock `json:"approval_requests,omitempty"`
	// Interrupts are all the pending interrupts, whatever they ask.
	Interrupts []Interrupt `json:"-"`
}

// Usage is token accounting for one model call.
type Usage struct {
	Node         string `json:"node"`
	InputTokens  int    `json:"input_tokens"`
	OutputTokens int    `json:"output_tokens"`
}

// Listening says whether a Stream consumer receives the run's events (as
// opposed to Invoke, where only the app's observer may), so that work done
// only to report, such as asking a tool for its progress, can be skipped.
func (r *Run) Listening() bool { return r.listening }
