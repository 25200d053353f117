package graph

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// Interrupt is a question a node asks before it can finish: the run pauses
// at the end of the step, the interrupt is saved with the checkpoint, and
// once every interrupt of the pause has an answer the node runs again with
// the answers in Input.Resume. A node that interrupts may also return
// messages and values in the same Update: they are saved with the pause, so
// work it finished before asking is never done again.
type Interrupt struct {
	// ID names the interrupt; unique within the thread. An answer names it.
	ID string `json:"id"`
	// Node is the node that asked; the engine sets it.
	Node string `json:"node"`
	// Value is what the node asks, as JSON. When it is a message block
	// (remote_tool_call, approval_request), Result lists it under the
	// matching field.
	Value json.RawMessage `json:"value,omitempty"`
	// Deadline, when not zero, is when the interrupt expires unanswered.
	// The node that asks sets it; the engine saves it with the pause, asks
	// the store to wake the thread then (checkpoint.Checkpoint.WakeAt) and,
	// woken (Expire), answers the interrupt with an Answer whose Expired is
	// set. An answer that comes later is refused with ErrExpired.
	Deadline time.Time `json:"deadline,omitzero"`
}

// Answer is the reply to one interrupt.
type Answer struct {
	// Value is the answer as JSON: the answer block a client sent
	// (tool_result, approval), or a value given in RunConfig.Resume.
	Value json.RawMessage `json:"value"`
	// MessageID is the id of the input message that carried the answer,
	// when it carried only that one; a node may give its own message the
	// same id, so a client finds its answer under the name it chose.
	MessageID string `json:"message_id,omitempty"`
	// Expired: nobody answered before the interrupt's Deadline. Value is
	// empty; the node decides what the expiry means (a ToolNode gives the
	// model an error result).
	Expired bool `json:"expired,omitempty"`
}

// AnswerChecker is implemented by a node that judges the answers to its
// interrupts before they are accepted. An error refuses the whole request,
// which then changes nothing; wrap ErrInvalidInput or return a *StateError.
type AnswerChecker interface {
	CheckAnswer(threadID string, it Interrupt, a Answer) error
}

// RunChecker is implemented by a node that validates a run's configuration
// before the run changes anything (a ToolNode checks the run's client
// tools). An error fails the run with the thread untouched.
type RunChecker interface {
	CheckRun(ctx context.Context, r *Run) error
}

// blocksOf sorts the pending interrupts whose values are remote calls or
// approval requests into the lists a Result shows.
func blocksOf(pending []Interrupt) (remote []message.RemoteToolCallBlock, approvals []message.ApprovalRequestBlock) {
	remote, approvals = []message.RemoteToolCallBlock{}, []message.ApprovalRequestBlock{}
	for _, it := range pending {
		b, err := message.UnmarshalBlock(it.Value)
		if err != nil {
			continue
		}
		switch b := b.(type) {
		case message.RemoteToolCallBlock:
			remote = append(remote, b)
		case message.ApprovalRequestBlock:
			approvals = append(approvals, b)
		}
	}
	return remote, approvals
}
