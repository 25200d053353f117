package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/media"
)

// ErrorBody is every error response: {"error": {"code", "message"}}, plus
// the call ids involved in a thread-state conflict.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail names the problem.
type ErrorDetail struct {
	// Code is stable and machine-readable (docs/api.md lists them).
	Code string `json:"code"`
	// Message says what is wrong and what to do, for a person.
	Message string `json:"message"`
	// CallIDs are the tool call ids a conflict is about (the pending ones
	// for pending_calls).
	CallIDs []string `json:"call_ids,omitempty"`
}

// errorBody maps an error to its status and body. Thread-state conflicts are
// 409 with a code naming the kind; malformed bodies 400; invalid values 422.
func errorBody(err error) (int, ErrorBody) {
	var se *graph.StateError
	var mbe *http.MaxBytesError
	var bte *bodyTimeoutError
	switch {
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, body("body_too_large",
			fmt.Sprintf("request body too large: the limit is %d bytes (server.max_body_bytes)", mbe.Limit), nil)
	case errors.As(err, &bte):
		return http.StatusRequestTimeout, body("body_timeout", bte.Error(), nil)
	case errors.Is(err, errTooManyMessages):
		return http.StatusRequestEntityTooLarge, body("too_many_messages", err.Error(), nil)
	case errors.Is(err, errMalformed):
		return http.StatusBadRequest, body("malformed_request", err.Error(), nil)
	case errors.As(err, &se):
		return http.StatusConflict, body(conflictCode(se.Kind), err.Error(), se.CallIDs)
	case errors.Is(err, graph.ErrThreadNotFound):
		return http.StatusNotFound, body("thread_not_found", err.Error(), nil)
	case isBlobNotFound(err):
		return http.StatusNotFound, body("blob_not_found", "no such blob in this thread", nil)
	case errors.Is(err, media.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, body("media_too_large", err.Error(), nil)
	case errors.Is(err, media.ErrRefused):
		return http.StatusUnprocessableEntity, body("media_refused", err.Error(), nil)
	case errors.Is(err, graph.ErrInvalidInput):
		return http.StatusUnprocessableEntity, body("invalid_input", err.Error(), nil)
	case errors.Is(err, context.Canceled) || errors.Is(err, errShutdown):
		return http.StatusServiceUnavailable, body("run_cancelled", err.Error()+
			"; the thread keeps its last checkpoint: call it again without input to continue, or send new input", nil)
	case errors.Is(err, graph.ErrStepLimit):
		return http.StatusInternalServerError, body("step_limit", err.Error(), nil)
	}
	return http.StatusInternalServerError, body("run_failed", err.Error(), nil)
}

func conflictCode(kind error) string {
	switch kind {
	case graph.ErrNotPaused:
		return "not_paused"
	case graph.ErrUnknownCall:
		return "unknown_call"
	case graph.ErrResultConflict:
		return "result_conflict"
	case graph.ErrPendingCalls:
		return "pending_calls"
	case graph.ErrThreadBusy:
		return "thread_busy"
	case graph.ErrExpired:
		return "expired"
	}
	return "conflict"
}

func body(code, msg string, ids []string) ErrorBody {
	return ErrorBody{Error: ErrorDetail{Code: code, Message: msg, CallIDs: ids}}
}

func writeErr(w http.ResponseWriter, err error) {
	code, b := errorBody(err)
	writeJSON(w, code, b)
}

func writeError(w http.ResponseWriter, status int, code, msg string, ids []string) {
	writeJSON(w, status, body(code, msg, ids))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	raw, err := marshal(v)
	if err != nil {
		status, raw = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"the response could not be encoded"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(raw, '\n'))
}

// sse writes server-sent events: a named event with a JSON data line,
// flushed at once.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (s *sse) event(name string, data any) {
	if p, ok, err := runParts(data); ok && err == nil {
		// A run's result: its messages from the shared encodings.
		if err := p.writeTo(s.w, "event: "+name+"\ndata: ", "\n\n"); errors.Is(err, errEncoding) {
			panic(http.ErrAbortHandler) // the stream is open: cutting it is the only way left to say so
		}
		if s.f != nil {
			s.f.Flush()
		}
		return
	}
	raw, err := marshal(data)
	if err != nil {
		raw, _ = json.Marshal(body("internal", "event could not be encoded: "+err.Error(), nil))
		name = "error"
	}
	buf := make([]byte, 0, len(raw)+len(name)+16)
	buf = append(buf, "event: "...)
	buf = append(buf, name...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, raw...)
	buf = append(buf, "\n\n"...)
	_, _ = s.w.Write(buf)
	if s.f != nil {
		s.f.Flush()
	}
}

// marshal is json.Marshal, but for a run's response (graph.Result, or a
// DeltaResult), which it writes around its messages' own encoding
// (message.Message.AppendJSON): the messages are most of a response, and
// json.Marshal would scan each message's bytes again to compact them. The
// bytes are json.Marshal's (TestMarshalRunIsJSONMarshal), and what
// writeParts writes.
func marshal(v any) ([]byte, error) {
	p, ok, err := runParts(v)
	switch {
	case !ok:
		return json.Marshal(v)
	case err != nil:
		return nil, err
	}
	return p.appendTo(make([]byte, 0, len(p.head)+len(p.tail)+256*len(p.msgs)+32))
}
