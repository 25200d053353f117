package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tenxgraph/tenxgraph/internal/supervise"
)

// protocolVersion is pinned: the SDK's default first probes the 2026-07-28
// protocol with server/discover, which some stdio servers answer by exiting
// (go-sdk#1177) and which costs an extra round trip over HTTP.
const protocolVersion = "2025-11-25"

// StopGrace is how long a stdio server gets to exit after its stdin
// closes, and again after SIGTERM, before it is killed.
const StopGrace = time.Second

// maxHold is the longest backoff a call waits out; past it, the call fails
// at once with the reason the server is down.
const maxHold = 2 * time.Second

// longLife: a connection that lasted this long before it broke resets the
// backoff; one that broke sooner counts as another strike.
const longLife = 30 * time.Second

// server is one MCP server: its connection, kept alive (a server that
// exits or restarts is connected again: a new process or a new session),
// and its tools.
type server struct {
	cfg    Server // ${VAR}s expanded
	raw    Server // as written, for messages: cfg may hold secrets
	log    hclog.Logger
	client *mcpsdk.Client
	http   http.RoundTripper // nil for stdio
	frame  int               // the most read of one message, in bytes (Server.frameBytes)

	// What the bridge hands each of its servers.
	wire    *wireLog        // the wire log, nil when there is none
	done    <-chan struct{} // closed when the bridge shuts down
	retitle func()          // renames the bridge's tools once this server's changed

	// sup keeps the connection: one dial at a time, reconnects with
	// backoff, a shutdown that waits for a dial under way.
	sup *supervise.Supervisor[*conn]

	mu    sync.Mutex
	tools []*mcpsdk.Tool

	calls  sync.Map // progress token -> *call
	seq    atomic.Uint64
	relist chan struct{} // a tools/list_changed to act on
}

// conn is one connection: a session, and for stdio the process behind it.
type conn struct {
	cs     *mcpsdk.ClientSession
	proc   *process
	over   *atomic.Bool       // the server sent a message past frame, which ended the connection
	cancel context.CancelFunc // ends the connection's context
	dead   chan struct{}      // closed when the session has ended
	ended  chan struct{}      // closed once its process is gone too and reason set
	reason error              // why it ended, once ended is closed
	tools  []*mcpsdk.Tool     // listed when it connected
	since  time.Time
}

func newServer(cfg, raw Server, log hclog.Logger, done <-chan struct{}, retitle func()) *server {
	s := &server{cfg: cfg, raw: raw, log: log, done: done, retitle: retitle, relist: make(chan struct{}, 1)}
	s.sup = supervise.New(supervise.Config[*conn]{
		Start: s.dial,
		Done:  func(c *conn) <-chan struct{} { return c.ended },
		Stop:  func(_ context.Context, c *conn) { c.close() },
		Started: func(c *conn) {
			s.mu.Lock()
			s.tools = c.tools
			s.mu.Unlock()
			s.retitle()
		},
		Ended: func(c *conn, restartIn time.Duration) error {
			s.log.Warn(s.describe()+" is gone; connecting again", "reason", c.reason, "in", restartIn.Round(time.Millisecond))
			if restartIn > 0 {
				return fmt.Errorf("%v (next attempt in %s)", c.reason, restartIn.Round(time.Millisecond))
			}
			return c.reason
		},
		// A first failure is retried at once, then from 250ms doubling to
		// 30s; a connection that lasted longLife clears the failures. A
		// call waits out a backoff of up to maxHold.
		First: 250 * time.Millisecond, Max: 30 * time.Second, Reset: longLife, Hold: maxHold,
	})
	s.frame = cfg.frameBytes()
	s.client = mcpsdk.NewClient(&mcpsdk.Implementation{Name: "tenxgraph", Version: Version}, &mcpsdk.ClientOptions{
		// No roots: the SDK's default advertises them, and servers react
		// (server-filesystem replaces its directories with the client's
		// roots; server-everything stays up after stdin closes).
		Capabilities: &mcpsdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcpsdk.ToolListChangedRequest) {
			select {
			case s.relist <- struct{}{}:
			default: // one pending is enough
			}
		},
		ProgressNotificationHandler: s.progressed,
	})
	if cfg.Type != "stdio" {
		base := http.DefaultTransport.(*http.Transport).Clone()
		base.MaxIdleConnsPerHost = 16
		s.http = headerTransport{base: base, headers: cfg.Headers}
	}
	return s
}

