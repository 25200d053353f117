package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
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
	// Dropped lists server-owned keys the client sent and the server
	// ignored (remote_tools).
	Dropped []string `json:"-"`
}

// errMalformed marks a request whose body cannot be read as a RunRequest.
var errMalformed = errors.New("malformed request")

// DecodeRunRequest reads a run request strictly: unknown keys are errors
// with their path, a message that does not decode names its index and part,
// and remote_tools in the config is dropped (the seed: a server-owned key).
func DecodeRunRequest(body io.Reader) (RunRequest, error) {
	var raw *struct {
		Input  json.RawMessage            `json:"input"`
		Config map[string]json.RawMessage `json:"config"`
	}
	if err := strictDecode(body, &raw, ""); err != nil {
		return RunRequest{}, err
	}
	if raw == nil {
		return RunRequest{}, fmt.Errorf("%w: body: must be an object, got null", errMalformed)
	}
	var req RunRequest
	if len(raw.Input) > 0 && string(raw.Input) != "null" {
		var in struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := strictDecode(bytes.NewReader(raw.Input), &in, "input"); err != nil {
			return RunRequest{}, err
		}
		for i, m := range in.Messages {
			if k := jsonKindOf(m); k != "an object" {
				return RunRequest{}, fmt.Errorf("%w: input.messages[%d]: must be an object, got %s", errMalformed, i, k)
			}
			var msg message.Message
			if err := json.Unmarshal(m, &msg); err != nil {
				return RunRequest{}, fmt.Errorf("%w: input.messages[%d].%v", errMalformed, i, err)
			}
			req.Input.Messages = append(req.Input.Messages, msg)
		}
	}
	for k, v := range raw.Config {
		switch k {
		case "thread_id":
			if err := json.Unmarshal(v, &req.Config.ThreadID); err != nil {
				return RunRequest{}, fmt.Errorf("%w: config.thread_id: must be a string", errMalformed)
			}
		case "remote_tools":
			req.Config.Dropped = append(req.Config.Dropped, k)
		default:
			return RunRequest{}, fmt.Errorf("%w: config.%s: unknown key (allowed: thread_id; remote_tools is accepted and ignored)", errMalformed, k)
		}
	}
	return req, nil
}

// strictDecode reads one JSON value, refusing unknown fields and trailing
// data. at is the path of the value in the request ("" for the body), for
// error messages.
func strictDecode(r io.Reader, v any, at string) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return fmt.Errorf("%w: %s", errMalformed, describeJSONError(err, at))
	}
	if _, err := dec.Token(); err != io.EOF {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return fmt.Errorf("%w: unexpected data after the JSON body", errMalformed)
	}
	return nil
}

// describeJSONError says what is wrong, naming the part by its path: at is
// the path of the value decoded ("" for the body).
func describeJSONError(err error, at string) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, se)
	case errors.As(err, &te):
		return fmt.Sprintf("%s: must be %s, got %s", jsonPath(at, te.Field), jsonKind(te.Type.Kind().String()), te.Value)
	case errors.Is(err, io.EOF):
		return "empty body: send a JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "invalid JSON: the body ends before the JSON value does"
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return jsonPath(at, strings.Trim(f, `"`)) + ": unknown key"
	}
	return strings.TrimPrefix(msg, "json: ")
}

// jsonPath joins a path and a field ("input" and "messages" make
// "input.messages"); the empty path is the body.
func jsonPath(at, field string) string {
	switch {
	case at == "" && field == "":
		return "body"
	case at == "":
		return field
	case field == "":
		return at
	}
	return at + "." + field
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

func jsonKind(k string) string {
	switch k {
	case "struct", "map":
		return "an object"
	case "slice":
		return "an array"
	case "string":
		return "a string"
	}
	return k
}

func (s *Server) decodeRun(w http.ResponseWriter, r *http.Request) (RunRequest, graph.RunConfig, bool) {
	req, err := DecodeRunRequest(r.Body)
	if err != nil {
		writeErr(w, err)
		return req, graph.RunConfig{}, false
	}
	return req, graph.RunConfig{ThreadID: req.Config.ThreadID, Metadata: owner(r)}, true
}

func (s *Server) handleInvoke(w http.ResponseWriter, r *http.Request) {
	req, cfg, ok := s.decodeRun(w, r)
	if !ok {
		return
	}
	if len(req.Config.Dropped) > 0 {
		w.Header().Set("Tenxgraph-Ignored-Config", strings.Join(req.Config.Dropped, ", "))
	}
	res, err := s.svc.App.Invoke(r.Context(), req.Input.Messages, cfg)
	s.metrics.finished(res, err)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	req, cfg, ok := s.decodeRun(w, r)
	if !ok {
		return
	}
	next, stop := iter.Pull2(s.svc.App.Stream(r.Context(), req.Input.Messages, cfg))
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
			s.metrics.finished(ev.Data.(graph.Result), nil)
		}
		sse.event(ev.Type, ev.Data)
	}
}

// Thread is the body of GET /v1/threads/{thread_id}.
type Thread struct {
	ThreadID        string                        `json:"thread_id"`
	Status          graph.Status                  `json:"status"`
	Messages        []message.Message             `json:"messages"`
	RemoteToolCalls []message.RemoteToolCallBlock `json:"remote_tool_calls"`
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
	res, err := s.svc.App.ThreadFor(r.Context(), id, owner(r))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeThread(w, Thread{ThreadID: res.ThreadID, Status: res.Status, Messages: res.Messages, RemoteToolCalls: res.RemoteToolCalls})
}

func (s *Server) handleDeleteThread(w http.ResponseWriter, r *http.Request) {
	id, ok := threadID(w, r)
	if !ok {
		return
	}
	if err := s.svc.App.DeleteThread(r.Context(), id, owner(r)); err != nil {
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
