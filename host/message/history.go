package message

import "encoding/json"

// Pending returns the remote calls in msgs that no tool_result answers yet,
// in the order they were made. The pending set is derived from the thread
// itself, so it can never drift from what a checkpoint holds.
func Pending(msgs []Message) []RemoteToolCallBlock {
	answered := Answered(msgs)
	var out []RemoteToolCallBlock
	for _, m := range msgs {
		for _, b := range m.Content {
			if rc, ok := b.(RemoteToolCallBlock); ok {
				if _, ok := answered[rc.ID]; !ok {
					out = append(out, rc)
				}
			}
		}
	}
	return out
}

// Answered maps every tool_call_id in msgs to its first result.
func Answered(msgs []Message) map[string]ToolResultBlock {
	answered := map[string]ToolResultBlock{}
	for _, m := range msgs {
		for _, b := range m.Content {
			if r, ok := b.(ToolResultBlock); ok {
				if _, dup := answered[r.ToolCallID]; !dup {
					answered[r.ToolCallID] = r
				}
			}
		}
	}
	return answered
}

// unanswered is the result a model sees for a call that never got one (a
// thread abandoned mid-pause, say). Every provider refuses a history with a
// call and no result, so the gap is filled rather than sent.
var unanswered = json.RawMessage(`"no result: this tool call was never answered"`)

// ForModel rewrites a thread into the history every chat model API accepts:
// each assistant message that calls tools is followed by exactly one tool
// message holding one result per call, in call order. Results that arrived
// later (remote results on resume) are moved up to their call, remote-call
// markers are dropped, and results for unknown calls are left out.
func ForModel(msgs []Message) []Message {
	answered := Answered(msgs)
	out := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == RoleTool {
			continue // re-emitted below, after the call that asked for it
		}
		out = append(out, m)
		calls := m.ToolCalls()
		if m.Role != RoleAssistant || len(calls) == 0 {
			continue
		}
		results := make([]Block, 0, len(calls))
		for _, c := range calls {
			r, ok := answered[c.ID]
			if !ok {
				r = ToolResultBlock{ToolCallID: c.ID, Content: unanswered, IsError: true}
			}
			results = append(results, r)
		}
		out = append(out, Message{ID: m.ID + "/results", Role: RoleTool, Content: results})
	}
	return out
}
