package thread

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/telemetry"
)

// Durability is when a run's checkpoints are written (sync, async or
// exit, as in LangGraph): checkpoint.Durability, which the config reads
// without depending on the runtime.
type Durability = checkpoint.Durability

// The durability modes (see checkpoint.DurabilitySync and the others).
const (
	DurabilitySync  = checkpoint.DurabilitySync
	DurabilityAsync = checkpoint.DurabilityAsync
	DurabilityExit  = checkpoint.DurabilityExit
)

// ParseDurability reads a mode a client or a config named (see
// checkpoint.ParseDurability).
func ParseDurability(s string) (Durability, error) { return checkpoint.ParseDurability(s) }

// saver writes one run's checkpoints to the store, under the run's hold
// on its thread: it is the run's graph.Saver.
type saver struct {
	store checkpoint.Checkpointer
	cache *threadCache
	hold  *hold
	media runMedia
	seq   int64
	meta  map[string]string
	// logged and logBytes: the thread's log as of the latest checkpoint.
	logged   int
	logBytes int64
	// atExit: the run's durability is DurabilityExit, so only the
	// checkpoint where it stops is written.
	atExit bool
	// async: the run's durability is DurabilityAsync, so a step's
	// checkpoint the run goes on from is written while the next step
	// runs; pending has its outcome meanwhile.
	async   bool
	pending chan error
}

// Admit implements graph.Saver: it takes in the media of a node's update.
// A tool result whose attachments are refused (a plugin's image that is
// not what it says, too large, a url it may not fetch) becomes an error
// result saying so, which the model reads: the run goes on, as with any
// tool that failed. Media anywhere else a node may not put it fails the
// node.
func (w *saver) Admit(ctx context.Context, _ string, u graph.Update) (graph.Update, error) {
	if len(u.Messages) == 0 {
		return u, nil
	}
	msgs, err := w.media.ingester().messages(ctx, u.Messages, "messages", true)
	if err != nil {
		return u, err
	}
	u.Messages = msgs
	return u, nil
}

// Save implements graph.Saver: it writes the run's next checkpoint, at
// once or, for a step the run goes on from, in the background
// (DurabilityAsync) or not at all (DurabilityExit: the run's last
// checkpoint holds it). Either way it first waits for the write in flight,
// since a thread's checkpoints are written in order, and returns that
// write's error if it failed.
func (w *saver) Save(ctx context.Context, s graph.Saved) error {
	if err := w.settle(); err != nil {
		return err
	}
	if w.atExit && s.Status == graph.StatusRunning {
		return nil
	}
	for i := w.logged; i < len(s.Messages); i++ {
		if err := byReference(s.Messages[i]); err != nil {
			return fmt.Errorf("thread %q: encode state: message %d: %w", w.media.threadID, i, err)
		}
	}
	rest, add, err := s.Encode(w.logged)
	if err != nil {
		return fmt.Errorf("thread %q: encode state: %w", w.media.threadID, err)
	}
	lease := w.hold.lease
	status := checkpoint.Status(s.Status)
	cp := checkpoint.Checkpoint{ThreadID: w.hold.thread, Seq: w.seq + 1, RunID: s.RunID, Step: s.Step,
		Status: status, Next: s.Next, State: rest, Append: add, Metadata: w.meta, Incarnation: lease.Incarnation, Token: lease.Token,
		// A run ends with the checkpoint of any status but running (it
		// paused, completed, failed or was cancelled): that write also
		// releases its lease, one write fewer per run.
		Release: lease.Token != 0 && status != checkpoint.StatusRunning,
		WakeAt:  s.WakeAt(),
		// The media this checkpoint's messages (or its pending writes)
		// are the first to refer to go with it.
		Blobs: w.media.take()}
	e := cached{thread: w.hold.thread, saved: s, logged: len(s.Messages), logBytes: w.logBytes}
	for _, a := range add {
		e.logBytes += int64(len(a))
	}
	size := int64(len(rest)) + e.logBytes
	async := w.async && status == checkpoint.StatusRunning
	wctx, span := traceWrite(ctx, cp.Seq, string(status), async)
	if async {
		// The state written is never changed (graph.Saver), so the next
		// step may run on it meanwhile. The write gets cp and e as
		// arguments, copied to its goroutine: a closure capturing them
		// would move them to the heap on every Save, synchronous or not.
		done := make(chan error, 1)
		go func(cp checkpoint.Checkpoint, e cached) {
			err := w.write(wctx, cp, e, size)
			telemetry.EndSpan(span, err)
			done <- err
		}(cp, e)
		w.pending = done
	} else {
		err := w.write(wctx, cp, e, size)
		telemetry.EndSpan(span, err)
		if err != nil {
			return err
		}
	}
	w.seq++
	w.logged, w.logBytes = e.logged, e.logBytes
	return nil
}

// settle waits for the write in flight, if any, and returns its error.
func (w *saver) settle() error {
	if w.pending == nil {
		return nil
	}
	err := <-w.pending
	w.pending = nil
	return err
}

// write puts cp in the store and keeps it, as e, in the thread cache. It
// reads only what never changes during a run, so a background write can
// use it.
func (w *saver) write(ctx context.Context, cp checkpoint.Checkpoint, e cached, size int64) error {
	err := w.store.Put(ctx, cp)
	w.media.done(cp.Blobs, err == nil)
	if err != nil {
		w.cache.drop(cp.ThreadID)
		id := w.media.threadID
		if errors.Is(err, checkpoint.ErrLeaseLost) {
			return &graph.StateError{Kind: graph.ErrThreadBusy, ThreadID: id, Detail: "the run lost its claim on the thread (its lease expired and another run took it, or the thread was deleted); reload it and retry"}
		}
		if errors.Is(err, checkpoint.ErrConflict) {
			return &graph.StateError{Kind: graph.ErrThreadBusy, ThreadID: id, Detail: "another process changed the thread during this run; reload it and retry"}
		}
		return fmt.Errorf("thread %q: save checkpoint: %w", id, err)
	}
	if cp.Release {
		w.hold.released.Store(true)
	}
	cp.Token, cp.Append, cp.Release, cp.Blobs = 0, nil, false, nil // as the store returns it
	e.cp = cp
	w.cache.keep(e, size)
	return nil
}

// traceWrite starts a checkpoint write's span, while tracing is on.
func traceWrite(ctx context.Context, seq int64, status string, async bool) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return ctx, nil
	}
	return telemetry.Tracer().Start(ctx, "checkpoint.write", trace.WithAttributes(
		attribute.String("tenxgraph.checkpoint.seq", strconv.FormatInt(seq, 10)),
		attribute.String("tenxgraph.checkpoint.status", status),
		attribute.Bool("tenxgraph.checkpoint.async", async),
	))
}
