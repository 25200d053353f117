package graph

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/message"
)

// RunConfig is the per-run configuration.
type RunConfig struct {
	// ThreadID names the conversation; required.
	ThreadID string `json:"thread_id"`
	// Tenant is whose thread it is (the API server's token, by name):
	// each tenant has threads of its own, so the same ThreadID under two
	// tenants is two threads, and nothing a run of one does tells it
	// anything of the other's. "" is the tenant of code without tenants.
	Tenant string `json:"-"`
	// RemoteTools are client tools for this run only, each in the flat or
	// the OpenAI shape. A name a ToolNode already has is ignored (and the
	// run's events say so). On a resume that carries none, the paused run's
	// tools are offered again.
	RemoteTools []json.RawMessage `json:"remote_tools,omitempty"`
	// Metadata is stored with a new thread and kept for its lifetime;
	// later runs cannot change it (ThreadMetadata reads it). It scopes
	// nothing: Tenant does.
	Metadata map[string]string `json:"-"`
	// Resume answers a paused thread's interrupts by id, for code that
	// raises its own interrupts (the generic twin of answer blocks in a
	// tool message). Never read from a client's JSON.
	Resume map[string]json.RawMessage `json:"-"`
	// Durability is when this run's checkpoints are written; "" is the
	// App's (WithDurability).
	Durability Durability `json:"durability,omitempty"`

	// expireAt, set by Expire only, makes the run answer the interrupts
	// whose deadline is not after it as expired, and nothing else.
	expireAt time.Time
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

// Run is one execution of the graph on a thread, as nodes see it.
type Run struct {
	// ThreadID is the thread's id, as its tenant names it.
	ThreadID string
	// Tenant is whose thread it is (RunConfig.Tenant).
	Tenant string
	RunID  string
	// RemoteTools are this run's client tools as the run's config gave
	// them (RunConfig.RemoteTools, or the paused run's); the nodes that
	// offer them have them judged (RunChecker).
	RemoteTools []json.RawMessage
	// prior is the thread's message count when the run began (Result.Prior).
	prior int
	// Step is the current super-step (1-based).
	Step int
	// tail is the thread as the run's last append left it, or as the run
	// took it over, with room to grow (see App.appendMessages).
	tail []message.Message

	// key is the thread's key in the store (checkpoint.ThreadKey), and
	// incarnation its life there, "" for a thread written before leases
	// (see callID).
	key         string
	incarnation string

	emit      func(Event)
	listening bool     // a Stream consumer receives the events
	locals    sync.Map // *RunLocal[T] -> *runLocal[T]

	// blobs are the media the run took in (see ingest), store the
	// store's blobs (nil in a Run made by hand).
	blobs runBlobs
	store checkpoint.BlobStore
}

// Key names the thread uniquely among every tenant's threads (it is the
// store's key, checkpoint.ThreadKey): what a node keys anything it keeps
// per thread by, so that two tenants' threads of one id never share it.
func (r *Run) Key() string {
	if r.key == "" { // a Run made by hand, not by the engine
		return checkpoint.ThreadKey(r.Tenant, r.ThreadID)
	}
	return r.key
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

// Emit reports progress on the run's event stream. It is cheap when nobody
// listens.
func (r *Run) Emit(e Event) {
	if r.emit != nil {
		r.emit(e)
	}
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
	e, _ := r.locals.LoadOrStore(l, &runLocal[T]{})
	v := e.(*runLocal[T])
	v.once.Do(func() { v.v, v.err = make() })
	return v.v, v.err
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// wireState is a thread's state as a checkpoint holds it. The messages are
// the thread's log (checkpoint.Checkpoint.Log, one JSON entry each), so a
// step writes only the messages it added; the rest (wireRest) is the
// checkpoint's State bytes, small and rewritten by every step. Checkpoints
// written before the log existed hold the messages in their State too,
// under "messages", and read the same.
type wireState struct {
	State
	// RunTools are the per-run tools of the run that wrote the checkpoint,
	// kept so that a resume without them offers the same tools.
	RunTools []json.RawMessage `json:"run_remote_tools,omitempty"`
	pause
	// logged is how many of Messages the log holds, and logBytes their
	// size there: the next checkpoint appends Messages[logged:].
	logged   int
	logBytes int64
}

// wireRest is a checkpoint's State bytes: wireState but its messages.
type wireRest struct {
	Values   map[string]json.RawMessage `json:"values,omitempty"`
	RunTools []json.RawMessage          `json:"run_remote_tools,omitempty"`
	pause
}

// encodeState returns the checkpoint's State bytes and the log entries of
// the messages not logged yet.
func encodeState(w wireState) ([]byte, [][]byte, error) {
	if len(w.Messages) < w.logged {
		return nil, nil, fmt.Errorf("the state has %d messages where the thread's log holds %d: messages are append-only", len(w.Messages), w.logged)
	}
	rest, err := json.Marshal(wireRest{Values: w.Values, RunTools: w.RunTools, pause: w.pause})
	if err != nil {
		return nil, nil, err
	}
	var add [][]byte
	if n := len(w.Messages) - w.logged; n > 0 {
		add = make([][]byte, n)
		for i, m := range w.Messages[w.logged:] {
			if err := byReference(m); err != nil {
				return nil, nil, fmt.Errorf("message %d: %w", w.logged+i, err)
			}
			// MarshalJSON's bytes are compact already: json.Marshal would
			// only scan them again.
			if add[i], err = m.MarshalJSON(); err != nil {
				return nil, nil, fmt.Errorf("message %d: %w", w.logged+i, err)
			}
		}
	}
	return rest, add, nil
}

// decodeState decodes a checkpoint read from the store, its messages from
// its log (or, written before the log, from its State).
func decodeState(cp checkpoint.Checkpoint) (wireState, error) {
	msgs, n, err := decodeLog(cp.Log)
	if err != nil {
		return wireState{}, err
	}
	return decodeRest(cp, msgs, len(cp.Log), n)
}

// decodeLog decodes log entries into messages, and sums their size.
func decodeLog(log [][]byte) ([]message.Message, int64, error) {
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

// decodeRest decodes cp's State with msgs, its log already decoded: the
// first n messages of msgs are the log as of cp, logBytes in size.
func decodeRest(cp checkpoint.Checkpoint, msgs []message.Message, n int, logBytes int64) (wireState, error) {
	var w wireState
	if len(cp.State) > 0 {
		if err := json.Unmarshal(cp.State, &w); err != nil {
			return w, err
		}
	}
	if n > 0 {
		if len(w.Messages) > 0 {
			return w, errors.New("messages both in the state and in the log")
		}
		w.Messages = msgs[:n:n]
		w.logged, w.logBytes = n, logBytes
	}
	if cp.Status == checkpoint.StatusInterrupted && len(w.Interrupts) == 0 && len(w.Step) == 0 {
		w.pause = legacyPause(w.Messages, w.pause)
	}
	return w, nil
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
