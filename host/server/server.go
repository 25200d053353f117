// Package server is tenxgraph's HTTP API: invoke and stream runs, resume
// paused threads, read and delete threads, the AG-UI endpoint, health and
// metrics. It is a thin layer over thread.App: every rule about threads and
// pauses lives in the graph; this package maps them to HTTP.
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/service"
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

// tenant is the tenant of the threads r names: the name of the caller's
// token, or "" on a server without tokens. Each token has threads of its
// own (thread.RunConfig.Tenant): another token's thread of the same id is
// another thread, so every route answers for it exactly as for a thread
// that does not exist, and a token cannot take an id from another.
func tenant(r *http.Request) string {
	name, _ := r.Context().Value(tenantKey).(string)
	return name
}
