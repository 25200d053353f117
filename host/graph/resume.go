package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// This file is where pausing and resuming are decided. A thread pauses when
// a super-step's updates carry interrupts (or ask to pause with nothing to
// answer: Update.Interrupt, WithInterruptAfter). The interrupts are saved
// with the checkpoint, with the answers received so far; a resume adds
// answers, and once every interrupt has one, the nodes that asked run again
// with them before the graph goes on. The engine does not know what an
// interrupt asks: answers are JSON values, sent as answer blocks in a tool
// message (see message.AnswerID) or in RunConfig.Resume, and a node may
// judge them (AnswerChecker).

// Start is one run as the runtime (package thread) starts it: the thread,
// as its store names it and as its latest checkpoint left it, the run's
// input, and where its work goes.
type Start struct {
	// ThreadID and Tenant name the thread; RunID the run.
	ThreadID, Tenant, RunID string
	// Key is the thread's key in the store (Run.Key); Incarnation its
	// life there, "" for a thread written before leases (see callID).
	Key, Incarnation string
	// Latest is the thread's latest checkpoint, nil when it has none.
	Latest *Saved
	// Tail, when not nil, holds Latest's messages in an array with room
	// to grow that is the run's alone to append to (see appendMessages).
	// Run leaves here the array the run appended to, for the next run.
	Tail []message.Message
	// Input is the run's new messages, checked (CheckInput) and ready to
	// keep; Resume answers interrupts by id (code's own answers, the
	// generic twin of answer blocks in a tool message).
	Input  []message.Message
	Resume map[string]json.RawMessage
	// Configurable are the run's per-run values (Run.Configurable); nil
	// keeps those of the run that saved Latest, when the run continues a
	// paused or stopped thread.
	Configurable map[string]json.RawMessage
	// ExpireAt, when not zero, makes the run answer the interrupts whose
	// deadline is not after it as expired (Answer.Expired), and nothing
	// else; it returns ErrNothingDue when none is due.
	ExpireAt time.Time
	// Emit receives the run's events (nil: nobody); Listening says
	// whether a stream consumer does (Run.Listening).
	Emit      func(Event)
	Listening bool
	// Blobs reads the thread's media (Run.ReadBlob); Saver keeps what
	// the run does.
	Blobs BlobReader
	Saver Saver
}

// start is how a run begins: from which state, into which nodes.
type start struct {
	// replay: the input only repeats results the thread already holds,
	// and it waits for none; the answer is the thread as it stands.
	replay bool
	// idle: an expiry run (RunConfig.expireAt) found nothing due; it
	// changes nothing.
	idle         bool
	state        State
	configurable map[string]json.RawMessage
	next         []string
	// appended are the input messages to add (already checked).
	appended []message.Message
	resumed  bool
	// pause is the interrupt bookkeeping the run starts from.
	pause pause
	// answered: the input added answers, to be saved even if the thread
	// stays paused.
	answered bool
	// stillPaused: the input answered some interrupts but not all; the
	// run saves them and returns, still interrupted.
	stillPaused bool
	// resume: every interrupt is answered; the nodes that asked run again
	// first, with their answers.
	resume bool
}

