package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// This file is what a node sees and returns: the state, its input and the
// run it is part of, its update, the interrupts it may raise and the
// answers it gets, and the events it may report.

// State is what flows through the graph and what a checkpoint holds. Nodes
// must treat it as read-only and return changes as an Update.
type State struct {
	// Messages is the thread, append-only.
	Messages []message.Message `json:"messages"`
	// Values holds named values for custom graphs; an Update replaces a
	// value by key.
	Values map[string]json.RawMessage `json:"values,omitempty"`
}

// Update is what a node returns.
type Update struct {
	// Messages are appended to the thread. IDs are assigned when empty.
	// Tool calls are renamed, whatever ids they came with: the engine gives
	// each an id unique to the thread's life (a model's ids are not, and a
	// thread deleted and created again must not take a result sent for a
	// call of its old life). A block of the same update that names one of
	// its calls (a tool_result, say) follows the rename; a later step finds
	// the new ids in the state, as a ToolNode does.
	Messages []message.Message
	// Values are set (replacing earlier values of the same key).
	Values map[string]json.RawMessage
	// Interrupt pauses the graph after this super-step, with nothing to
	// answer (LangGraph's interrupt_after, decided by the node): a later
	// run continues with the next nodes. The step's updates are saved
	// first, so nothing that finished in it runs again.
	Interrupt bool
	// Interrupts pause the graph after this super-step until each is
	// answered; the node then runs again with the answers in
	// Input.Resume. Messages and Values of the same update are saved with
	// the pause. IDs must be unique within the thread.
	Interrupts []Interrupt
}

// Node is one step of a graph.
type Node interface {
	Run(ctx context.Context, in *Input) (Update, error)
}

// NodeFunc adapts a function to Node.
type NodeFunc func(ctx context.Context, in *Input) (Update, error)

// Run implements Node.
func (f NodeFunc) Run(ctx context.Context, in *Input) (Update, error) { return f(ctx, in) }

// Input is what a node sees: the state before the step and the run.
type Input struct {
	State State
	Run   *Run
	// Node is the name the node runs under.
	Node string
	// Resume holds the answers to the node's interrupts, by interrupt id,
	// when the node runs again after its pause; nil otherwise.
	Resume map[string]Answer
	// Interrupts are the interrupts being answered (the node's, in the
	// order it raised them), when Resume is set.
	Interrupts []Interrupt
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

	memo *blockMemo // Value read as a block; nil reads it afresh
}

// Block reads the interrupt's Value as a message block
// (message.UnmarshalBlock). The engine reads an interrupt it saves or
// loads once, however many times the run's result and the node judging
// and resuming its answers ask.
func (it Interrupt) Block() (message.Block, error) { return it.memo.block(it.Value) }

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

	memo *blockMemo // Value read as a block; nil reads it afresh
}

// Block reads the answer's Value as a message block
// (message.UnmarshalBlock), once for an answer the engine took from the
// run's input, however many times the node checks and applies it.
func (a Answer) Block() (message.Block, error) { return a.memo.block(a.Value) }

// blockMemo is an interrupt's or answer's Value read as a block, shared by
// the copies of it: what the first reader decoded, the others take.
type blockMemo struct {
	once sync.Once
	raw  json.RawMessage // the Value read
	b    message.Block
	err  error
}

// block returns v as a block, decoded once per memo. A copy whose Value
// was replaced since (it is not the one read) is decoded afresh.
func (m *blockMemo) block(v json.RawMessage) (message.Block, error) {
	if m == nil {
		return message.UnmarshalBlock(v)
	}
	m.once.Do(func() { m.raw = v; m.b, m.err = message.UnmarshalBlock(v) })
	if len(m.raw) != len(v) || len(v) > 0 && &m.raw[0] != &v[0] {
		return message.UnmarshalBlock(v)
	}
	return m.b, m.err
}

// Run is one execution of the graph on a thread, as nodes see it.
type Run struct {
	// ThreadID is the thread's id, as its tenant names it.
	ThreadID string
	// Tenant is whose thread it is (the API server's token, by name):
	// each tenant has threads of its own. "" is the tenant of code
	// without tenants.
	Tenant string
	RunID  string
	// Step is the current super-step (1-based).
	Step int

	// key is the thread's key in the store, and incarnation its life
	// there, "" for a thread written before leases (see callID).
	key         string
	incarnation string
	// configurable are the run's per-run values (Start.Configurable).
	configurable map[string]json.RawMessage
	// prior is the thread's message count when the run began (Result.Prior).
	prior int
	// tail is the thread as the run's last append left it, or as the run
	// took it over, with room to grow (see appendMessages).
	tail []message.Message

	emit      func(Event)
	listening bool // a Stream consumer receives the events
	// traceparent is the run's span's W3C trace context while it is
	// traced: a pause keeps it, so that the run resuming it links to it.
	traceparent string
	// locals are the run's RunLocal values: a few, so a list searched
	// under a lock costs less than a sync.Map's nodes, made for every run.
	localsMu sync.Mutex
	locals   []runLocalEntry
	blobs    BlobReader
}

