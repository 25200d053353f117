package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
)

// DeltaResult is a run's result with config.response "delta": Messages
// holds only what the run added, and Offset is where they go in the
// thread (the count of messages it held before the run). A client whose
// transcript holds Offset messages appends them; one that holds another
// count has missed a turn and reads the thread (GET with ?after=).
type DeltaResult struct {
	graph.Result
	Offset int `json:"offset"`
}

// Thread is the body of GET /v1/threads/{thread_id}.
type Thread struct {
	ThreadID        string                        `json:"thread_id"`
	Status          graph.Status                  `json:"status"`
	Messages        []message.Message             `json:"messages"`
	RemoteToolCalls []message.RemoteToolCallBlock `json:"remote_tool_calls"`
	// ApprovalRequests are the calls waiting for a person's approval.
	ApprovalRequests []message.ApprovalRequestBlock `json:"approval_requests,omitempty"`
	// Page is set when the request asked for a page (?after=, ?limit=).
	Page *Page `json:"-"`
}

// Page says where a page of a thread's messages sits: Messages are the
// thread's messages from index Offset, of Total; HasMore says more follow
// (ask again with after set to the id of the page's last message).
type Page struct {
	Offset  int  `json:"offset"`
	Total   int  `json:"total"`
	HasMore bool `json:"has_more"`
}

// How responses that carry a thread's messages are written (GET of a
// thread, a run's response, a stream's end event): the JSON around the
// messages is encoded for each response, and each message is written on
// its own, large ones from one encoding that every response writing that
// message at the same time shares. A client that does not read holds its
// response mid-message until the write timeout drops it; two hundred of
// them on a thread with one 4 MB message hold one 4 MB encoding, not two
// hundred.

// shareAbove is the size (message.SizeOf) from which a message's encoding
// is shared: below it, encoding again costs less than sharing.
const shareAbove = 32 << 10

// writeAbove is how many bytes of small messages and the JSON around them
// a response gathers before it writes them.
const writeAbove = 16 << 10

// encodings are the encodings of large messages being written, each kept
// while a response writes it and dropped when the last one is done, so
// it holds no more than the responses would hold without it. A message is
// known by its content's backing array: a thread's messages are not
// changed once added, and every response shares the thread's one decoded
// copy (thread.App.ThreadFor), so the same message is the same array.
type encodings struct {
	mu sync.Mutex
	m  map[encodingKey]*encoding
}

type encodingKey struct {
	content *message.Block
	n       int
	id      string
}

type encoding struct {
	users int       // responses writing it; guarded by encodings.mu
	once  sync.Once // encodes it, outside encodings.mu
	raw   []byte
	err   error
}

// shared are the server's shared message encodings.
var shared = &encodings{m: map[encodingKey]*encoding{}}

// get returns the JSON of m, a message the encodings share (shares), and
// done, to call when the response has written it. The bytes must not be
// changed.
func (e *encodings) get(m message.Message) (raw []byte, done func(), err error) {
	k := encodingKey{&m.Content[0], len(m.Content), m.ID}
	e.mu.Lock()
	en := e.m[k]
	if en == nil {
		en = &encoding{}
		e.m[k] = en
	}
	en.users++
	e.mu.Unlock()
	en.once.Do(func() { en.raw, en.err = m.MarshalJSON() })
	return en.raw, func() {
		e.mu.Lock()
		if en.users--; en.users == 0 {
			delete(e.m, k)
		}
		e.mu.Unlock()
	}, en.err
}

// shares reports whether m's encoding is one the encodings share.
func shares(m message.Message) bool {
	return len(m.Content) > 0 && message.SizeOf(m) >= shareAbove
}

// held is how many encodings are kept and their bytes, for tests.
func (e *encodings) held() (n, bytes int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, en := range e.m {
		n++
		bytes += len(en.raw)
	}
	return n, bytes
}

// withMessages is a JSON object with a "messages" array in it: head is the
// object up to and including `"messages":`, tail what follows the array,
// to the closing brace. Nil msgs are written as null.
type withMessages struct {
	head []byte
	msgs []message.Message
	tail []byte
}

// appendTo appends the JSON to b.
func (p withMessages) appendTo(b []byte) ([]byte, error) {
	b = append(b, p.head...)
	if p.msgs == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, m := range p.msgs {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = m.AppendJSON(b); err != nil {
				return nil, fmt.Errorf("messages[%d]: %w", i, err)
			}
		}
		b = append(b, ']')
	}
	return append(b, p.tail...), nil
}

