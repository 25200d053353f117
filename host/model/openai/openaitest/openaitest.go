// Package openaitest is an OpenAI-compatible Chat Completions server for
// tests: an httptest server that speaks the real wire format (plain JSON
// answers and SSE streams of chat.completion.chunk objects ending in
// "data: [DONE]"), answers from a script, records every request, and checks
// that each request is one a strict server would accept.
//
//	srv := openaitest.NewServer(t,
//		openaitest.Calls(openaitest.Call("call_1", "add", `{"a":2,"b":3}`)),
//		openaitest.Text("5"))
//	m, _ := openai.New(openai.Config{Model: "test", BaseURL: srv.URL})
//
// Replies are used in order; when they run out, the function given to Handle
// answers. A Reply shapes the stream too: Split cuts text and arguments
// into small chunks, LateIDs sends each call's id in its last chunk, Packed
// puts several calls in one chunk; Status, RateLimited and ServerError make
// error answers; Malformed breaks the answer. Requests returns what the
// server got, decoded, with the time each arrived.
//
// Every request is checked as OpenAI would check it, and more strictly in
// one respect: each assistant message with tool_calls must be followed by
// exactly one tool message per call, in call order. A request that fails a
// check gets a 400 with the reason, and the test fails at cleanup.
package openaitest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Path is where the server answers, under its root.
const Path = "/v1/chat/completions"

// Server is the test server. Its methods are safe for concurrent use.
type Server struct {
	// URL is the API root to configure as the base URL (it ends in /v1).
	URL string

	srv      *httptest.Server
	mu       sync.Mutex
	replies  []Reply
	handle   func(Request) Reply
	requests []Request
	problems []string
	apiKey   string
	n        int  // requests received
	forget   bool // keep no requests (New)
	conns    atomic.Int64
}

// NewServer starts a server answering with replies, in order, and closes
// it when the test ends. If a request broke the protocol, the test fails
// then, listing why.
func NewServer(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := &Server{replies: replies}
	s.srv = httptest.NewUnstartedServer(s)
	s.srv.Config.ConnState = s.ConnState
	s.srv.Start()
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(func() {
		s.srv.Close()
		for _, p := range s.Problems() {
			t.Errorf("openaitest: %s", p)
		}
	})
	return s
}

// New returns a server that is not listening, for use outside a test:
// serve it with an http.Server of your own (with ConnState as its hook to
// count connections), as the openaitest command does to run the model in a
// process of its own. It keeps no requests, so a long load does not grow
// it: Requests returns none, Problems still lists every violation.
func New(replies ...Reply) *Server {
	return &Server{replies: replies, forget: true}
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.serve(w, r) }

// ConnState is an http.Server ConnState hook counting the connections
// clients open, for Connections. NewServer installs it.
func (s *Server) ConnState(_ net.Conn, state http.ConnState) {
	if state == http.StateNew {
		s.conns.Add(1)
	}
}

// Connections is how many connections clients have opened so far: what
// shows whether a client reuses its connections.
func (s *Server) Connections() int { return int(s.conns.Load()) }

// Served is how many requests the server has received.
func (s *Server) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Push queues more replies.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Handle sets the function that answers once the queued replies are used
// up. Without one, such a request gets a 400 naming the problem.
func (s *Server) Handle(f func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handle = f
}

// RequireKey makes the server answer 401 unless the request carries
// "Authorization: Bearer key".
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiKey = key
}

// Requests returns the requests received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Problems lists the protocol violations seen so far.
func (s *Server) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

// TakeProblems returns the protocol violations seen so far and forgets
// them, for tests that send invalid requests on purpose.
func (s *Server) TakeProblems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.problems
	s.problems = nil
	return out
}

// Close stops the server (NewServer also does it at cleanup).
func (s *Server) Close() { s.srv.Close() }

// Request is one request as the server received it.
type Request struct {
	// N counts requests from 0.
	N int
	// Time is when the request arrived.
	Time time.Time
	// Header is the request's HTTP header.
	Header http.Header
	// Body is the raw JSON body.
	Body []byte

	Model             string
	Stream            bool
	IncludeUsage      bool  // stream_options.include_usage
	ParallelToolCalls *bool // parallel_tool_calls, nil when absent
	Messages          []Message
	Tools             []Tool
}

