package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// This file is what a run keeps of a thread: the checkpoint it starts
// from and the ones it saves (Saved), their encoding, and the Saver the
// engine hands them to. Where and how they are kept is the runtime's
// (package thread): a run sees a thread only through its Start.

// Saver keeps what a run does: the runtime's door to its store, one per
// run. The engine calls it from the run's goroutine, never two calls at
// once.
type Saver interface {
	// Admit prepares the update node returned before the run applies it,
	// and may refuse it (the runtime takes in the media the update
	// carries, for one): an error fails the node.
	Admit(ctx context.Context, node string, u Update) (Update, error)
	// Save keeps s as the thread's latest checkpoint. Checkpoints are
	// saved in order; the engine never changes what s holds afterwards.
	Save(ctx context.Context, s Saved) error
}

// Saved is a thread as a checkpoint holds it: what a run starts from
// (Start.Latest) and what it saves after each step.
type Saved struct {
	State
	// Status, Next, Step and RunID are how the run that saved it left the
	// thread: the nodes to run next, the super-step it had reached, and
	// the run's id.
	Status Status
	Next   []string
	Step   int
	RunID  string
	// Configurable are the per-run values of the run that saved it
	// (Start.Configurable), kept so that a run continuing the thread
	// without values of its own has the same ones.
	Configurable map[string]json.RawMessage
	// pause is the interrupt bookkeeping.
	pause pause
}

// Status is the outcome of a run.
type Status string

// Run outcomes.
const (
	StatusCompleted   Status = "completed"
	StatusInterrupted Status = "interrupted"
	// StatusRunning and StatusFailed describe a thread (not a run's
	// outcome): a run is in progress or stopped mid-way, or its last run
	// failed. Calling the thread again without input continues it.
	StatusRunning Status = "running"
	StatusFailed  Status = "failed"
	// StatusCancelled describes a thread whose last run was cancelled
	// (its client went away, the server shut down, the caller gave up):
	// it holds the state before the step that was cut short. Calling the
	// thread again without input runs that step again; new input starts a
	// new turn after it.
	StatusCancelled Status = "cancelled"
)

// Result is what a run returns: the thread after the run and, when it
// paused, what the client must answer. Its JSON is the HTTP API's invoke
// response.
type Result struct {
	ThreadID string            `json:"thread_id"`
	RunID    string            `json:"run_id"`
	Status   Status            `json:"status"`
	Messages []message.Message `json:"messages"`
	// RemoteToolCalls and ApprovalRequests are the pending interrupts whose
	// values are remote_tool_call and approval_request blocks.
	RemoteToolCalls  []message.RemoteToolCallBlock  `json:"remote_tool_calls"`
	ApprovalRequests []message.ApprovalRequestBlock `json:"approval_requests,omitempty"`
	// Interrupts are all the pending interrupts, whatever they ask.
	Interrupts []Interrupt `json:"-"`
	// Values are the thread's named values (State.Values); not part of the
	// invoke response, but what an AG-UI STATE_SNAPSHOT carries.
	Values map[string]json.RawMessage `json:"-"`
	// Prior is how many messages the thread held before this run:
	// Messages[Prior:] are the ones it added (messages are only appended),
	// what a client that keeps its transcript needs back.
	Prior int `json:"-"`
}

// Result is the thread s holds, as a reader of threadID sees it (RunID is
// the run that saved it).
func (s *Saved) Result(threadID string) Result {
	return resultOf(threadID, s.RunID, 0, s.State, s.Status, &s.pause)
}

// resultOf is what a run returns: the thread as state holds it, prior
// messages of which it held before the run, and the interrupts of p that
// are pending when it paused.
func resultOf(threadID, runID string, prior int, state State, status Status, p *pause) Result {
	res := Result{ThreadID: threadID, RunID: runID, Status: status, Messages: state.Messages,
		RemoteToolCalls: []message.RemoteToolCallBlock{}, Values: state.Values, Prior: min(prior, len(state.Messages))}
	if status == StatusInterrupted {
		res.Interrupts = p.unanswered()
		res.RemoteToolCalls, res.ApprovalRequests = blocksOf(res.Interrupts)
		if len(res.ApprovalRequests) == 0 {
			res.ApprovalRequests = nil
		}
	}
	return res
}

