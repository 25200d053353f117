// Package server is tenxgraph's HTTP API: invoke and stream runs, resume
// paused threads, read and delete threads, the AG-UI endpoint, health and
// metrics. It is a thin layer over thread.App: every rule about threads and
// pauses lives in the graph; this package maps them to HTTP.
package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/service"
	"github.com/tenxgraph/tenxgraph/host/telemetry"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

// Server serves one service over HTTP.
type Server struct {
	svc     *service.Service
	log     hclog.Logger
	cfg     config.Server
	tokens  []token
	metrics *metrics
	http    *http.Server
	mux     *http.ServeMux
	// api lists the patterns of the routes under /v1/ (see v1): the
	// tenancy tests go over every one.
	api []string
	// runs is the context every run derives from, whatever
	// server.on_disconnect says; stopRuns cancels the runs still going when
	// a shutdown's grace period is over.
	runs     context.Context
	stopRuns context.CancelCauseFunc
	// waker expires the remote calls no client answered in time, on every
	// thread of the store that is due (thread.Waker); its runs derive from
	// runs, like the API's.
	waker *thread.Waker

	writeTimeout time.Duration // how long one write may take (WriteTimeout)
	// bodyGrace and bodyRate pace a request body (BodyGrace, MinBodyRate).
	bodyGrace time.Duration
	bodyRate  int64
}

// token is one accepted bearer token; name (the env var it came from)
// identifies its holder, and is the tenant its threads belong to.
type token struct {
	name  string
	value []byte
}

// Options adjust a server.
type Options struct {
	// Logger receives access logs and errors (default: service.DefaultLogger).
	Logger hclog.Logger
}

// New builds the server for svc with the config's server section. Tokens
// named by server.auth.tokens_env must be set: a server configured for auth
// never starts open by accident.
func New(svc *service.Service, opts Options) (*Server, error) {
	s := &Server{svc: svc, log: opts.Logger, cfg: svc.Config.Server, mux: http.NewServeMux()}
	if s.log == nil {
		s.log = service.DefaultLogger()
	}
	s.log = s.log.Named("http")
	if a := s.cfg.Auth; a != nil {
		for _, env := range a.TokensEnv {
			v := os.Getenv(env)
			if v == "" {
				return nil, fmt.Errorf("server.auth.tokens_env: the environment variable %s is empty; set it to the token clients must send", env)
			}
			s.tokens = append(s.tokens, token{name: env, value: []byte(v)})
		}
	}
	if s.cfg.MaxBodyBytes == 0 {
		s.cfg.MaxBodyBytes = config.DefaultMaxBodyBytes
	}
	if s.cfg.MaxRequestMessages == 0 {
		s.cfg.MaxRequestMessages = config.DefaultMaxRequestMessages
	}
	s.bodyGrace, s.bodyRate = BodyGrace, MinBodyRate
	s.metrics = newMetrics(svc.App)
	svc.App.Observe(s.metrics.observe)
	s.routes()
	s.runs, s.stopRuns = context.WithCancelCause(context.Background())
	s.waker = &thread.Waker{App: svc.App, OnError: func(key string, err error) {
		s.log.Warn("expiring pending calls failed", "thread", key, "error", err)
	}}
	go func() { _ = s.waker.Run(s.runs) }()
	s.writeTimeout = WriteTimeout
	s.http = &http.Server{
		Handler:           s.Handler(),
		BaseContext:       func(net.Listener) context.Context { return s.runs },
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
	}
	return s, nil
}

// The server's timeouts. A client must send its request headers within
// ReadHeaderTimeout and its whole request within ReadTimeout, so a client
// that sends slowly (slowloris) is closed; a body must also keep coming
// (BodyGrace, MinBodyRate), or it is answered 408 long before ReadTimeout. Every write of a response must
// finish within WriteTimeout of its start: the deadline is moved on as
// each write (each event of a stream) begins, so a stream lasts as long as
// its run, but a client that stops reading is dropped and what its
// response held is freed. An idle keep-alive connection is closed after
// IdleTimeout.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 60 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 120 * time.Second
)

// A request body must keep arriving: after BodyGrace from the end of the
// headers, at least MinBodyRate bytes a second on average, and all of it
// within ReadTimeout. A body that falls behind is answered 408
// (body_timeout) as soon as it does, so a client trickling a byte a second
// holds a connection for seconds, not the minute of ReadTimeout. The rate
// is what any link manages (8 kbit/s); Kestrel's minimum body rate works
// the same way (240 bytes a second after a 5 s grace).
const (
	BodyGrace   = 5 * time.Second
	MinBodyRate = 1 << 10
)