// Message is one chat message of a request.
type Message struct {
	Role string
	// Content is the text content (text parts joined); empty for null.
	Content string
	// ContentNull is true when content was null or absent.
	ContentNull bool
	// Parts are the content's parts, in order, when it was an array
	// (nil when it was a string).
	Parts      []Part
	ToolCalls  []ToolCall
	ToolCallID string
}

// Part is one part of a message's content array, checked as OpenAI checks
// it: a text part, or in a user message only, an image_url, a file (a PDF
// as a data URL, with its filename) or input_audio (WAV or MP3).
type Part struct {
	// Type is "text", "image_url", "file" or "input_audio".
	Type string
	// Text is a text part's text.
	Text string
	// URL is an image_url part's url as sent: a data: URL or an https URL.
	URL string
	// Filename is a file part's.
	Filename string
	// MimeType and Data are what a data: URL (an image's or a file's
	// file_data) carries, decoded; Data is also input_audio's bytes.
	MimeType string
	Data     []byte
	// Format is input_audio's: "wav" or "mp3".
	Format string
}

// Tool is one offered function tool.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ToolCall is a function call, in a reply or in a request's history.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text, as on the wire
}

// Usage is the token count a reply reports.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Reply is one scripted answer.
type Reply struct {
	// Text is the assistant's text.
	Text string
	// ToolCalls are the calls the assistant makes, in order.
	ToolCalls []ToolCall
	// FinishReason defaults to "tool_calls" when there are calls and to
	// "stop" otherwise.
	FinishReason string
	// Usage, when set, is reported (in a stream, only if the request
	// asked for it with stream_options.include_usage).
	Usage *Usage

	// Split cuts the text and every call's arguments into pieces of at
	// most Split bytes, one chunk each (0: one piece).
	Split int
	// LateIDs sends each call's id with its last argument piece instead
	// of its first chunk.
	LateIDs bool
	// Packed puts the calls side by side: the first chunk opens every
	// call, and chunk k carries piece k of every call's arguments.
	Packed bool
	// NoDone leaves out the final "data: [DONE]".
	NoDone bool
	// StopAfter, when > 0, ends the stream after that many chunks, as a
	// dropped connection would.
	StopAfter int

	// Status, when not 0 or 200, makes this an error answer with an
	// OpenAI-style error body carrying Error (or with Body, when set).
	Status int
	Error  string
	// Header is added to the response (e.g. Retry-After).
	Header http.Header

	// Body, when set, is sent verbatim as a JSON answer (also to a
	// streaming request when Chunks is unset, as a server that ignores
	// "stream" would).
	Body string
	// Chunks, when set, are sent verbatim as the data of a streaming
	// answer's events; nothing is added, not even [DONE].
	Chunks []string

	// Delay is waited before answering (cut short if the client goes
	// away), to test timeouts.
	Delay time.Duration
}

// Text is a reply with text.
func Text(text string) Reply { return Reply{Text: text} }

// Calls is a reply calling tools (in one step, in this order).
func Calls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// Call is one function call.
func Call(id, name, arguments string) ToolCall {
	return ToolCall{ID: id, Name: name, Arguments: arguments}
}

// Status is an error answer with an OpenAI-style body.
func Status(code int, msg string) Reply { return Reply{Status: code, Error: msg} }

// RateLimited is a 429 asking the client to wait retryAfter (the
// Retry-After header's value, e.g. "1"; empty for none).
func RateLimited(retryAfter string) Reply {
	r := Reply{Status: http.StatusTooManyRequests, Error: "Rate limit reached for requests"}
	if retryAfter != "" {
		r.Header = http.Header{"Retry-After": {retryAfter}}
	}
	return r
}

// ServerError is a 500.
func ServerError() Reply {
	return Reply{Status: http.StatusInternalServerError, Error: "The server had an error while processing your request."}
}