// headerTransport adds the entry's headers to every request (the SDK's
// HTTP transports have no header setting): the POSTs, the event stream's
// GET and the closing DELETE alike.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// describe names the server for messages: its key and what it runs, as
// the config writes it (${VAR}s unexpanded, so a message never holds their
// values).
func (s *server) describe() string {
	if s.cfg.Type == "stdio" {
		return fmt.Sprintf("MCP server %q (%s)", s.cfg.Name, strings.Join(append([]string{s.raw.Command}, s.raw.Args...), " "))
	}
	return fmt.Sprintf("MCP server %q (%s)", s.cfg.Name, s.raw.URL)
}

// redact replaces the expanded URL in an error with the URL as written:
// net/http quotes the URL it failed on, and a ${VAR} in it (a query's
// key) may hold a secret.
func (s *server) redact(err error) error {
	if err == nil || s.cfg.URL == s.raw.URL || s.cfg.URL == "" || !strings.Contains(err.Error(), s.cfg.URL) {
		return err
	}
	return redacted{msg: strings.ReplaceAll(err.Error(), s.cfg.URL, s.raw.URL), err: err}
}

// redacted is an error whose message is rewritten, still matching what it
// wraps with errors.Is and errors.As.
type redacted struct {
	msg string
	err error
}

func (r redacted) Error() string { return r.msg }
func (r redacted) Unwrap() error { return r.err }

// dial connects: starts the process or opens the session, completes the
// handshake and lists the tools, all within the server's timeout.
func (s *server) dial() (*conn, error) {
	// The connection's context lives as long as the connection: the legacy
	// SSE transport reads its event stream on the context Connect is given,
	// so a context cancelled once connected would end the session. The
	// handshake is bounded by a timer instead.
	ctx, cancel := context.WithCancel(context.Background())
	var t mcpsdk.Transport
	var proc *process
	over := new(atomic.Bool)
	// No http.Client.Timeout: it would also cut the long-lived event
	// stream. Calls have their own deadlines.
	hc := func() *http.Client {
		return &http.Client{Transport: limitTransport{base: s.http, limit: s.frame, over: over}}
	}
	switch s.cfg.Type {
	case "stdio":
		p, err := startStdio(s.cfg, s.log)
		if err != nil {
			cancel()
			return nil, err
		}
		proc = p
		// The bridge bounds each line itself; the SDK's bound, on a JSON
		// value, is for one spread over lines, which MCP forbids.
		out := &frameLimiter{r: p.stdout, limit: s.frame, framing: lines, enforce: true, over: over}
		t = &mcpsdk.IOTransport{Reader: limitedBody{out, p.stdout}, Writer: p.stdin, MaxLineLength: 2 * s.frame}
	case "sse":
		t = &mcpsdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc(), MaxEventSize: s.frame}
	default:
		t = &mcpsdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc(), MaxEventSize: s.frame}
	}
	if w := s.wire; w != nil {
		t = &mcpsdk.LoggingTransport{Transport: t, Writer: w.prefixed(s.cfg.Name)}
	}
	timeout := s.cfg.connectTimeout()
	timer := time.AfterFunc(timeout, cancel)
	cs, err := s.client.Connect(ctx, t, &mcpsdk.ClientSessionOptions{ProtocolVersion: protocolVersion})
	var tools []*mcpsdk.Tool
	if err == nil {
		tools, err = s.list(ctx, cs)
	}
	if !timer.Stop() && err == nil {
		err = context.DeadlineExceeded
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("no answer to the handshake within %s: %w", timeout, err)
		}
		if cs != nil {
			_ = cs.Close()
		}
		cancel()
		if proc != nil {
			select { // a server that failed to start usually exits at once
			case <-proc.exited:
				err = fmt.Errorf("%w; the server exited (%v). It runs with only PATH, LANG, LC_ALL, TZ and a private HOME and TMPDIR of the host's environment: if it needs more, name the variables in mcp_servers.%s.pass_env or set them in its env (a server run with npx needs \"pass_env\": [\"HOME\"] to use your npm cache, a Python one its virtualenv's PATH)", err, proc.err, s.cfg.Name)
			case <-time.After(100 * time.Millisecond):
			}
			proc.stop(StopGrace)
			proc.release()
			err = fmt.Errorf("%w%s", err, proc.tail)
		}
		return nil, s.redact(err)
	}
	c := &conn{cs: cs, proc: proc, over: over, cancel: cancel, dead: make(chan struct{}), ended: make(chan struct{}), tools: tools, since: time.Now()}
	go s.watch(c)
	return c, nil
}

