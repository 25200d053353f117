package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// RunRequest is the body of /v1/graph/invoke and /v1/graph/stream.
type RunRequest struct {
	Input  RunInput  `json:"input"`
	Config RunConfig `json:"config"`
}

// RunInput is the new input of a run: user messages, or tool results that
// resume a paused thread.
type RunInput struct {
	Messages []message.Message `json:"messages"`
}

// RunConfig is the client's part of a run's configuration.
type RunConfig struct {
	ThreadID string `json:"thread_id"`
	// Response is what the response carries: ResponseFull (the default,
	// the whole thread) or ResponseDelta (only the messages the run added,
	// so a long conversation costs the same to answer at every turn).
	Response string `json:"response,omitempty"`
	// Durability is when the run writes its checkpoints: "sync" (after
	// every step), "async" (after every step, while the next one runs) or
	// "exit" (only where it stops); empty is the server's
	// checkpointer.durability.
	Durability string `json:"durability,omitempty"`
	// Dropped lists server-owned keys the client sent and the server
	// ignored (remote_tools).
	Dropped []string `json:"-"`
}

// The values of config.response.
const (
	// ResponseFull answers with the thread's every message.
	ResponseFull = "full"
	// ResponseDelta answers with the messages the run added, and their
	// offset in the thread: a client that keeps the transcript appends them.
	ResponseDelta = "delta"
)

// tooManyMessages is the error for n messages at path (what of them
// counts: "" for all), over max.
func tooManyMessages(at string, n, max int, what string) error {
	return fmt.Errorf("%w: %s: %d messages%s, more than server.max_request_messages (%d) allows in one request; send them in several requests, or raise the limit",
		errTooManyMessages, at, n, what, max)
}

// DecodeRunRequest reads a run request strictly (package strictjson):
// unknown, repeated and wrong-case keys, invalid UTF-8 and nesting deeper
// than strictjson.MaxDepth are errors with their path, a message that does
// not decode names its index and part, and remote_tools in the config is
// dropped (the seed: a server-owned key). More than maxMessages input
// messages (server.max_request_messages) are refused before any is
// decoded.
func DecodeRunRequest(body io.Reader, maxMessages int) (RunRequest, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return RunRequest{}, err // *http.MaxBytesError: 413
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return RunRequest{}, fmt.Errorf("%w: empty body: send a JSON object", errMalformed)
	}
	var raw *struct {
		Input *struct {
			Messages []json.RawMessage `json:"messages"`
		} `json:"input"`
		Config map[string]json.RawMessage `json:"config"`
	}
	if err := strictjson.Unmarshal(data, &raw); err != nil {
		return RunRequest{}, malformed("", err)
	}
	if raw == nil {
		return RunRequest{}, fmt.Errorf("%w: body: must be an object, got null", errMalformed)
	}
	var req RunRequest
	if raw.Input != nil {
		if n := len(raw.Input.Messages); n > maxMessages {
			return RunRequest{}, tooManyMessages("input.messages", n, maxMessages, "")
		}
		for i, m := range raw.Input.Messages {
			at := fmt.Sprintf("input.messages[%d]", i)
			if k := jsonKindOf(m); k != "an object" {
				return RunRequest{}, fmt.Errorf("%w: %s: must be an object, got %s", errMalformed, at, k)
			}
			var msg message.Message
			if err := strictjson.Unmarshal(m, &msg); err != nil {
				return RunRequest{}, malformed(at, err)
			}
			req.Input.Messages = append(req.Input.Messages, msg)
		}
	}
	for k, v := range raw.Config {
		switch k {
		case "thread_id":
			if err := strictjson.Unmarshal(v, &req.Config.ThreadID); err != nil {
				return RunRequest{}, malformed("config.thread_id", err)
			}
		case "response":
			if err := strictjson.Unmarshal(v, &req.Config.Response); err != nil {
				return RunRequest{}, malformed("config.response", err)
			}
			if r := req.Config.Response; r != ResponseFull && r != ResponseDelta {
				return RunRequest{}, fmt.Errorf("%w: config.response: must be %q or %q, got %q", errMalformed, ResponseFull, ResponseDelta, r)
			}
		case "durability":
			if err := strictjson.Unmarshal(v, &req.Config.Durability); err != nil {
				return RunRequest{}, malformed("config.durability", err)
			}
			if _, err := thread.ParseDurability(req.Config.Durability); err != nil {
				return RunRequest{}, fmt.Errorf("%w: config.durability: %v", errMalformed, err)
			}
		case "remote_tools":
			req.Config.Dropped = append(req.Config.Dropped, k)
		default:
			hint := ""
			for _, known := range []string{"thread_id", "response", "durability"} {
				if strings.EqualFold(k, known) {
					hint = fmt.Sprintf(` (keys are case-sensitive: did you mean %q?)`, known)
				}
			}
			return RunRequest{}, fmt.Errorf("%w: config.%s: unknown key%s (allowed: thread_id, response, durability; remote_tools is accepted and ignored)", errMalformed, strictjson.Key(k), hint)
		}
	}
	return req, nil
}

