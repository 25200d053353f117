package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenxgraph/tenxgraph/host/telemetry"
)

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

func (s *Server) pace(w http.ResponseWriter, body io.ReadCloser) io.ReadCloser {
	now := time.Now()
	return &pacedBody{ReadCloser: body, rc: http.NewResponseController(w), start: now, last: now.Add(ReadTimeout),
		grace: s.bodyGrace, rate: s.bodyRate}
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
		if !s.log.IsInfo() {
			return // the line would be dropped: its fields would be made for nothing
		}
		kv := []any{"method", r.Method, "path", r.URL.Path, "status", sw.status,
			"bytes", sw.bytes, "duration", time.Since(start), "remote", r.RemoteAddr}
		if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
			kv = append(kv, "trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String())
		}
		s.log.Info("request", kv...)
	})
}
