package thread

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/media"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/telemetry"
)

// App is a compiled graph bound to a checkpoint store: it runs the graph
// on the store's threads. It is safe for concurrent use; runs on one
// thread are serialised (a second concurrent run on a thread fails with
// graph.ErrThreadBusy rather than racing), across every process sharing
// the store: a run claims its thread there (checkpoint.Leaser) before it
// does any work.
type App struct {
	engine *graph.Compiled
	store  checkpoint.Checkpointer

	claims *claims
	cache  *threadCache
	media  *media.Checker
	// durability is that of runs whose RunConfig names none.
	durability Durability
	observer   func(graph.Event)

	// Set by options, read by Compile.
	cacheBytes int64
	leaseTTL   time.Duration
}

// Option configures an App.
type Option func(*App)

// WithCacheBytes bounds the memory of the cache of decoded threads (see
// CacheStats) to about n bytes; n <= 0 turns the cache off, so every run
// reads and decodes its thread from the store.
func WithCacheBytes(n int64) Option {
	return func(a *App) { a.cacheBytes = n }
}

// WithLease sets the lease a run takes on its thread in the store (see
// DefaultLease); d <= 0 keeps the default. Shorter leases free a dead
// replica's threads sooner and cost more heartbeats.
func WithLease(d time.Duration) Option {
	return func(a *App) {
		if d > 0 {
			a.leaseTTL = d
		}
	}
}

// WithDurability sets the durability of runs whose RunConfig names none
// (DurabilitySync when unset).
func WithDurability(d Durability) Option {
	return func(a *App) {
		if d != "" {
			a.durability = d
		}
	}
}

// WithMedia sets what media the app takes in (media.Default when unset:
// the default types and limits, urls from any public https host).
func WithMedia(c *media.Checker) Option {
	return func(a *App) {
		if c != nil {
			a.media = c
		}
	}
}

// Compile checks g (graph.StateGraph.Compile) and binds it to store.
// Every problem is reported at once.
func Compile(g *graph.StateGraph, store checkpoint.Checkpointer, opts ...Option) (*App, error) {
	c, err := g.Compile()
	if store == nil {
		err = errors.Join(err, errors.New("graph: no checkpointer"))
	}
	if err != nil {
		return nil, err
	}
	a := &App{engine: c, store: store, cacheBytes: DefaultCacheBytes, leaseTTL: DefaultLease,
		durability: DurabilitySync, media: media.Default()}
	for _, o := range opts {
		o(a)
	}
	if err := a.durability.Check(); err != nil {
		return nil, fmt.Errorf("graph: durability: %w", err)
	}
	a.claims = &claims{store: store, ttl: a.leaseTTL, busy: map[string]struct{}{}}
	a.cache = newThreadCache(store, a.cacheBytes)
	return a, nil
}

// Graph returns the graph the app was compiled from.
func (a *App) Graph() *graph.StateGraph { return a.engine.Graph() }

// Checkpointer returns the store the app writes to.
func (a *App) Checkpointer() checkpoint.Checkpointer { return a.store }

// Observe has fn receive every event of every run, Invoke's included, on the
// run's goroutine: for metrics and logs, which must not slow a run down or
// make it do work only a listener needs. Call it before the app serves runs.
func (a *App) Observe(fn func(graph.Event)) { a.observer = fn }

// RunConfig is the per-run configuration.
type RunConfig struct {
	// ThreadID names the conversation; required.
	ThreadID string `json:"thread_id"`
	// Tenant is whose thread it is (the API server's token, by name):
	// each tenant has threads of its own, so the same ThreadID under two
	// tenants is two threads, and nothing a run of one does tells it
	// anything of the other's. "" is the tenant of code without tenants.
	Tenant string `json:"-"`
	// Configurable are values for the graph's nodes, for this run only,
	// by name (graph.Run.Configurable): a ToolNode's per-run client tools,
	// for one (see remotetool.Configurable). On a run that continues a
	// paused or stopped thread, nil offers those of the run it continues.
	Configurable map[string]json.RawMessage `json:"-"`
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
}

// Invoke runs the graph on cfg.ThreadID with input and returns when the run
// completes or pauses. To resume a paused thread, send a tool message with
// answer blocks (tool_result, approval) for the pending interrupts, or set
// RunConfig.Resume.
func (a *App) Invoke(ctx context.Context, input []message.Message, cfg RunConfig) (graph.Result, error) {
	return a.run(ctx, input, cfg, nil, time.Time{})
}