// jsonKindOf names the kind of a JSON value by its first byte.
func jsonKindOf(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// runContext is the context of a run started by r. With
// server.on_disconnect "cancel" (the default) it is the request's: a client
// that goes away cancels its run, and the thread records it as cancelled.
// With "continue" the run outlives its request, to completion or a pause,
// but not the server: a shutdown still cancels it. Call stop when the run
// is over.
func (s *Server) runContext(r *http.Request) (ctx context.Context, stop func()) {
	if s.cfg.OnDisconnect != config.OnDisconnectContinue {
		return r.Context(), func() {}
	}
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(r.Context()))
	unhook := context.AfterFunc(s.runs, func() { cancel(context.Cause(s.runs)) })
	return ctx, func() { unhook(); cancel(nil) }
}

func (s *Server) decodeRun(w http.ResponseWriter, r *http.Request) (RunRequest, thread.RunConfig, bool) {
	req, err := DecodeRunRequest(r.Body, s.cfg.MaxRequestMessages)
	if err != nil {
		writeErr(w, err)
		return req, thread.RunConfig{}, false
	}
	return req, thread.RunConfig{ThreadID: req.Config.ThreadID, Durability: thread.Durability(req.Config.Durability), Tenant: tenant(r)}, true
}

func (s *Server) handleInvoke(w http.ResponseWriter, r *http.Request) {
	req, cfg, ok := s.decodeRun(w, r)
	if !ok {
		return
	}
	if len(req.Config.Dropped) > 0 {
		w.Header().Set("Tenxgraph-Ignored-Config", strings.Join(req.Config.Dropped, ", "))
	}
	ctx, stop := s.runContext(r)
	defer stop()
	res, err := s.svc.App.Invoke(ctx, req.Input.Messages, cfg)
	s.metrics.finished(res, err)
	if err != nil {
		writeErr(w, err)
		return
	}
	p, _, err := runParts(shape(res, req.Config.Response))
	if err != nil {
		writeErr(w, fmt.Errorf("encoding the response: %w", err))
		return
	}
	writeParts(w, p)
}

// shape is res as the client asked for it in config.response.
func shape(res graph.Result, response string) any {
	if response != ResponseDelta {
		return res
	}
	prior := min(res.Prior, len(res.Messages))
	res.Messages = res.Messages[prior:]
	return DeltaResult{Result: res, Offset: prior}
}

func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	req, cfg, ok := s.decodeRun(w, r)
	if !ok {
		return
	}
	ctx, stopRun := s.runContext(r)
	defer stopRun()
	next, stop := iter.Pull2(s.svc.App.Stream(ctx, req.Input.Messages, cfg))
	defer stop()
	// A run refused before it starts (a conflict, bad input) is answered
	// with a plain status and error body, like invoke.
	first, err, more := next()
	if err != nil {
		s.metrics.finished(graph.Result{}, err)
		writeErr(w, err)
		return
	}
	sse := newSSE(w)
	for _, key := range req.Config.Dropped {
		sse.event("config_ignored", map[string]string{"key": key, "reason": "remote_tools is a server-owned key; the API drops it from client config"})
	}
	for ev := first; more; ev, err, more = next() {
		if err != nil {
			s.metrics.finished(graph.Result{}, err)
			_, body := errorBody(err)
			sse.event("error", body)
			return
		}
		if ev.Type == graph.EventEnd {
			res := ev.Data.(graph.Result)
			s.metrics.finished(res, nil)
			ev.Data = shape(res, req.Config.Response)
		}
		sse.event(ev.Type, ev.Data)
	}
}

// MaxPageLimit is the largest ?limit= of GET /v1/threads/{thread_id}.
const MaxPageLimit = 1000