func (s *Server) routes() {
	s.route("POST /v1/graph/invoke", s.handleInvoke)
	s.route("POST /v1/graph/stream", s.handleStream)
	s.route("POST /v1/agui", s.handleAGUI)
	s.route("GET /v1/threads/{thread_id}", s.handleGetThread)
	s.route("DELETE /v1/threads/{thread_id}", s.handleDeleteThread)
	s.route("GET /v1/threads/{thread_id}/blobs/{ref}", s.handleBlob)
	s.mux.HandleFunc("GET /healthz", s.handleHealth)
	s.mux.Handle("GET /metrics", s.metrics.handler())
	s.mux.Handle("GET /{$}", playgroundPage())                 // the playground (playground.go)
	s.mux.Handle("GET /playground/{file}", playgroundAssets()) // its script, style and client
	s.mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		if allow := s.allowed(r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed",
				fmt.Sprintf("%s %s: method not allowed (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")), nil)
			return
		}
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route %s %s (see docs/api.md)", r.Method, r.URL.Path), nil)
	})
}

// route serves an API route: through v1 (auth, the body rules), and
// listed in s.api.
func (s *Server) route(pattern string, h http.HandlerFunc) {
	s.mux.HandleFunc(pattern, s.v1(h))
	s.api = append(s.api, pattern)
}

// allowed lists the methods that have a route for r's path: the catch-all
// under /v1/ matches every method, so without this a known path asked with
// the wrong method would be a 404 instead of a 405.
func (s *Server) allowed(r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		probe := *r
		probe.Method = m
		if _, pattern := s.mux.Handler(&probe); pattern != "" && pattern != "/v1/" {
			out = append(out, m)
		}
	}
	return out
}

// Handler is the server's handler, with the Host and Origin checks, CORS
// and access logs: for tests and for mounting under another server.
func (s *Server) Handler() http.Handler {
	h := s.accessLog(s.guard(s.cors(s.mux)))
	if telemetry.Enabled() {
		h = s.traced(h)
	}
	return h
}

// traced makes each request a server span, named by its route ("POST
// /v1/graph/invoke"), the child of the request's W3C traceparent header
// when it has one (so a client's trace, or an AG-UI client's, continues
// through the run, its tools and its model calls).
func (s *Server) traced(h http.Handler) http.Handler {
	return otelhttp.NewHandler(h, "tenxgraph",
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if _, pattern := s.mux.Handler(r); pattern != "" && strings.HasPrefix(pattern, r.Method+" ") {
				return pattern
			}
			return r.Method
		}))
}

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	err := s.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// CancelWait is how long Shutdown waits for requests to end after it
// cancelled their runs. A run ends promptly on cancellation even when a
// tool ignores it: the tool's call is abandoned, not awaited.
const CancelWait = 2 * time.Second

// ErrRunsCancelled is wrapped by Shutdown's error when runs were still
// going at the end of the grace and were cancelled.
var ErrRunsCancelled = errors.New("runs still in flight at the end of the grace period were cancelled")

// errShutdown is the cause of runs cancelled by a shutdown.
var errShutdown = errors.New("the server is shutting down")

// Shutdown stops accepting requests and lets those in flight (runs
// included) finish until ctx is done. Then it cancels them through their
// context, so each run ends as cancelled and is recorded as such on its
// thread (which can be resumed), and waits up to CancelWait for their
// handlers; a request still running after that has its connection closed.
// It returns within CancelWait of ctx's end; nil when nothing had to be cut
// off. The service's providers are drained by the caller after this
// returns.
func (s *Server) Shutdown(ctx context.Context) error {
	woken := make(chan error, 1)
	go func() { woken <- s.waker.Shutdown(ctx) }() // stops polling at once
	err := errors.Join(s.http.Shutdown(ctx), <-woken)
	if err == nil {
		return nil
	}
	s.stopRuns(errShutdown)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CancelWait)
	defer cancel()
	if werr := errors.Join(s.http.Shutdown(wctx), s.waker.Shutdown(wctx)); werr != nil {
		_ = s.http.Close()
		return fmt.Errorf("%w; requests still running %s later were cut off: %w", ErrRunsCancelled, CancelWait, werr)
	}
	return fmt.Errorf("%w: %w", ErrRunsCancelled, err)
}