// Stream is Invoke reporting progress. The last event of a run that did not
// fail is graph.EventEnd carrying the Result; a failure is yielded as an
// error instead. Stopping the iteration early cancels the run.
func (a *App) Stream(ctx context.Context, input []message.Message, cfg RunConfig) iter.Seq2[graph.Event, error] {
	return func(yield func(graph.Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ch := make(chan graph.Event, 64)
		var res graph.Result
		var err error
		go func() {
			defer close(ch)
			res, err = a.run(ctx, input, cfg, func(e graph.Event) {
				select {
				case ch <- e:
				case <-ctx.Done():
				}
			}, time.Time{})
		}()
		for e := range ch {
			if !yield(e, nil) {
				cancel()
				for range ch { // let the run finish unwinding
				}
				return
			}
		}
		if err != nil {
			yield(graph.Event{}, err)
			return
		}
		yield(graph.Event{Type: graph.EventEnd, Data: res}, nil)
	}
}

// Expire answers the interrupts of tenant's paused thread whose Deadline
// is not after now as expired (graph.Answer.Expired) and runs the thread
// on, as a resume would: once every interrupt has an answer, the nodes that
// asked run again and the graph goes on; otherwise the thread stays paused,
// to be woken at its next deadline. It reports false, having changed
// nothing, when nothing is due (the thread is not paused, or its
// interrupts were answered or expired since); a thread busy with another
// run is an error wrapping graph.ErrThreadBusy, to be tried again later.
// What finds the due threads is the Waker: Expire claims the thread like
// any run, so whichever process gets the claim does the work and the
// others find the thread busy, or nothing due once it is done.
func (a *App) Expire(ctx context.Context, tenant, threadID string, now time.Time) (graph.Result, bool, error) {
	res, err := a.run(ctx, nil, RunConfig{ThreadID: threadID, Tenant: tenant}, nil, now)
	if errors.Is(err, graph.ErrNothingDue) {
		return graph.Result{}, false, nil
	}
	return res, err == nil, err
}

// run is one run: it claims the thread, reads its latest checkpoint, takes
// the input's media in and has the graph run from there, writing what it
// saves (saver), then lets the thread go.
func (a *App) run(ctx context.Context, input []message.Message, cfg RunConfig, emit func(graph.Event), expireAt time.Time) (res graph.Result, err error) {
	key, err := keyOf("config.thread_id", cfg.Tenant, cfg.ThreadID)
	if err != nil {
		return graph.Result{}, err
	}
	durability := cmp.Or(cfg.Durability, a.durability)
	if err := durability.Check(); err != nil {
		return graph.Result{}, invalid("config.durability: %v", err)
	}
	st := &graph.Start{ThreadID: cfg.ThreadID, Tenant: cfg.Tenant, RunID: newID(), Key: key,
		Configurable: cfg.Configurable, ExpireAt: expireAt, Emit: emit, Listening: emit != nil}
	if obs := a.observer; obs != nil {
		if emit == nil {
			st.Emit = obs
		} else {
			st.Emit = func(e graph.Event) { obs(e); emit(e) }
		}
	}
	ctx, span := traceRun(ctx, st)
	if span != nil {
		defer func() { endRun(span, res, err) }()
	}
	// The claim comes before anything is read or run: a second run of the
	// thread, in this process or another, is refused here, having done
	// nothing. A resume waits for the run in progress instead, as it may
	// be a retry of that run's answers (see claims.take).
	claim := traceClaim(ctx)
	ctx, h, err := a.claims.take(ctx, key, graph.AnswersOnly(input, cfg.Resume))
	telemetry.EndSpan(claim, err)
	if err != nil {
		return graph.Result{}, err
	}
	defer a.claims.release(ctx, h)
	st.Incarnation = h.lease.Incarnation

	latest, err := a.cache.load(ctx, key, h)
	if err != nil {
		return graph.Result{}, err
	}
	w := &saver{store: a.store, cache: a.cache, hold: h, meta: cfg.Metadata,
		media:  runMedia{checker: a.media, store: a.store, key: key, threadID: cfg.ThreadID},
		atExit: durability == DurabilityExit, async: durability == DurabilityAsync}
	if latest != nil {
		st.Latest = &latest.saved
		w.seq, w.meta, w.logged, w.logBytes = latest.cp.Seq, latest.cp.Metadata, latest.logged, latest.logBytes
		// The thread is the run's: so is the array its messages are in,
		// with room to grow, when the previous run on the thread handed it
		// over (see graph.Start.Tail). The run hands the array it appended
		// to over to the next run when it ends, if it saved all it
		// appended (and after its last write, deferred below).
		st.Tail = a.cache.takeTail(key, latest.saved.Messages)
	}
	defer func() { a.cache.giveTail(key, st.Tail) }()
	// The input's media are taken in once the thread is the run's: a blob
	// source names a blob the thread holds, which nothing else changes
	// meanwhile. Nothing is stored yet; the first checkpoint carries them.
	if err := graph.CheckInput(input); err != nil {
		return graph.Result{}, err
	}
	in := w.media.ingester()
	if st.Input, err = in.messages(ctx, input, "messages", false); err != nil {
		return graph.Result{}, err
	}
	if st.Resume, err = in.resume(ctx, cfg.Resume); err != nil {
		return graph.Result{}, err
	}
	st.Blobs, st.Saver = &w.media, w
	// Every path that returns after an asynchronous write writes again,
	// which waits for it; this only keeps a write from outliving the run
	// (and its lease, let go by release) on any other.
	defer w.settle() //nolint:errcheck // see above
	return a.engine.Run(ctx, st)
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// A run's own spans, while tracing is on (telemetry.Enabled): the run
// ("invoke_agent", GenAI's span for an agent's invocation) and the claim
// of its thread; the engine adds each super-step and node below it, and
// the saver each checkpoint write. Off, none of this is started, and a run
// costs what it did.

// traceRun starts the run's span; nil when tracing is off.
func traceRun(ctx context.Context, st *graph.Start) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return ctx, nil
	}
	return telemetry.Tracer().Start(ctx, "invoke_agent", trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.conversation.id", st.ThreadID),
		attribute.String("tenxgraph.run.id", st.RunID),
	))
}

// endRun records a run's outcome.
func endRun(span trace.Span, res graph.Result, err error) {
	if err != nil {
		span.SetAttributes(attribute.String("error.type", "_OTHER"))
		span.SetStatus(codes.Error, err.Error())
	} else {
		span.SetAttributes(attribute.String("tenxgraph.run.status", string(res.Status)))
	}
	span.End()
}

// traceClaim starts the span of taking the thread (its lease in the
// store).
func traceClaim(ctx context.Context) trace.Span {
	if !telemetry.Enabled() {
		return nil
	}
	_, span := telemetry.Tracer().Start(ctx, "thread.claim")
	return span
}