// Malformed is an answer that breaks off into invalid JSON: a streaming
// request gets one good text chunk, then a chunk that is not JSON, then
// [DONE]; a plain request gets a truncated body.
func Malformed() Reply {
	return Reply{
		Body: `{"id":"chatcmpl-bad","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hel`,
		Chunks: []string{
			`{"id":"chatcmpl-bad","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}`,
			`{"id":"chatcmpl-bad","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"`,
			`[DONE]`,
		},
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := readAll(r)
	s.mu.Lock()
	req := Request{N: s.n, Time: time.Now(), Header: r.Header.Clone(), Body: body}
	s.n++
	problem := ""
	switch {
	case r.Method != http.MethodPost || r.URL.Path != Path:
		problem = fmt.Sprintf("%s %s: want POST %s", r.Method, r.URL.Path, Path)
	default:
		problem = decode(body, &req)
	}
	if !s.forget {
		s.requests = append(s.requests, req)
	}
	if problem != "" {
		s.problems = append(s.problems, fmt.Sprintf("request %d: %s", req.N, problem))
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "invalid_request_error", problem)
		return
	}
	if s.apiKey != "" && r.Header.Get("Authorization") != "Bearer "+s.apiKey {
		s.mu.Unlock()
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "Incorrect API key provided.")
		return
	}
	var reply Reply
	queued := len(s.replies) > 0
	if queued {
		reply, s.replies = s.replies[0], s.replies[1:]
	}
	handle := s.handle
	s.mu.Unlock()

	switch {
	case queued:
	case handle != nil:
		reply = handle(req)
	default:
		msg := fmt.Sprintf("no reply scripted for request %d", req.N)
		s.mu.Lock()
		s.problems = append(s.problems, msg)
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "invalid_request_error", "openaitest: "+msg)
		return
	}
	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	for k, vs := range reply.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	switch {
	case reply.Status != 0 && reply.Status != http.StatusOK && reply.Body != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		_, _ = w.Write([]byte(reply.Body))
	case reply.Status != 0 && reply.Status != http.StatusOK:
		typ := "invalid_request_error"
		if reply.Status == http.StatusTooManyRequests {
			typ = "rate_limit_error"
		} else if reply.Status >= 500 {
			typ = "server_error"
		}
		writeError(w, reply.Status, typ, reply.Error)
	case req.Stream && (reply.Chunks != nil || reply.Body == ""):
		s.writeStream(w, req, reply)
	case reply.Body != "":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(reply.Body))
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(completion(req, reply))
	}
}

func readAll(r *http.Request) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r.Body)
	return b.Bytes(), err
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
}

