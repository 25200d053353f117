package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
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

// writeThread answers 200 with t as writeJSON would, but encodes one message
// at a time: a large thread is never held encoded in memory, so a client that
// reads slowly costs the server one message's encoding, not the thread's.
func writeThread(w http.ResponseWriter, t Thread) {
	head, err := json.Marshal(struct {
		ThreadID string       `json:"thread_id"`
		Status   graph.Status `json:"status"`
	}{t.ThreadID, t.Status})
	if err != nil {
		writeJSON(w, http.StatusOK, t) // answers the encoding error
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	parts := [][]byte{head[:len(head)-1], []byte(`,"messages":`)}
	if t.Messages == nil {
		parts = append(parts, []byte("null"))
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return // the client is gone or too slow; the server closes the connection
		}
	}
	for i, m := range t.Messages {
		raw, err := m.MarshalJSON() // compact already: json.Marshal would scan it again
		if err != nil {
			panic(http.ErrAbortHandler) // the status is sent: cutting the connection is the only way left to say so
		}
		sep := ","
		if i == 0 {
			sep = "["
		}
		if _, err := io.WriteString(w, sep); err != nil {
			return
		}
		if _, err := w.Write(raw); err != nil {
			return
		}
	}
	if t.Messages != nil {
		end := "]"
		if len(t.Messages) == 0 {
			end = "[]"
		}
		if _, err := io.WriteString(w, end); err != nil {
			return
		}
	}
	calls, err := json.Marshal(t.RemoteToolCalls)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	tail := append([]byte(`,"remote_tool_calls":`), calls...)
	if len(t.ApprovalRequests) > 0 {
		approvals, err := json.Marshal(t.ApprovalRequests)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		tail = append(append(tail, `,"approval_requests":`...), approvals...)
	}
	if t.Page != nil {
		page, err := json.Marshal(t.Page)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		tail = append(append(tail, ','), page[1:len(page)-1]...)
	}
	_, _ = w.Write(append(tail, "}\n"...))
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
// bytes are json.Marshal's (TestMarshalRunIsJSONMarshal).
func marshal(v any) ([]byte, error) {
	var res graph.Result
	offset := -1
	switch r := v.(type) {
	case graph.Result:
		res = r
	case DeltaResult:
		res, offset = r.Result, r.Offset
	default:
		return json.Marshal(v)
	}
	head, err := json.Marshal(struct {
		ThreadID string       `json:"thread_id"`
		RunID    string       `json:"run_id"`
		Status   graph.Status `json:"status"`
	}{res.ThreadID, res.RunID, res.Status})
	if err != nil {
		return nil, err
	}
	tail, err := json.Marshal(struct {
		RemoteToolCalls  []message.RemoteToolCallBlock  `json:"remote_tool_calls"`
		ApprovalRequests []message.ApprovalRequestBlock `json:"approval_requests,omitempty"`
	}{res.RemoteToolCalls, res.ApprovalRequests})
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(head)+len(tail)+256*len(res.Messages)+32)
	b = append(b, head[:len(head)-1]...)
	b = append(b, `,"messages":`...)
	if res.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, m := range res.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = m.AppendJSON(b); err != nil {
				return nil, fmt.Errorf("messages[%d]: %w", i, err)
			}
		}
		b = append(b, ']')
	}
	b = append(b, ',')
	b = append(b, tail[1:len(tail)-1]...)
	if offset >= 0 {
		b = append(b, `,"offset":`...)
		b = strconv.AppendInt(b, int64(offset), 10)
	}
	return append(b, '}'), nil
}