// list reads the server's tools, every page, and keeps the ones allowed.
func (s *server) list(ctx context.Context, cs *mcpsdk.ClientSession) ([]*mcpsdk.Tool, error) {
	var tools []*mcpsdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list its tools: %w", err)
		}
		if len(s.cfg.AllowTools) > 0 && !slices.Contains(s.cfg.AllowTools, t.Name) || slices.Contains(s.cfg.DenyTools, t.Name) {
			continue
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// watch waits for the session to end, ends its process, and says why it
// ended. An end the bridge did not ask for is a crash or a lost
// connection: the supervisor logs it and connects again at once (subject
// to backoff), so the next call finds it ready.
func (s *server) watch(c *conn) {
	err := c.cs.Wait()
	close(c.dead)
	c.cancel()
	if c.proc != nil {
		c.proc.stop(StopGrace) // a session that broke on a bad frame leaves the process running
		c.proc.release()
		if err == nil || errors.Is(err, io.EOF) {
			err = c.proc.err
		}
	}
	c.reason = fmt.Errorf("the connection broke: %v", s.redact(err))
	if c.proc != nil {
		c.reason = fmt.Errorf("the server exited (%v)%s", c.proc.err, c.proc.tail)
	}
	close(c.ended)
}

// session returns the live connection, connecting when there is none.
// Concurrent callers share one dial.
func (s *server) session(ctx context.Context) (*conn, error) {
	c, err := s.sup.Get(ctx)
	switch {
	case errors.Is(err, supervise.ErrClosed):
		return nil, fmt.Errorf("%s: the bridge is shutting down", s.describe())
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("%s: waiting for it to connect: %w", s.describe(), err)
	case err != nil:
		return nil, fmt.Errorf("%s is unavailable: %w", s.describe(), err)
	}
	return c, nil
}

// close ends a connection on purpose.
func (c *conn) close() {
	_ = c.cs.Close()
	if c.proc != nil {
		c.proc.stop(StopGrace)
		c.proc.release()
	}
	c.cancel()
}

// relister acts on tools/list_changed: it lists the server's tools again
// (bursts of notifications are read as one) and renames the bridge's tools.
func (s *server) relister() {
	for {
		select {
		case <-s.relist:
		case <-s.done:
			return
		}
		time.Sleep(10 * time.Millisecond) // let a burst end
		select {
		case <-s.relist:
		default:
		}
		// A notification that raced the handshake waits for it.
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.connectTimeout())
		c, err := s.sup.Get(ctx)
		if err != nil {
			cancel()
			continue // the next connection lists them anyway
		}
		tools, err := s.list(ctx, c.cs)
		cancel()
		if err != nil {
			s.log.Warn("could not list the tools of "+s.describe()+" after it said they changed", "error", s.redact(err))
			continue
		}
		if cur, live := s.sup.Current(); !live || cur != c {
			continue // a newer connection listed its own
		}
		s.mu.Lock()
		s.tools = tools
		s.mu.Unlock()
		s.retitle()
	}
}

// shutdown ends the server's connection, once a dial under way is done;
// the bridge is stopping.
func (s *server) shutdown(ctx context.Context) { _ = s.sup.Shutdown(ctx) }

// wireLog is the file EnvWireLog names, shared by every server.
type wireLog struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *wireLog) prefixed(name string) io.Writer { return prefixWriter{l, "[" + name + "] "} }

type prefixWriter struct {
	l      *wireLog
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	if _, err := io.WriteString(p.l.w, p.prefix); err != nil {
		return 0, err
	}
	return p.l.w.Write(b)
}