func finishReason(r Reply) string {
	switch {
	case r.FinishReason != "":
		return r.FinishReason
	case len(r.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

type wireCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string  `json:"name,omitempty"`
		Arguments *string `json:"arguments,omitempty"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func usageOf(u *Usage) *wireUsage {
	if u == nil {
		return nil
	}
	return &wireUsage{u.PromptTokens, u.CompletionTokens, u.PromptTokens + u.CompletionTokens}
}

func completion(req Request, r Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if r.Text != "" || len(r.ToolCalls) == 0 {
		msg["content"] = r.Text
	}
	if len(r.ToolCalls) > 0 {
		calls := make([]wireCall, len(r.ToolCalls))
		for i, c := range r.ToolCalls {
			args := c.Arguments
			calls[i].ID, calls[i].Type, calls[i].Function.Name, calls[i].Function.Arguments = c.ID, "function", c.Name, &args
		}
		msg["tool_calls"] = calls
	}
	out := map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", req.N), "object": "chat.completion", "created": 1700000000, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finishReason(r)}},
	}
	if u := usageOf(r.Usage); u != nil {
		out["usage"] = u
	}
	return out
}

// writeStream sends r as SSE chunks shaped the way OpenAI shapes them.
func (s *Server) writeStream(w http.ResponseWriter, req Request, r Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	sent := 0
	send := func(data string) bool {
		if r.StopAfter > 0 && sent >= r.StopAfter {
			return false
		}
		sent++
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	if r.Chunks != nil {
		for _, c := range r.Chunks {
			if !send(c) {
				return
			}
		}
		return
	}
	for _, c := range chunks(req, r) {
		raw, _ := json.Marshal(c)
		if !send(string(raw)) {
			return
		}
	}
	if !r.NoDone {
		send("[DONE]")
	}
}

func chunks(req Request, r Reply) []map[string]any {
	base := func(delta map[string]any, finish any) map[string]any {
		c := map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", req.N), "object": "chat.completion.chunk", "created": 1700000000, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
		if req.IncludeUsage {
			c["usage"] = nil
		}
		return c
	}
	var out []map[string]any
	first := map[string]any{"role": "assistant", "content": nil}
	if r.Text != "" {
		first["content"] = ""
	}
	out = append(out, base(first, nil))
	for _, p := range pieces(r.Text, r.Split) {
		out = append(out, base(map[string]any{"content": p}, nil))
	}

	// Every call: an opening delta (id, type, name, empty arguments),
	// then its argument pieces.
	type plan struct {
		open   wireCall
		pieces []wireCall
	}
	plans := make([]plan, len(r.ToolCalls))
	for i, c := range r.ToolCalls {
		var open wireCall
		open.Index, open.Type, open.Function.Name = &i, "function", c.Name
		empty := ""
		open.Function.Arguments = &empty
		if !r.LateIDs {
			open.ID = c.ID
		}
		ps := pieces(c.Arguments, r.Split)
		if len(ps) == 0 {
			ps = []string{""}
		}
		for _, p := range ps {
			var d wireCall
			d.Index = &i
			d.Function.Arguments = &p
			plans[i].pieces = append(plans[i].pieces, d)
		}
		if r.LateIDs {
			plans[i].pieces[len(ps)-1].ID = c.ID
		}
		plans[i].open = open
	}
	delta := func(calls ...wireCall) map[string]any { return map[string]any{"tool_calls": calls} }
	if r.Packed {
		if len(plans) > 0 {
			var opens []wireCall
			for _, p := range plans {
				opens = append(opens, p.open)
			}
			out = append(out, base(delta(opens...), nil))
		}
		for k := 0; ; k++ {
			var row []wireCall
			for _, p := range plans {
				if k < len(p.pieces) {
					row = append(row, p.pieces[k])
				}
			}
			if len(row) == 0 {
				break
			}
			out = append(out, base(delta(row...), nil))
		}
	} else {
		for _, p := range plans {
			out = append(out, base(delta(p.open), nil))
			for _, d := range p.pieces {
				out = append(out, base(delta(d), nil))
			}
		}
	}
	out = append(out, base(map[string]any{}, finishReason(r)))
	if u := usageOf(r.Usage); u != nil && req.IncludeUsage {
		out = append(out, map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", req.N), "object": "chat.completion.chunk", "created": 1700000000, "model": req.Model,
			"choices": []any{}, "usage": u,
		})
	}
	return out
}

// pieces cuts s into pieces of at most n bytes, never inside a UTF-8
// sequence (n <= 0: one piece). An empty s has no pieces.
func pieces(s string, n int) []string {
	if s == "" {
		return nil
	}
	if n <= 0 {
		return []string{s}
	}
	var out []string
	for len(s) > 0 {
		end := min(n, len(s))
		for end < len(s) && end > 0 && !startsRune(s[end]) {
			end--
		}
		if end == 0 {
			end = min(n, len(s))
			for end < len(s) && !startsRune(s[end]) {
				end++
			}
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

func startsRune(b byte) bool { return b&0xC0 != 0x80 }

// The request as it is on the wire.
type wireRequest struct {
	Model         *string           `json:"model"`
	Messages      []json.RawMessage `json:"messages"`
	Tools         []json.RawMessage `json:"tools"`
	Stream        *bool             `json:"stream"`
	StreamOptions *struct {
		IncludeUsage *bool `json:"include_usage"`
	} `json:"stream_options"`
	ParallelToolCalls *bool `json:"parallel_tool_calls"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID *string         `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// decode fills req from body and returns the first protocol problem.
func decode(body []byte, req *Request) string {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Sprintf("the body is not a JSON request: %v", err)
	}
	if w.Model == nil || *w.Model == "" {
		return "model: missing"
	}
	req.Model = *w.Model
	req.Stream = w.Stream != nil && *w.Stream
	req.ParallelToolCalls = w.ParallelToolCalls
	if w.StreamOptions != nil {
		if !req.Stream {
			return "stream_options: only allowed when stream is true"
		}
		req.IncludeUsage = w.StreamOptions.IncludeUsage != nil && *w.StreamOptions.IncludeUsage
	}
	for i, raw := range w.Tools {
		var t struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return fmt.Sprintf("tools[%d]: %v", i, err)
		}
		if t.Type != "function" || t.Function.Name == "" {
			return fmt.Sprintf("tools[%d]: want a function tool with a name", i)
		}
		if p := bytes.TrimSpace(t.Function.Parameters); len(p) > 0 && p[0] != '{' {
			return fmt.Sprintf("tools[%d].function.parameters: want an object", i)
		}
		req.Tools = append(req.Tools, Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	if req.ParallelToolCalls != nil && len(req.Tools) == 0 {
		return "parallel_tool_calls: only allowed when tools are specified"
	}
	if len(w.Messages) == 0 {
		return "messages: missing"
	}
	for i, raw := range w.Messages {
		var wm wireMessage
		if err := json.Unmarshal(raw, &wm); err != nil {
			return fmt.Sprintf("messages[%d]: %v", i, err)
		}
		m := Message{Role: wm.Role}
		text, parts, null, err := readContent(wm.Content)
		if err != nil {
			return fmt.Sprintf("messages[%d].content%v", i, err)
		}
		m.Content, m.Parts, m.ContentNull = text, parts, null
		for j, p := range parts {
			if p.Type != "text" && wm.Role != "user" {
				return fmt.Sprintf("messages[%d].content[%d]: a %s message takes text parts only, not %s (Chat Completions takes media in user messages)", i, j, wm.Role, p.Type)
			}
		}
		switch wm.Role {
		case "system", "developer", "user":
			if null {
				return fmt.Sprintf("messages[%d]: a %s message needs content", i, wm.Role)
			}
		case "assistant":
			if null && len(wm.ToolCalls) == 0 {
				return fmt.Sprintf("messages[%d]: an assistant message needs content or tool_calls", i)
			}
			for j, c := range wm.ToolCalls {
				if c.ID == "" || c.Type != "function" || c.Function.Name == "" {
					return fmt.Sprintf("messages[%d].tool_calls[%d]: want an id, type \"function\" and a function name", i, j)
				}
				var args string
				if err := json.Unmarshal(c.Function.Arguments, &args); err != nil {
					return fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments: want a string of JSON", i, j)
				}
				m.ToolCalls = append(m.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
			}
		case "tool":
			if wm.ToolCallID == nil || *wm.ToolCallID == "" {
				return fmt.Sprintf("messages[%d]: a tool message needs tool_call_id", i)
			}
			if null {
				return fmt.Sprintf("messages[%d]: a tool message needs content", i)
			}
			m.ToolCallID = *wm.ToolCallID
		default:
			return fmt.Sprintf("messages[%d].role: %q is not a chat role", i, wm.Role)
		}
		req.Messages = append(req.Messages, m)
	}
	return checkHistory(req.Messages)
}

// checkHistory: every assistant message with tool_calls is followed by
// exactly one tool message per call, in call order, and tool messages
// appear nowhere else.
func checkHistory(msgs []Message) string {
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == "tool" {
			return fmt.Sprintf("messages[%d]: tool message for %q does not follow an assistant message with tool_calls", i, m.ToolCallID)
		}
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		for j, c := range m.ToolCalls {
			k := i + 1 + j
			if k >= len(msgs) || msgs[k].Role != "tool" {
				return fmt.Sprintf("messages[%d]: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; %q (call %d) has none", i, c.ID, j)
			}
			if msgs[k].ToolCallID != c.ID {
				return fmt.Sprintf("messages[%d]: tool message answers %q where call %d, %q, was expected (results must follow the calls in call order)", k, msgs[k].ToolCallID, j, c.ID)
			}
		}
		i += len(m.ToolCalls)
	}
	return ""
}

// readContent reads a message's content: a string, an array of parts, or
// null. Its error starts with the path below content (": ..." or
// "[2].image_url.url: ...").
func readContent(raw json.RawMessage) (text string, parts []Part, null bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, true, nil
	}
	if raw[0] == '"' {
		if err = json.Unmarshal(raw, &text); err != nil {
			return "", nil, false, fmt.Errorf(": %v", err)
		}
		return text, nil, false, nil
	}
	var wire []struct {
		Type     string  `json:"type"`
		Text     *string `json:"text"`
		ImageURL *struct {
			URL    string `json:"url"`
			Detail string `json:"detail"`
		} `json:"image_url"`
		File *struct {
			Filename string `json:"filename"`
			FileData string `json:"file_data"`
			FileID   string `json:"file_id"`
		} `json:"file"`
		InputAudio *struct {
			Data   string `json:"data"`
			Format string `json:"format"`
		} `json:"input_audio"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		return "", nil, false, fmt.Errorf(": want a string or an array of parts")
	}
	if len(wire) == 0 {
		return "", nil, false, fmt.Errorf(": an empty array of parts")
	}
	var b strings.Builder
	for i, w := range wire {
		p := Part{Type: w.Type}
		switch w.Type {
		case "text":
			if w.Text == nil {
				return "", nil, false, fmt.Errorf("[%d].text: missing", i)
			}
			p.Text = *w.Text
			b.WriteString(p.Text)
		case "image_url":
			if w.ImageURL == nil || w.ImageURL.URL == "" {
				return "", nil, false, fmt.Errorf("[%d].image_url.url: missing", i)
			}
			p.URL = w.ImageURL.URL
			if d := w.ImageURL.Detail; d != "" && d != "auto" && d != "low" && d != "high" {
				return "", nil, false, fmt.Errorf("[%d].image_url.detail: %q is not auto, low or high", i, d)
			}
			if !strings.HasPrefix(p.URL, "https://") && !strings.HasPrefix(p.URL, "http://") {
				p.MimeType, p.Data, err = dataURL(p.URL)
				if err != nil {
					return "", nil, false, fmt.Errorf("[%d].image_url.url: %v", i, err)
				}
				switch p.MimeType {
				case "image/png", "image/jpeg", "image/gif", "image/webp":
				default:
					return "", nil, false, fmt.Errorf("[%d].image_url.url: %q is not a supported image type (png, jpeg, gif, webp)", i, p.MimeType)
				}
			}
		case "file":
			if w.File == nil || w.File.FileData == "" && w.File.FileID == "" {
				return "", nil, false, fmt.Errorf("[%d].file: want file_data or file_id", i)
			}
			if w.File.FileData != "" {
				if w.File.Filename == "" {
					return "", nil, false, fmt.Errorf("[%d].file.filename: missing (required with file_data)", i)
				}
				p.Filename = w.File.Filename
				p.MimeType, p.Data, err = dataURL(w.File.FileData)
				if err != nil {
					return "", nil, false, fmt.Errorf("[%d].file.file_data: %v", i, err)
				}
				if p.MimeType != "application/pdf" {
					return "", nil, false, fmt.Errorf("[%d].file.file_data: %q: Chat Completions takes PDF files only", i, p.MimeType)
				}
			}
		case "input_audio":
			if w.InputAudio == nil || w.InputAudio.Data == "" {
				return "", nil, false, fmt.Errorf("[%d].input_audio.data: missing", i)
			}
			if f := w.InputAudio.Format; f != "wav" && f != "mp3" {
				return "", nil, false, fmt.Errorf("[%d].input_audio.format: %q is not wav or mp3", i, f)
			}
			p.Format = w.InputAudio.Format
			if p.Data, err = base64.StdEncoding.DecodeString(w.InputAudio.Data); err != nil {
				return "", nil, false, fmt.Errorf("[%d].input_audio.data: not base64 (and not a data: URL): %v", i, err)
			}
		default:
			return "", nil, false, fmt.Errorf("[%d].type: %q is not a content part type", i, w.Type)
		}
		parts = append(parts, p)
	}
	return b.String(), parts, false, nil
}

// dataURL decodes "data:<type>;base64,<data>".
func dataURL(u string) (string, []byte, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", nil, fmt.Errorf("want an http(s) or data: URL")
	}
	mime, data, ok := strings.Cut(rest, ";base64,")
	if !ok || mime == "" {
		return "", nil, fmt.Errorf("want data:<type>;base64,<data>")
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return "", nil, fmt.Errorf("the data is not base64: %v", err)
	}
	return mime, raw, nil
}
