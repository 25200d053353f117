package graph

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/message"
)

// This file is where pausing and resuming are decided. A thread pauses when
// a super-step's update asks to (a ToolNode returned remote calls) or the node
// is in WithInterruptAfter; the pending calls are derived from the thread's
// messages (remote_tool_call blocks without a tool_result), so the checkpoint
// and the pending set can never disagree.

// start is how a run begins: from which state, into which nodes.
type start struct {
	state    State
	runTools []json.RawMessage
	next     []string
	// appended are the input messages to add (already checked).
	appended []message.Message
	resumed  bool
	// stillPaused: the input answered some pending calls but not all; the
	// run saves them and returns, still interrupted.
	stillPaused bool
}

// begin classifies input against the thread's latest checkpoint. It changes
// nothing: every error leaves the thread as it was.
func (a *App) begin(latest *checkpoint.Checkpoint, prev wireState, input []message.Message, cfg RunConfig) (start, error) {
	var s start
	s.state = prev.State
	s.runTools = cfg.RemoteTools
	results, err := checkInput(input)
	if err != nil {
		return s, err
	}
	pending := message.Pending(prev.Messages)
	paused := latest != nil && latest.Status == checkpoint.StatusInterrupted

	if !paused {
		if results {
			return s, &StateError{Kind: ErrNotPaused, ThreadID: cfg.ThreadID, CallIDs: resultIDs(input),
				Detail: "send tool results only while the thread waits for them"}
		}
		if err := checkIDs(prev.Messages, input); err != nil {
			return s, err
		}
		s.appended = input
		// A thread that failed or crashed mid-run continues where it
		// stopped when called without input; new input starts afresh.
		if latest != nil && len(input) == 0 && len(latest.Next) > 0 && latest.Status != checkpoint.StatusCompleted {
			s.next = latest.Next
			s.resumed = true
			if cfg.RemoteTools == nil {
				s.runTools = prev.RunTools
			}
			return s, nil
		}
		if len(input) == 0 {
			return s, invalid("input: no messages (send a user message to start a run)")
		}
		s.next = a.g.edges[START]
		return s, nil
	}

	// The thread is paused.
	s.resumed = true
	s.next = latest.Next
	if cfg.RemoteTools == nil {
		s.runTools = prev.RunTools
	}
	if len(pending) > 0 && !results {
		return s, &StateError{Kind: ErrPendingCalls, ThreadID: cfg.ThreadID, CallIDs: callIDs(pending),
			Detail: "answer them with tool_result blocks in a tool message before sending new input"}
	}
	if !results {
		// An interrupt-after pause with nothing pending: continue, with the
		// input (if any) added first.
		if err := checkIDs(prev.Messages, input); err != nil {
			return s, err
		}
		s.appended = input
		return s, nil
	}
	fresh, err := acceptResults(cfg.ThreadID, prev.Messages, pending, input)
	if err != nil {
		return s, err
	}
	s.appended = fresh
	s.stillPaused = len(pending) > len(fresh)
	return s, nil
}

// checkInput refuses content a client may not write and reports whether the
// input is a resume (tool results). A client may send user, system and
// assistant text, or tool results; never tool calls, which only the model
// makes, and never both kinds at once.
func checkInput(input []message.Message) (results bool, err error) {
	var text bool
	for i, m := range input {
		for j, b := range m.Content {
			switch b.(type) {
			case message.TextBlock:
				if m.Role == message.RoleTool {
					return false, invalid("messages[%d].content[%d]: a tool message holds tool_result blocks only", i, j)
				}
				text = true
			case message.ToolResultBlock:
				if m.Role != message.RoleTool {
					return false, invalid("messages[%d].content[%d]: tool_result blocks belong in a message with role \"tool\"", i, j)
				}
				results = true
			default:
				return false, invalid("messages[%d].content[%d]: clients may not send %s blocks (only the model calls tools)", i, j, b.BlockType())
			}
		}
		if len(m.Content) == 0 {
			return false, invalid("messages[%d].content: empty", i)
		}
	}
	if text && results {
		return false, invalid("messages: send tool results and new input in separate requests")
	}
	return results, nil
}

