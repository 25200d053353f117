package graph

import (
	"context"
	"errors"
	"time"
)

// This file expires the interrupts of a paused thread whose deadline
// passed (see Interrupt.Deadline). What finds the due threads is the
// runtime's (package thread's Waker): Expire claims the thread like any
// run, so whichever process gets the claim does the work and the others
// find the thread busy, or nothing due once it is done.

// errNothingDue ends an expiry run that found nothing to expire.
var errNothingDue = errors.New("nothing due")

// Expire answers the interrupts of tenant's paused thread whose Deadline is not
// after now as expired (Answer.Expired) and runs the thread on, as a resume
// would: once every interrupt has an answer, the nodes that asked run again
// and the graph goes on; otherwise the thread stays paused, to be woken at
// its next deadline. It reports false, having changed nothing, when nothing
// is due (the thread is not paused, or its interrupts were answered or
// expired since); a thread busy with another run is an error wrapping
// ErrThreadBusy, to be tried again later.
func (a *App) Expire(ctx context.Context, tenant, threadID string, now time.Time) (Result, bool, error) {
	res, err := a.run(ctx, nil, RunConfig{ThreadID: threadID, Tenant: tenant, expireAt: now}, nil)
	if errors.Is(err, errNothingDue) {
		return Result{}, false, nil
	}
	return res, err == nil, err
}