// WakeAt is when the thread must be woken to expire its interrupts: the
// earliest deadline of those unanswered, zero when none has one or the
// thread is not paused.
func (s *Saved) WakeAt() time.Time {
	if s.Status != StatusInterrupted {
		return time.Time{}
	}
	return s.pause.wakeAt()
}

// pause is what a checkpoint records about interrupts and unfinished steps.
type pause struct {
	// Interrupts are the interrupts of the paused step, in the order the
	// step's nodes raised them; empty when nothing waits for an answer.
	Interrupts []Interrupt `json:"interrupts,omitempty"`
	// Answers are the answers received so far, by interrupt id.
	Answers map[string]Answer `json:"answers,omitempty"`
	// Resolved are the answers of the last pause that was resumed, so that
	// a client resending them (its response was lost) is told yes, not no.
	Resolved map[string]Answer `json:"resolved,omitempty"`
	// Expired are the ids of the thread's interrupts that expired
	// unanswered, kept for the thread's life so that a late answer is told
	// so (ErrExpired) however many pauses later it comes.
	Expired []string `json:"expired,omitempty"`
	// Step lists the nodes of the step that paused or failed: routing after
	// a resume starts from them.
	Step []string `json:"step,omitempty"`
	// Writes are the updates of the nodes of a failed step that finished
	// ("pending writes"): a retry of the step uses them instead of running
	// those nodes again.
	Writes map[string]wireUpdate `json:"writes,omitempty"`
	// Trace is the W3C traceparent of the traced run that paused, which
	// the run resuming it links to.
	Trace string `json:"trace,omitempty"`
}

// wireUpdate is an Update as a checkpoint stores it.
type wireUpdate struct {
	Messages   []message.Message          `json:"messages,omitempty"`
	Values     map[string]json.RawMessage `json:"values,omitempty"`
	Interrupt  bool                       `json:"interrupt,omitempty"`
	Interrupts []Interrupt                `json:"interrupts,omitempty"`
}

// unanswered lists the pause's interrupts that have no answer yet.
func (p *pause) unanswered() []Interrupt {
	var out []Interrupt
	for _, it := range p.Interrupts {
		if _, ok := p.Answers[it.ID]; !ok {
			out = append(out, it)
		}
	}
	return out
}

// wakeAt is the earliest deadline of the unanswered interrupts, zero when
// none has one.
func (p *pause) wakeAt() time.Time {
	var at time.Time
	for _, it := range p.unanswered() {
		if !it.Deadline.IsZero() && (at.IsZero() || it.Deadline.Before(at)) {
			at = it.Deadline
		}
	}
	return at
}

// A checkpoint is encoded in two parts. Its messages are the thread's log,
// one JSON entry each, so a step writes only the messages it added; the
// rest (wireRest) is small and rewritten by every step. Checkpoints
// written before the log existed hold the messages in the rest too, under
// "messages", and read the same. A run's configurable values stand in the
// rest as keys of their own, "run_" and the value's name.

// wireRest is a checkpoint's state but its messages and configurable
// values.
type wireRest struct {
	Values map[string]json.RawMessage `json:"values,omitempty"`
	pause
}

// configurablePrefix starts the key of a configurable value in the rest.
const configurablePrefix = "run_"