// acceptResults matches results to pending calls. A result for a call that
// is not pending is refused, unless it repeats exactly the result already
// recorded (a client retrying after a lost response), which is accepted and
// ignored so that resuming is idempotent.
//
// Each accepted result becomes one tool message, in the order the calls were
// made whatever order the client used. A tool message that carried a single
// result keeps its id, so a client that names its messages (AG-UI does)
// finds them under the same id in the thread.
func acceptResults(thread string, history []message.Message, pending []message.RemoteToolCallBlock, input []message.Message) ([]message.Message, error) {
	order := make(map[string]int, len(pending))
	for i, p := range pending {
		order[p.ID] = i
	}
	answered := message.Answered(history)
	used := map[string]bool{}
	for _, h := range history {
		used[h.ID] = true
	}
	seen := map[string]bool{}
	var fresh []message.Message
	var unknown, conflicting []string
	for _, m := range input {
		for _, r := range m.ToolResults() {
			if seen[r.ToolCallID] {
				return nil, invalid("messages: two results for call %q", r.ToolCallID)
			}
			seen[r.ToolCallID] = true
			_, isPending := order[r.ToolCallID]
			switch old, done := answered[r.ToolCallID]; {
			case isPending:
				id := ""
				if len(m.Content) == 1 && m.ID != "" && !used[m.ID] {
					id = m.ID
					used[id] = true
				}
				fresh = append(fresh, message.Message{ID: id, Role: message.RoleTool, Content: []message.Block{r}})
			case done && isRemote(history, r.ToolCallID):
				if !sameResult(old, r) {
					conflicting = append(conflicting, r.ToolCallID)
				} // else a retry of a result already saved: accepted, ignored
			default:
				unknown = append(unknown, r.ToolCallID)
			}
		}
	}
	if len(unknown) > 0 {
		return nil, &StateError{Kind: ErrUnknownCall, ThreadID: thread, CallIDs: unknown,
			Detail: "pending calls are " + listOrNone(callIDs(pending))}
	}
	if len(conflicting) > 0 {
		return nil, &StateError{Kind: ErrResultConflict, ThreadID: thread, CallIDs: conflicting,
			Detail: "a result, once given, is final"}
	}
	slices.SortStableFunc(fresh, func(a, b message.Message) int {
		return order[a.ToolResults()[0].ToolCallID] - order[b.ToolResults()[0].ToolCallID]
	})
	return fresh, nil
}

func sameResult(a, b message.ToolResultBlock) bool {
	return a.IsError == b.IsError && jsonEqual(a.Content, b.Content)
}

func jsonEqual(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	ca, _ := json.Marshal(va) // map keys are sorted by encoding/json
	cb, _ := json.Marshal(vb)
	return bytes.Equal(ca, cb)
}

func isRemote(history []message.Message, id string) bool {
	for _, m := range history {
		for _, rc := range m.RemoteToolCalls() {
			if rc.ID == id {
				return true
			}
		}
	}
	return false
}

// checkIDs refuses client message ids the thread already uses: an id names
// one message for the thread's whole life.
func checkIDs(history, input []message.Message) error {
	var ids map[string]bool
	for i, m := range input {
		if m.ID == "" {
			continue
		}
		if ids == nil {
			ids = make(map[string]bool, len(history)+len(input))
			for _, h := range history {
				ids[h.ID] = true
			}
		}
		if ids[m.ID] {
			return invalid("messages[%d].id: %q is already used in this thread", i, m.ID)
		}
		ids[m.ID] = true
	}
	return nil
}

func callIDs(calls []message.RemoteToolCallBlock) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.ID
	}
	return out
}

func resultIDs(input []message.Message) []string {
	var out []string
	for _, m := range input {
		for _, r := range m.ToolResults() {
			out = append(out, r.ToolCallID)
		}
	}
	return out
}