// pageQuery is the paging of GET /v1/threads/{thread_id}: after is a
// message id ("" for the start), limit the most messages to return (0: all
// that follow). Unknown or repeated parameters are errors, as unknown keys
// are in a body: a misspelt one would otherwise silently return everything.
type pageQuery struct {
	after string
	limit int
	paged bool
}

func parsePageQuery(r *http.Request) (pageQuery, error) {
	var q pageQuery
	if r.URL.RawQuery == "" {
		return q, nil
	}
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return q, fmt.Errorf("%w: query: %v (percent-encode the values)", errMalformed, err)
	}
	for k, v := range vals {
		if k != "after" && k != "limit" {
			return q, fmt.Errorf("%w: query parameter %q: unknown (allowed: after, limit)", errMalformed, k)
		}
		if len(v) > 1 {
			return q, fmt.Errorf("%w: query parameter %s: given %d times, give it once", errMalformed, k, len(v))
		}
		if !utf8.ValidString(v[0]) {
			return q, fmt.Errorf("%w: query parameter %s: must be valid UTF-8 (percent-encode its UTF-8 bytes)", errMalformed, k)
		}
	}
	q.paged = true
	if v, ok := vals["after"]; ok {
		if v[0] == "" {
			return q, fmt.Errorf("%w: query parameter after: empty: give the id of the last message you have, or leave it out to start at the first", errMalformed)
		}
		q.after = v[0]
	}
	if v, ok := vals["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || v[0] != strconv.Itoa(n) {
			return q, fmt.Errorf("%w: query parameter limit: must be a whole number from 1 to %d, got %q", errMalformed, MaxPageLimit, v[0])
		}
		if n < 1 || n > MaxPageLimit {
			return q, fmt.Errorf("%w: query parameter limit: must be from 1 to %d, got %d", graph.ErrInvalidInput, MaxPageLimit, n)
		}
		q.limit = n
	}
	return q, nil
}

// page cuts msgs of thread id to q.
func (q pageQuery) page(id string, msgs []message.Message) ([]message.Message, *Page, error) {
	if !q.paged {
		return msgs, nil, nil
	}
	from := 0
	if q.after != "" {
		from = slices.IndexFunc(msgs, func(m message.Message) bool { return m.ID == q.after })
		if from < 0 {
			return nil, nil, fmt.Errorf("%w: query parameter after: thread %q has no message with id %q", graph.ErrInvalidInput, id, q.after)
		}
		from++
	}
	to := len(msgs)
	if q.limit > 0 {
		to = min(to, from+q.limit)
	}
	return msgs[from:to:to], &Page{Offset: from, Total: len(msgs), HasMore: to < len(msgs)}, nil
}

// threadID is the route's thread id. One that is not UTF-8 is refused with
// 400 (it could not be a thread's name); CheckThreadID's other rules are the
// graph's.
func threadID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("thread_id")
	if !utf8.ValidString(id) {
		writeErr(w, fmt.Errorf("%w: thread_id in the path: must be valid UTF-8 (percent-encode its UTF-8 bytes)", errMalformed))
		return "", false
	}
	return id, true
}

func (s *Server) handleGetThread(w http.ResponseWriter, r *http.Request) {
	id, ok := threadID(w, r)
	if !ok {
		return
	}
	q, err := parsePageQuery(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	res, err := s.svc.App.ThreadFor(r.Context(), tenant(r), id)
	if err != nil {
		writeErr(w, err)
		return
	}
	msgs, page, err := q.page(res.ThreadID, res.Messages)
	if err != nil {
		writeErr(w, err)
		return
	}
	p, err := threadParts(Thread{ThreadID: res.ThreadID, Status: res.Status, Messages: msgs, RemoteToolCalls: res.RemoteToolCalls,
		ApprovalRequests: res.ApprovalRequests, Page: page})
	if err != nil {
		writeErr(w, fmt.Errorf("encoding the thread: %w", err))
		return
	}
	writeParts(w, p)
}

func (s *Server) handleDeleteThread(w http.ResponseWriter, r *http.Request) {
	id, ok := threadID(w, r)
	if !ok {
		return
	}
	if err := s.svc.App.DeleteThread(r.Context(), tenant(r), id); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleHealth answers 200 while the store can be read, and 503 naming the
// problem while it cannot: a server whose every call would fail is not
// healthy.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := s.svc.App.Probe(ctx); err != nil {
		writeError(w, http.StatusServiceUnavailable, "store_unavailable", err.Error(), nil)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "agent": s.svc.Config.Agent, "tools": len(s.svc.Tools())})
}