// writeTo writes prefix, the JSON and suffix to w, large messages from
// the shared encodings. Small messages are encoded into the bytes around
// them, which are written when they reach writeAbove and before each
// shared encoding: a write each would cost a write deadline each
// (statusWriter) for no memory saved. A write that fails (a client gone
// or too slow) ends it with that error; an encoding that fails is
// errEncoding, after the status went out.
func (p withMessages) writeTo(w io.Writer, prefix, suffix string) error {
	b := append(make([]byte, 0, min(len(prefix)+len(p.head)+len(p.tail)+len(suffix)+256*len(p.msgs)+32, writeAbove)), prefix...)
	b = append(b, p.head...)
	if p.msgs == nil {
		b = append(b, "null"...)
	}
	for i, m := range p.msgs {
		sep := byte(',')
		if i == 0 {
			sep = '['
		}
		b = append(b, sep)
		if !shares(m) {
			var err error
			if b, err = m.AppendJSON(b); err != nil {
				return fmt.Errorf("%w: messages[%d]: %w", errEncoding, i, err)
			}
			if len(b) >= writeAbove {
				if err := write(w, b); err != nil {
					return err
				}
				b = b[:0]
			}
			continue
		}
		if err := write(w, b); err != nil {
			return err
		}
		raw, done, err := shared.get(m)
		if err != nil {
			done()
			return fmt.Errorf("%w: messages[%d]: %w", errEncoding, i, err)
		}
		err = write(w, raw)
		done()
		if err != nil {
			return err
		}
		b = b[:0]
	}
	if p.msgs != nil {
		if len(p.msgs) == 0 {
			b = append(b, '[')
		}
		b = append(b, ']')
	}
	b = append(append(b, p.tail...), suffix...)
	return write(w, b)
}

func write(w io.Writer, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, err := w.Write(b)
	return err
}

// errEncoding is a response that could not be encoded after its status
// was sent.
var errEncoding = errors.New("the response could not be encoded")

// runParts is a run's response (graph.Result, or DeltaResult with its
// offset) around its messages; ok is false for any other value.
func runParts(v any) (withMessages, bool, error) {
	var res graph.Result
	offset := -1
	switch r := v.(type) {
	case graph.Result:
		res = r
	case DeltaResult:
		res, offset = r.Result, r.Offset
	default:
		return withMessages{}, false, nil
	}
	head, err := json.Marshal(struct {
		ThreadID string       `json:"thread_id"`
		RunID    string       `json:"run_id"`
		Status   graph.Status `json:"status"`
	}{res.ThreadID, res.RunID, res.Status})
	if err != nil {
		return withMessages{}, true, err
	}
	tail, err := json.Marshal(struct {
		RemoteToolCalls  []message.RemoteToolCallBlock  `json:"remote_tool_calls"`
		ApprovalRequests []message.ApprovalRequestBlock `json:"approval_requests,omitempty"`
	}{res.RemoteToolCalls, res.ApprovalRequests})
	if err != nil {
		return withMessages{}, true, err
	}
	p := withMessages{head: append(head[:len(head)-1], `,"messages":`...), msgs: res.Messages}
	p.tail = append([]byte{','}, tail[1:len(tail)-1]...)
	if offset >= 0 {
		p.tail = strconv.AppendInt(append(p.tail, `,"offset":`...), int64(offset), 10)
	}
	p.tail = append(p.tail, '}')
	return p, true, nil
}

// threadParts is the body of GET /v1/threads/{thread_id} around its
// messages.
func threadParts(t Thread) (withMessages, error) {
	head, err := json.Marshal(struct {
		ThreadID string       `json:"thread_id"`
		Status   graph.Status `json:"status"`
	}{t.ThreadID, t.Status})
	if err != nil {
		return withMessages{}, err
	}
	calls, err := json.Marshal(t.RemoteToolCalls)
	if err != nil {
		return withMessages{}, err
	}
	tail := append([]byte(`,"remote_tool_calls":`), calls...)
	if len(t.ApprovalRequests) > 0 {
		approvals, err := json.Marshal(t.ApprovalRequests)
		if err != nil {
			return withMessages{}, err
		}
		tail = append(append(tail, `,"approval_requests":`...), approvals...)
	}
	if t.Page != nil {
		page, err := json.Marshal(t.Page)
		if err != nil {
			return withMessages{}, err
		}
		tail = append(append(tail, ','), page[1:len(page)-1]...)
	}
	return withMessages{head: append(head[:len(head)-1], `,"messages":`...), msgs: t.Messages, tail: append(tail, '}')}, nil
}

// writeParts answers 200 with p, as writeJSON would. An encoding that
// fails once the status is sent cuts the connection: it is the only way
// left to say so.
func writeParts(w http.ResponseWriter, p withMessages) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if err := p.writeTo(w, "", "\n"); errors.Is(err, errEncoding) {
		panic(http.ErrAbortHandler)
	}
}
