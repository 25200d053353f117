package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/media"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
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

// errMalformed marks a request whose body cannot be read as a RunRequest.
var errMalformed = errors.New("malformed request")

// errTooManyMessages marks a request that adds more messages to a thread
// than server.max_request_messages allows (413).
var errTooManyMessages = errors.New("too many messages")

// isBlobNotFound reports the one answer for a blob the caller may not
// read, whatever the reason.
func isBlobNotFound(err error) bool { return errors.Is(err, graph.ErrBlobNotFound) }

// errShutdown is the cause of runs cancelled by a shutdown.
var errShutdown = errors.New("the server is shutting down")

// malformed is a decoding error of the part at path ("" for the body) as
// a 400.
func malformed(at string, err error) error {
	err = strictjson.At(at, err)
	var e *strictjson.Error
	if errors.As(err, &e) && e.Path == "" {
		return fmt.Errorf("%w: body: %s", errMalformed, e.Msg)
	}
	return fmt.Errorf("%w: %v", errMalformed, err)
}

// bodyTimeoutError is a request body that did not arrive at the pace the
// server requires.
type bodyTimeoutError struct {
	got         int64
	took, grace time.Duration
	rate        int64
}

func (e *bodyTimeoutError) Error() string {
	return fmt.Sprintf("the request body came too slowly (%d bytes in %v): after the first %v it must keep coming at %d bytes a second or more, and arrive whole within %v",
		e.got, e.took.Round(time.Millisecond), e.grace, e.rate, ReadTimeout)
}