type ctxKey int

const tenantKey ctxKey = 0

// v1 wraps an API route: authentication (when configured), the JSON
// Content-Type of a POST, the body's size limit and pace, and UTF-8. The
// caller's token's name is the tenant of every thread the request names
// (see tenant).
func (s *Server) v1(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if len(s.tokens) > 0 {
			name, ok := s.authenticate(r)
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="tenxgraph"`)
				writeError(w, http.StatusUnauthorized, "unauthorized", "send Authorization: Bearer <token> with a token the server accepts", nil)
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), tenantKey, name))
		}
		if msg, ok := jsonBody(r); !ok {
			writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", msg, nil)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, s.pace(w, r.Body), s.cfg.MaxBodyBytes)
		}
		h(w, r)
	}
}

func (s *Server) authenticate(r *http.Request) (string, bool) {
	auth := r.Header.Get("Authorization")
	scheme, value, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || value == "" {
		return "", false
	}
	for _, t := range s.tokens {
		if subtle.ConstantTimeCompare(t.value, []byte(value)) == 1 {
			return t.name, true
		}
	}
	return "", false
}

// tenant is the tenant of the threads r names: the name of the caller's
// token, or "" on a server without tokens. Each token has threads of its
// own (thread.RunConfig.Tenant): another token's thread of the same id is
// another thread, so every route answers for it exactly as for a thread
// that does not exist, and a token cannot take an id from another.
func tenant(r *http.Request) string {
	name, _ := r.Context().Value(tenantKey).(string)
	return name
}

// cors answers browsers from the configured origins only.
func (s *Server) cors(next http.Handler) http.Handler {
	origins := s.cfg.CORS.AllowOrigins
	if len(origins) == 0 {
		return next
	}
	any := slices.Contains(origins, "*")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && (any || slices.Contains(origins, origin)) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept")
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
			h.Set("Access-Control-Max-Age", "600")
			h.Set("Access-Control-Expose-Headers", "Tenxgraph-Ignored-Config, WWW-Authenticate")
			if r.Method == http.MethodOptions {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// statusWriter records what a handler answered, for the access log, and
// gives each write the write timeout from its start: the connection's write
// deadline moves on as a response (a stream's events) is written, so no
// write waits longer than the timeout for a client that does not read. It
// passes Flush through so streams stay streams.
type statusWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	status  int
	bytes   int64
}

// extend moves the write deadline to the timeout from now. A writer that
// has no deadline (a recorder in tests) is left as it is.
func (w *statusWriter) extend() {
	if w.timeout > 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	}
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.extend()
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	w.extend()
	_ = w.rc.Flush()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: s.writeTimeout}
		next.ServeHTTP(sw, r)
		kv := []any{"method", r.Method, "path", r.URL.Path, "status", sw.status,
			"bytes", sw.bytes, "duration", time.Since(start), "remote", r.RemoteAddr}
		if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
			kv = append(kv, "trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String())
		}
		s.log.Info("request", kv...)
	})
}

// pacedBody is a request body that must keep arriving (BodyGrace,
// MinBodyRate): before each read it moves the connection's read deadline
// to when the body would fall behind, and a read that passes it is a
// *bodyTimeoutError (408). Once the body is read whole, the HTTP server
// lifts the deadline itself to watch for the client going away, so a run
// may last longer than ReadTimeout.
type pacedBody struct {
	io.ReadCloser
	rc          *http.ResponseController
	start, last time.Time // last: ReadTimeout from start
	grace       time.Duration
	rate        int64
	got         int64
}

func (s *Server) pace(w http.ResponseWriter, body io.ReadCloser) io.ReadCloser {
	now := time.Now()
	return &pacedBody{ReadCloser: body, rc: http.NewResponseController(w), start: now, last: now.Add(ReadTimeout),
		grace: s.bodyGrace, rate: s.bodyRate}
}

func (p *pacedBody) Read(b []byte) (int, error) {
	due := p.start.Add(p.grace + time.Duration(float64(p.got)/float64(p.rate)*float64(time.Second)))
	if due.After(p.last) {
		due = p.last
	}
	_ = p.rc.SetReadDeadline(due) // unsupported only where nothing is read from a network
	n, err := p.ReadCloser.Read(b)
	p.got += int64(n)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = &bodyTimeoutError{got: p.got, took: time.Since(p.start), grace: p.grace, rate: p.rate}
	}
	return n, err
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
