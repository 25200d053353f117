package mcp

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync/atomic"
)

// MaxOutputLimit is the largest max_output_bytes: a result travels to the
// host as one gRPC message, bounded by sdk.MaxMessageBytes.
const MaxOutputLimit = 192 << 20

// frameEnvelope is the room a message gets besides its result: the
// JSON-RPC fields, the result's keys, its _meta.
const frameEnvelope = 64 << 10

// frameBytes is the most the bridge reads of one message from the server:
// a line on stdio, an event of an SSE stream, the body of an HTTP answer.
// A result may come twice in one message (as text, and as the same
// structured content, as MCP advises servers to send it), so the bound is
// twice max_result_bytes and room for the envelope. A larger message is
// refused as it arrives, before it is held whole: the connection is dropped
// (the rest of the message cannot be skipped) and made again for the next
// call. A bridge without max_result_bytes (in process) reads up to well
// above max_output_bytes.
func (s Server) frameBytes() int {
	if s.MaxResultBytes > 0 {
		return 2*int(min(s.MaxResultBytes, MaxOutputLimit)) + frameEnvelope
	}
	return max(128<<20, 4*s.maxOutput()+(1<<20))
}

// framing says where one message from a server ends.
type framing int

const (
	lines  framing = iota // at each newline (stdio)
	events                // at each blank line (an SSE stream)
	whole                 // at the end (an HTTP body)
)

// errFrameTooLarge is what a reader returns once a message passed its
// bound; the connection it reads cannot go on.
type errFrameTooLarge struct{ limit int }

func (e errFrameTooLarge) Error() string {
	return fmt.Sprintf("a message from the server passed %d bytes", e.limit)
}

// frameLimiter counts the bytes of each message that pass through it from
// a server. Past limit it sets over, and, when it enforces the bound
// itself, returns errFrameTooLarge instead of the message's bytes. On an
// SSE stream the SDK enforces the same bound (its MaxEventSize), as only its
// own error ends the call at once rather than having the stream resumed;
// the limiter then only witnesses, so that the call's error can say why.
type frameLimiter struct {
	r       io.Reader
	limit   int
	framing framing
	enforce bool
	over    *atomic.Bool // set once a message passed limit

	n     int   // bytes of the current message so far
	blank bool  // events: the current line is empty so far ('\r' aside)
	err   error // errFrameTooLarge, once returned
}

func (f *frameLimiter) Read(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.r.Read(p)
	start, ok := f.scan(p[:n]) // start: where the message that passed the limit began in p
	if ok {
		return n, err
	}
	f.over.Store(true)
	if !f.enforce {
		return n, err
	}
	f.err = errFrameTooLarge{f.limit}
	if start > 0 {
		return start, nil // the messages before it are whole
	}
	return 0, f.err
}

// scan counts b against the current message and reports whether every
// message in it stayed within the limit; if not, also where the first that
// did not began in b (0 when it began before).
func (f *frameLimiter) scan(b []byte) (int, bool) {
	start, first, ok := 0, 0, true
	for off := 0; off < len(b); {
		end, boundary := f.next(b, off)
		f.n += end - off
		if f.n > f.limit && ok {
			ok, first = false, start
		}
		if boundary {
			f.n, start = 0, end
		}
		off = end
	}
	return first, ok
}

// next finds the end of the current message in b from off, and says
// whether it is the message's end or only b's. An SSE event ends just after
// the newline of a line that holds nothing but '\r's, as the SDK reads
// events.
func (f *frameLimiter) next(b []byte, off int) (int, bool) {
	switch f.framing {
	case lines:
		if i := bytes.IndexByte(b[off:], '\n'); i >= 0 {
			return off + i + 1, true
		}
	case events:
		for i := off; i < len(b); i++ {
			switch b[i] {
			case '\n':
				if f.blank {
					return i + 1, true
				}
				f.blank = true
			case '\r':
			default:
				f.blank = false
			}
		}
	}
	return len(b), false
}

// limitTransport bounds each HTTP answer of a server: an SSE stream per
// event (witnessed; the SDK's MaxEventSize enforces it), any other body
// whole (enforced: the SDK reads a JSON answer whole, without a bound).
type limitTransport struct {
	base  http.RoundTripper
	limit int
	over  *atomic.Bool
}

func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	f := &frameLimiter{r: resp.Body, limit: t.limit, framing: whole, enforce: true, over: t.over}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		f.framing, f.enforce, f.blank = events, false, true
	}
	resp.Body = limitedBody{f, resp.Body}
	return resp, nil
}

// limitedBody reads through a frameLimiter and closes the body.
type limitedBody struct {
	io.Reader
	io.Closer
}