// Encode returns the rest of s and the log entries of its messages after
// the first logged, which the thread's log holds already.
func (s *Saved) Encode(logged int) (rest []byte, add [][]byte, err error) {
	if len(s.Messages) < logged {
		return nil, nil, fmt.Errorf("the state has %d messages where the thread's log holds %d: messages are append-only", len(s.Messages), logged)
	}
	if rest, err = json.Marshal(wireRest{Values: s.Values, pause: s.pause}); err != nil {
		return nil, nil, err
	}
	if len(s.Configurable) > 0 {
		named := make(map[string]json.RawMessage, len(s.Configurable))
		for k, v := range s.Configurable {
			named[configurablePrefix+k] = v
		}
		more, err := json.Marshal(named)
		if err != nil {
			return nil, nil, fmt.Errorf("configurable: %w", err)
		}
		if len(rest) > 2 {
			more[0] = ','
		} else {
			more = more[1:]
		}
		rest = append(rest[:len(rest)-1], more...)
	}
	if n := len(s.Messages) - logged; n > 0 {
		add = make([][]byte, n)
		for i, m := range s.Messages[logged:] {
			// MarshalJSON's bytes are compact already: json.Marshal would
			// only scan them again.
			if add[i], err = m.MarshalJSON(); err != nil {
				return nil, nil, fmt.Errorf("message %d: %w", logged+i, err)
			}
		}
	}
	return rest, add, nil
}

// DecodeLog decodes a thread's log entries into its messages, and sums
// their size.
func DecodeLog(log [][]byte) ([]message.Message, int64, error) {
	if len(log) == 0 {
		return nil, 0, nil
	}
	msgs := make([]message.Message, len(log))
	var n int64
	for i, e := range log {
		if err := json.Unmarshal(e, &msgs[i]); err != nil {
			return nil, 0, fmt.Errorf("message %d: %w", i, err)
		}
		n += int64(len(e))
	}
	return msgs, n, nil
}

// Decode reads rest, a checkpoint's encoding but its log, into s, with
// msgs the messages its log holds (none for a checkpoint written before
// the log). s.Status must be set: a pause saved before interrupts were
// saved is read from the messages.
func (s *Saved) Decode(rest []byte, msgs []message.Message) error {
	var w struct {
		Messages []message.Message `json:"messages"`
		wireRest
	}
	if len(rest) > 0 {
		if err := json.Unmarshal(rest, &w); err != nil {
			return err
		}
	}
	s.Messages, s.Values, s.pause = w.Messages, w.Values, w.pause
	if len(msgs) > 0 {
		if len(w.Messages) > 0 {
			return errors.New("messages both in the state and in the log")
		}
		s.Messages = msgs[:len(msgs):len(msgs)]
	}
	if bytes.Contains(rest, []byte(`"`+configurablePrefix)) {
		var all map[string]json.RawMessage
		if err := json.Unmarshal(rest, &all); err != nil {
			return err
		}
		for k, v := range all {
			if name, ok := strings.CutPrefix(k, configurablePrefix); ok {
				if s.Configurable == nil {
					s.Configurable = map[string]json.RawMessage{}
				}
				s.Configurable[name] = v
			}
		}
	}
	if s.Status == StatusInterrupted && len(s.pause.Interrupts) == 0 && len(s.pause.Step) == 0 {
		s.pause = legacyPause(s.Messages, s.pause)
	}
	for i := range s.pause.Interrupts {
		s.pause.Interrupts[i].memo = new(blockMemo)
	}
	return nil
}

// legacyPause reads a pause saved before interrupts were saved with the
// checkpoint: the thread's remote calls without a result were its pending
// set, raised by their nodes. A thread paused by an earlier release keeps
// its pending calls after an upgrade, and resumes as it would have.
func legacyPause(msgs []message.Message, p pause) pause {
	for _, rc := range message.Pending(msgs) {
		v, err := json.Marshal(rc)
		if err != nil {
			continue
		}
		p.Interrupts = append(p.Interrupts, Interrupt{ID: rc.ID, Node: rc.Node, Value: v})
		if !slices.Contains(p.Step, rc.Node) {
			p.Step = append(p.Step, rc.Node)
		}
	}
	return p
}

// blocksOf sorts the pending interrupts whose values are remote calls or
// approval requests into the lists a Result shows.
func blocksOf(pending []Interrupt) (remote []message.RemoteToolCallBlock, approvals []message.ApprovalRequestBlock) {
	remote, approvals = []message.RemoteToolCallBlock{}, []message.ApprovalRequestBlock{}
	for _, it := range pending {
		b, err := it.Block()
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
