package graph

import (
	"errors"
	"fmt"
	"strings"
)

// ErrStateConflict is the family of errors where a request is well formed
// but does not fit the thread's state. The HTTP API answers them with 409.
// Every error of the family also matches its own sentinel below.
var ErrStateConflict = errors.New("thread state conflict")

// Sentinels for errors.Is. Each comes wrapped in a *StateError that names
// the thread and the call ids involved.
var (
	// ErrNotPaused: tool results were sent to a thread that waits for none.
	ErrNotPaused = errors.New("thread is not paused")
	// ErrUnknownCall: a result names a call that is not pending.
	ErrUnknownCall = errors.New("no pending call with that id")
	// ErrResultConflict: a call already answered got a different result.
	ErrResultConflict = errors.New("call already answered with a different result")
	// ErrPendingCalls: new input was sent while remote calls are pending.
	ErrPendingCalls = errors.New("thread has pending remote tool calls")
	// ErrThreadBusy: another run is working on the thread.
	ErrThreadBusy = errors.New("thread is busy with another run")
	// ErrExpired: an answer came after its interrupt's deadline (see
	// Interrupt.Deadline); the interrupt is, or will be, answered as
	// expired instead.
	ErrExpired = errors.New("the call expired before its result arrived")
)

// ErrInvalidInput marks input that is malformed whatever the thread's state
// (the HTTP API answers 400 or 422).
var ErrInvalidInput = errors.New("invalid input")

// ErrStepLimit: a run took more super-steps than the app allows, which
// almost always means a loop (a model calling tools forever).
var ErrStepLimit = errors.New("step limit reached")

// ErrThreadNotFound: the thread has no checkpoint.
var ErrThreadNotFound = errors.New("thread not found")

// ErrBlobNotFound: the thread holds no such blob (or the thread is not the
// caller's).
var ErrBlobNotFound = errors.New("blob not found")

// ErrNothingDue ends an expiry run (Start.ExpireAt) that found nothing to
// expire: the thread is not paused, or its interrupts were answered or
// expired since it was due. Nothing was changed.
var ErrNothingDue = errors.New("nothing due")

// StateError is a state conflict on one thread. Nothing was changed.
type StateError struct {
	// Kind is one of the sentinels above.
	Kind error
	// ThreadID is the thread.
	ThreadID string
	// CallIDs are the calls involved: the pending ones for ErrPendingCalls,
	// the offending ones otherwise.
	CallIDs []string
	// Detail adds what to do about it.
	Detail string
}

func (e *StateError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "thread %q: %v", e.ThreadID, e.Kind)
	if len(e.CallIDs) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(e.CallIDs, ", "))
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap makes errors.Is match both the kind and ErrStateConflict.
func (e *StateError) Unwrap() []error { return []error{e.Kind, ErrStateConflict} }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidInput, fmt.Sprintf(format, args...))
}