// begin classifies the run's input against the thread's latest checkpoint. It changes
// nothing: every error leaves the thread as it was.
func (c *Compiled) begin(st *Start) (start, error) {
	var s start
	latest, input := st.Latest, st.Input
	var prev Saved
	if latest != nil {
		prev = *latest
	}
	s.state = prev.State
	s.configurable = st.Configurable
	answers, err := answersIn(input, st.Resume) // input passed CheckInput
	if err != nil {
		return s, err
	}
	paused := latest != nil && latest.Status == StatusInterrupted
	if !st.ExpireAt.IsZero() && !paused {
		s.idle = true // answered, or expired by another run, since it was due
		return s, nil
	}
	if late := expiredIn(prev.pause.Expired, answers); len(late) > 0 {
		return s, expiredError(st.ThreadID, late)
	}
	if !paused {
		if len(answers) > 0 && latest != nil && latest.Status == StatusCompleted {
			// A retry of tool results already accepted (a lost response,
			// or a duplicate that waited for the run it duplicated) gets
			// the recorded outcome. Anything else, a different result
			// included, is refused below as before.
			if replays(prev.Messages, answers) {
				s.replay = true
				return s, nil
			}
		}
		if len(answers) > 0 && latest != nil && len(latest.Next) > 0 && latest.Status != StatusCompleted &&
			replays(prev.Messages, answers) {
			// The run these results resumed stopped mid-way before it
			// answered (its process died, a step failed, it was
			// cancelled): sent again, unchanged, they carry it on from
			// where it stopped, as a call without input does.
			input, answers = nil, nil
		}
		if len(answers) > 0 {
			return s, &StateError{Kind: ErrNotPaused, ThreadID: st.ThreadID, CallIDs: answerIDs(answers),
				Detail: "send tool results only while the thread waits for them"}
		}
		if err := checkIDs(prev.Messages, input); err != nil {
			return s, err
		}
		s.appended = input
		s.pause.Resolved, s.pause.Expired = prev.pause.Resolved, prev.pause.Expired
		// A thread that failed or crashed mid-run continues where it
		// stopped when called without input, keeping what the stopped
		// step finished; new input starts afresh.
		if latest != nil && len(input) == 0 && len(latest.Next) > 0 && latest.Status != StatusCompleted {
			s.next = latest.Next
			s.resumed = true
			s.pause = prev.pause
			s.resume = len(prev.pause.Interrupts) > 0 && len(prev.pause.unanswered()) == 0
			if st.Configurable == nil {
				s.configurable = prev.Configurable
			}
			return s, nil
		}
		if len(input) == 0 {
			return s, invalid("input: no messages (send a user message to start a run)")
		}
		s.next = c.g.edges[START]
		return s, nil
	}

	// The thread is paused.
	s.resumed = true
	s.next = latest.Next
	s.pause = prev.pause
	if st.Configurable == nil {
		s.configurable = prev.Configurable
	}
	open := prev.pause.unanswered()
	if !st.ExpireAt.IsZero() {
		fresh := map[string]Answer{}
		for _, it := range open {
			if !it.Deadline.IsZero() && !it.Deadline.After(st.ExpireAt) {
				fresh[it.ID] = Answer{Expired: true}
				s.pause.Expired = append(slices.Clip(s.pause.Expired), it.ID)
			}
		}
		if len(fresh) == 0 {
			s.idle = true
			return s, nil
		}
		s.record(prev, fresh)
		s.resume = !s.stillPaused
		return s, nil
	}
	if len(answers) == 0 {
		if len(open) > 0 {
			return s, &StateError{Kind: ErrPendingCalls, ThreadID: st.ThreadID, CallIDs: interruptIDs(open),
				Detail: "answer them with tool_result (or approval) blocks in a tool message before sending new input"}
		}
		// A pause with nothing to answer: continue, with the input (if
		// any) added first.
		if err := checkIDs(prev.Messages, input); err != nil {
			return s, err
		}
		s.appended = input
		s.pause.Interrupts, s.pause.Answers = nil, nil
		return s, nil
	}
	fresh, err := c.accept(st.ThreadID, &prev, open, answers, time.Now())
	if err != nil {
		return s, err
	}
	if len(fresh) > 0 {
		s.record(prev, fresh)
	}
	s.stillPaused = len(s.pause.unanswered()) > 0
	s.resume = !s.stillPaused && len(s.pause.Interrupts) > 0
	return s, nil
}

// record adds fresh answers to those prev's pause already had, and notes
// whether the pause is still waiting for others. fresh is the caller's to
// give: it may become the pause's.
func (s *start) record(prev Saved, fresh map[string]Answer) {
	s.answered = true
	if len(prev.pause.Answers) == 0 {
		s.pause.Answers = fresh // the caller's, made for this run: no copy
	} else {
		s.pause.Answers = maps.Clone(prev.pause.Answers)
		maps.Copy(s.pause.Answers, fresh)
	}
	s.stillPaused = len(s.pause.unanswered()) > 0
}