// runLocalEntry is a RunLocal's value in a run: key is the *RunLocal[T],
// value its *runLocal[T].
type runLocalEntry struct{ key, value any }

// BlobReader reads the bytes of a thread's blobs: the runtime's (package
// thread), which keeps them with the thread's checkpoints.
type BlobReader interface {
	ReadBlob(ctx context.Context, ref string) ([]byte, error)
}

// Key names the thread uniquely among every tenant's threads (it is the
// store's key, checkpoint.ThreadKey): what a node keys anything it keeps
// per thread by, so that two tenants' threads of one id never share it.
func (r *Run) Key() string {
	switch {
	case r.key != "":
		return r.key
	case r.Tenant == "": // a Run made by hand, not by a runtime
		return r.ThreadID
	}
	return r.Tenant + "\x1f" + r.ThreadID
}

// ProviderThreadID names the thread to a tool provider: unique among every
// tenant's threads, like Key, but without the tenant's name (the name of
// the variable holding its token, which a third-party plugin has no
// business knowing) and without Key's control character, which a plugin
// may put in a file name or a log line. It is the client's thread id for
// the tenant "", else a tag standing for the tenant ("t" and 12 hex
// digits of a hash of its name), "/" and the id.
func (r *Run) ProviderThreadID() string {
	if r.Tenant == "" {
		return r.ThreadID
	}
	sum := sha256.Sum256([]byte("tenxgraph tenant\x00" + r.Tenant))
	return "t" + hex.EncodeToString(sum[:6]) + "/" + r.ThreadID
}

// Configurable returns the run's per-run value called key (the run's
// config's, or those of the paused run it continues), nil when it has
// none. The engine only keeps these values; the nodes that read them judge
// them (RunChecker).
func (r *Run) Configurable(key string) json.RawMessage { return r.configurable[key] }

// Emit reports progress on the run's event stream. It is cheap when nobody
// listens.
func (r *Run) Emit(e Event) {
	if r.emit != nil {
		r.emit(e)
	}
}

// Emitting reports whether Emit delivers events anywhere (a Stream
// consumer or the app's observer). An event's Data is boxed where the
// event is made, before Emit can drop it: a hot path asks first, so that a
// run nobody watches allocates no events.
func (r *Run) Emitting() bool { return r.emit != nil }

// Listening says whether a Stream consumer receives the run's events (as
// opposed to Invoke, where only the app's observer may), so that work done
// only to report, such as asking a tool for its progress, can be skipped.
func (r *Run) Listening() bool { return r.listening }

// ReadBlob returns the bytes of the blob ref of the run's thread: one the
// run took in, written yet or not, or one the thread held before. It is
// what a model provider reads the media of its request through
// (model.Request.Blobs). A blob the thread does not hold is an error
// wrapping ErrBlobNotFound.
func (r *Run) ReadBlob(ctx context.Context, ref string) ([]byte, error) {
	if r.blobs == nil {
		return nil, fmt.Errorf("thread %q: blob %s: %w (a Run made by hand has no store)", r.ThreadID, ref, ErrBlobNotFound)
	}
	return r.blobs.ReadBlob(ctx, ref)
}

// RunLocal is a value each run keeps of its own, made on its first use in
// the run and shared by the run's nodes and steps: a ToolNode's tool set,
// for one, is built once although the model node and the ToolNode both
// need it on every step. Declare one per use (a field of a node, say): its
// address names the value. The zero value is ready to use.
type RunLocal[T any] struct {
	_ byte // a RunLocal has a size of its own, so two never share an address
}

type runLocal[T any] struct {
	once sync.Once
	v    T
	err  error
}

// Get returns r's value, made by make on the run's first Get (once, when
// several nodes ask at the same time: the others wait for it).
func (l *RunLocal[T]) Get(r *Run, make func() (T, error)) (T, error) {
	var v *runLocal[T]
	r.localsMu.Lock()
	for _, e := range r.locals {
		if e.key == any(l) {
			v = e.value.(*runLocal[T])
			break
		}
	}
	if v == nil {
		v = &runLocal[T]{}
		r.locals = append(r.locals, runLocalEntry{l, v})
	}
	r.localsMu.Unlock()
	v.once.Do(func() { v.v, v.err = make() })
	return v.v, v.err
}

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