// CheckInput refuses content a client may not write (the runtime checks
// a run's input with it before it takes the input's media in). A client may send
// user, system and assistant text, images, files and sounds in user
// messages, or answers (tool_result and approval blocks, a result with
// attachments) in tool messages; never tool calls, which only the model
// makes, and never both kinds at once.
func CheckInput(input []message.Message) error {
	var text, answers bool
	for i, m := range input {
		for j, b := range m.Content {
			if mb, ok := b.(message.MediaBlock); ok {
				if err := CheckMediaPlace(m.Role, mb.Kind, fmt.Sprintf("messages[%d].content[%d]", i, j)); err != nil {
					return err
				}
				text = true
				continue
			}
			if _, ok := message.AnswerID(b); ok {
				if m.Role != message.RoleTool {
					return invalid("messages[%d].content[%d]: %s blocks belong in a message with role \"tool\"", i, j, b.BlockType())
				}
				answers = true
				continue
			}
			if _, ok := b.(message.TextBlock); !ok {
				return invalid("messages[%d].content[%d]: clients may not send %s blocks (only the model calls tools)", i, j, b.BlockType())
			}
			if m.Role == message.RoleTool {
				return invalid("messages[%d].content[%d]: a tool message holds tool_result blocks only, or approval blocks", i, j)
			}
			text = true
		}
		if len(m.Content) == 0 {
			return invalid("messages[%d].content: empty", i)
		}
	}
	if text && answers {
		return invalid("messages: send tool results and new input in separate requests")
	}
	return nil
}

// given is one answer as the input carried it.
type given struct {
	id string
	Answer
}

// answersIn collects the answers of the input, in order: answer blocks,
// then RunConfig.Resume by id. An id answered twice in one request is
// refused.
func answersIn(input []message.Message, resume map[string]json.RawMessage) ([]given, error) {
	var out []given
	seen := map[string]bool{}
	for _, m := range input {
		for _, b := range m.Content {
			id, ok := message.AnswerID(b)
			if !ok {
				continue
			}
			if seen[id] {
				return nil, invalid("messages: two results for call %q", id)
			}
			seen[id] = true
			raw, err := message.MarshalBlock(b)
			if err != nil {
				return nil, invalid("messages: answer for %q: %v", id, err)
			}
			g := given{id: id, Answer: Answer{Value: raw, memo: new(blockMemo)}}
			if len(m.Content) == 1 {
				g.MessageID = m.ID
			}
			out = append(out, g)
		}
	}
	if len(resume) == 0 { // sorting no ids still allocates the iterator and its slice
		return out, nil
	}
	for _, id := range slices.Sorted(maps.Keys(resume)) {
		if seen[id] {
			return nil, invalid("config.resume: %q is also answered in the messages", id)
		}
		seen[id] = true
		out = append(out, given{id: id, Answer: Answer{Value: resume[id], memo: new(blockMemo)}})
	}
	return out, nil
}

// accept matches answers to the open interrupts. An answer to an interrupt
// that is not open is refused, unless it repeats exactly the answer already
// recorded (a client retrying after a lost response), which is accepted and
// ignored so that resuming is idempotent. An answer to an open interrupt
// whose deadline is not after now is refused as expired, even before the
// thread is woken to expire it: whether a result is in time depends on the
// clock only, never on when the wake-up runs. A node may refuse an answer
// (AnswerChecker). Nothing is changed here; the new answers are returned.
func (c *Compiled) accept(thread string, prev *Saved, open []Interrupt, answers []given, now time.Time) (map[string]Answer, error) {
	byID := make(map[string]Interrupt, len(open))
	for _, it := range open {
		byID[it.ID] = it
	}
	var used map[string]bool // message ids taken, read when an answer names one
	fresh := map[string]Answer{}
	var unknown, conflicting, late []string
	var history map[string]message.ToolResultBlock // results in the thread, read when needed
	for _, g := range answers {
		it, isOpen := byID[g.id]
		old, done := prev.pause.Answers[g.id]
		if !done {
			old, done = prev.pause.Resolved[g.id]
		}
		if !isOpen && !done {
			// A result of an earlier pause, already in the thread: a retry
			// is accepted and ignored, a different result is a conflict.
			if history == nil {
				history = remoteResults(prev.Messages)
			}
			if r, ok := history[g.id]; ok {
				if sameResult(r, g.Value) {
					continue
				}
				conflicting = append(conflicting, g.id)
				continue
			}
		}
		switch {
		case isOpen && !it.Deadline.IsZero() && !it.Deadline.After(now):
			late = append(late, g.id)
		case isOpen:
			if g.MessageID != "" {
				if used == nil {
					used = map[string]bool{}
					for _, h := range prev.Messages {
						used[h.ID] = true
					}
					for _, old := range prev.pause.Answers {
						used[old.MessageID] = true
					}
				}
				if used[g.MessageID] {
					g.MessageID = ""
				}
				used[g.MessageID] = true
			}
			if ac, ok := c.g.nodes[it.Node].(AnswerChecker); ok {
				if err := ac.CheckAnswer(thread, it, g.Answer); err != nil {
					return nil, err
				}
			}
			fresh[g.id] = g.Answer
		case done:
			if !jsonEqual(old.Value, g.Value) {
				conflicting = append(conflicting, g.id)
			} // else a retry of an answer already saved: accepted, ignored
		default:
			unknown = append(unknown, g.id)
		}
	}
	if len(unknown) > 0 {
		return nil, &StateError{Kind: ErrUnknownCall, ThreadID: thread, CallIDs: unknown,
			Detail: "pending calls are " + listOrNone(interruptIDs(open))}
	}
	if len(late) > 0 {
		return nil, expiredError(thread, late)
	}
	if len(conflicting) > 0 {
		return nil, &StateError{Kind: ErrResultConflict, ThreadID: thread, CallIDs: conflicting,
			Detail: "a result, once given, is final"}
	}
	return fresh, nil
}

// expiredIn lists the answers given for interrupts that expired.
func expiredIn(expired []string, answers []given) []string {
	var out []string
	for _, g := range answers {
		if slices.Contains(expired, g.id) {
			out = append(out, g.id)
		}
	}
	return out
}

func expiredError(thread string, ids []string) error {
	return &StateError{Kind: ErrExpired, ThreadID: thread, CallIDs: ids,
		Detail: "its deadline passed before the result arrived, so the server answers it (or has answered it) with an error result and the run goes on without it; resend the results of any other calls on their own"}
}

// replays reports whether every answer is a tool_result the thread holds,
// unchanged, for a remote call of an earlier pause. (An approval is a
// decision, not a result: on a thread no longer paused it is refused.)
func replays(msgs []message.Message, answers []given) bool {
	history := remoteResults(msgs)
	for _, g := range answers {
		r, ok := history[g.id]
		if !ok || !sameResult(r, g.Value) {
			return false
		}
	}
	return true
}

// AnswersOnly reports whether input and resume only answer interrupts (a
// resume), which may wait for a run in progress on the thread to see
// whether it repeats that run's answers.
func AnswersOnly(input []message.Message, resume map[string]json.RawMessage) bool {
	if CheckInput(input) != nil {
		return false
	}
	answers, err := answersIn(input, resume)
	return err == nil && len(answers) > 0 && len(input) <= len(answers)
}

// remoteResults maps the remote calls in msgs that have a result to it:
// the answers of earlier pauses (a server tool's result never was one).
func remoteResults(msgs []message.Message) map[string]message.ToolResultBlock {
	answered := message.Answered(msgs)
	out := map[string]message.ToolResultBlock{}
	for _, m := range msgs {
		for _, rc := range m.RemoteToolCalls() {
			if r, ok := answered[rc.ID]; ok {
				out[rc.ID] = r
			}
		}
	}
	return out
}

// sameResult reports whether v, an answer block, is the tool_result r.
func sameResult(r message.ToolResultBlock, v json.RawMessage) bool {
	b, err := message.UnmarshalBlock(v)
	if err != nil {
		return false
	}
	given, ok := b.(message.ToolResultBlock)
	return ok && given.IsError == r.IsError && jsonEqual(given.Content, r.Content)
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

func interruptIDs(its []Interrupt) []string {
	out := make([]string, len(its))
	for i, it := range its {
		out[i] = it.ID
	}
	return out
}

func answerIDs(gs []given) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.id
	}
	return out
}

// CheckMediaPlace says why a media block may not stand where it is (in a
// message of role, at path), or returns nil: media stands in a user
// message, or among a tool result's attachments (checked where the tool
// result is).
func CheckMediaPlace(role message.Role, kind, at string) error {
	if role != message.RoleUser {
		return invalid("%s: %s blocks stand only in user messages and among tool results' attachments, not in a message of role %q", at, kind, role)
	}
	return nil
}

// listOrNone joins names with ", ", or says "none".
func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
