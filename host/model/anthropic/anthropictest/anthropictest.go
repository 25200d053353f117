// Package anthropictest is an Anthropic Messages API server for tests: an
// httptest server that speaks the real wire format (SSE streams of
// message_start, content_block_start/delta/stop, message_delta,
// message_stop, ping and error events, or one JSON message), answers from
// a script, records every request, and checks that each request is one the
// API would accept.
//
//	srv := anthropictest.NewServer(t,
//		anthropictest.ToolUses(anthropictest.Use("toolu_1", "add", `{"a":2,"b":3}`)),
//		anthropictest.Text("5"))
//	m, _ := anthropic.New(anthropic.Config{Model: "test", BaseURL: srv.URL})
//
// Replies are used in order; when they run out, the function given to Handle
// answers. A Reply shapes the stream too: Split cuts text and tool input
// into small deltas, Thinking puts a thinking block first, Ping adds ping
// events, StreamError sends an error event; Status, RateLimited,
// Overloaded and ServerError make error answers; Malformed breaks the
// answer. Requests returns what the server got, decoded, with the time
// each arrived.
//
// Every request is checked as the Messages API checks it, and more strictly
// in two respects: user and assistant turns must alternate (the API merges
// consecutive turns of one role; proxies and older versions refuse them),
// and the tool_result blocks answering an assistant turn's tool_use blocks
// must come first in the next user turn, one per call, in call order. A
// request that fails a check gets a 400 with the reason, and the test fails
// at cleanup. Images and documents are checked as the API checks them (in
// user turns and tool results only, of the types it takes, an image of at
// most 5 MB of base64) and recorded with their bytes decoded.
package anthropictest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
)

// Path is where the server answers, under its root.
const Path = "/v1/messages"

// Server is the test server. Its methods are safe for concurrent use.
type Server struct {
	// URL is the API root to configure as the base URL (without /v1).
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
	s.URL = s.srv.URL
	t.Cleanup(func() {
		s.srv.Close()
		for _, p := range s.Problems() {
			t.Errorf("anthropictest: %s", p)
		}
	})
	return s
}

// New returns a server that is not listening, for use outside a test:
// serve it with an http.Server of your own (with ConnState as its hook to
// count connections), as the anthropictest command does. It keeps no
// requests, so a long load does not grow it: Requests returns none,
// Problems still lists every violation.
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

// Connections is how many connections clients have opened so far.
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

// RequireKey makes the server answer 401 unless the request carries the
// key, as "x-api-key: key" or "Authorization: Bearer key".
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

	Model     string
	MaxTokens int
	Stream    bool
	// System is the top-level system prompt's text blocks (a string
	// system is one block).
	System   []string
	Messages []Message
	Tools    []Tool
}

// Message is one turn of a request.
type Message struct {
	Role string
	// Content is the turn's blocks (a string content is one text block).
	Content []Block
}

// Text joins the turn's text blocks.
func (m Message) Text() string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// Block is one content block of a request.
type Block struct {
	Type string
	// Text is a text block's text.
	Text string
	// ID, Name and Input are a tool_use block's (Input as on the wire).
	ID, Name string
	Input    json.RawMessage
	// ToolUseID, Content and IsError are a tool_result block's; Content is
	// its text (a string, or its text blocks joined), and Parts its
	// content's blocks when it was an array (text, image, document).
	ToolUseID string
	Content   string
	IsError   bool
	Parts     []Block
	// Source is an image or document block's source type ("base64",
	// "url" or, for a document, "text"); MediaType and Data its media
	// type and data as sent (base64, or a text document's text), Bytes
	// the base64 decoded, URL a url source's; Title a document's title.
	Source, MediaType, Data string
	Bytes                   []byte
	URL, Title              string
}

// Tool is one offered tool.
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage
}

// ToolUse is a tool call in a reply.
type ToolUse struct {
	ID, Name string
	Input    string // JSON text, as streamed
}

// Usage is the token count a reply reports.
type Usage struct {
	InputTokens, OutputTokens                      int
	CacheCreationInputTokens, CacheReadInputTokens int
}

// APIError is an error's type and message, in an error answer or event.
type APIError struct {
	Type, Message string
}

// Event is one raw SSE event.
type Event struct {
	Name, Data string
}

// Reply is one scripted answer.
type Reply struct {
	// Text is the assistant's text, in a text block before any tool use.
	Text string
	// ToolUses are the calls the assistant makes, in order.
	ToolUses []ToolUse
	// Thinking, when set, is a thinking block sent first (with a
	// signature), as a model with extended thinking answers.
	Thinking string
	// StopReason defaults to "tool_use" when there are calls and to
	// "end_turn" otherwise.
	StopReason string
	// Usage, when set, is reported (message_start's input counts,
	// message_delta's cumulative counts).
	Usage *Usage

	// Split cuts the text and every call's input into pieces of at most
	// Split bytes, one delta each (0: one piece).
	Split int
	// Ping sends a ping event before every delta.
	Ping bool
	// NoStop leaves out the final message_stop (message_delta still says
	// why the model stopped).
	NoStop bool
	// StopAfter, when > 0, ends the stream after that many events, as a
	// dropped connection would.
	StopAfter int
	// StreamError, when set, is sent as an error event after
	// message_start and ErrorAfter more events, ending the stream.
	StreamError *APIError
	ErrorAfter  int

	// Status, when not 0 or 200, makes this an error answer with an
	// Anthropic error body carrying Error (or with Body, when set).
	Status int
	Error  APIError
	// Header is added to the response (e.g. retry-after).
	Header http.Header

	// Body, when set, is sent verbatim as a JSON answer (also to a
	// streaming request when Events is unset, as a server that ignores
	// "stream" would).
	Body string
	// JSON answers a streaming request with the whole message as one JSON
	// object, as a server that ignores "stream" would.
	JSON bool
	// Events, when set, are sent verbatim as a streaming answer; nothing
	// is added.
	Events []Event

	// Delay is waited before answering (cut short if the client goes
	// away), to test timeouts.
	Delay time.Duration
}

// Text is a reply with text.
func Text(text string) Reply { return Reply{Text: text} }

// ToolUses is a reply calling tools (in one turn, in this order).
func ToolUses(uses ...ToolUse) Reply { return Reply{ToolUses: uses} }

// Use is one tool call.
func Use(id, name, input string) ToolUse { return ToolUse{ID: id, Name: name, Input: input} }

// Status is an error answer with an Anthropic error body of the type the
// status has.
func Status(code int, msg string) Reply {
	return Reply{Status: code, Error: APIError{Type: errorType(code), Message: msg}}
}

// RateLimited is a 429 asking the client to wait retryAfter (the
// retry-after header's value, e.g. "1"; empty for none).
func RateLimited(retryAfter string) Reply {
	r := Status(http.StatusTooManyRequests, "Number of request tokens has exceeded your per-minute rate limit")
	if retryAfter != "" {
		r.Header = http.Header{"Retry-After": {retryAfter}}
	}
	return r
}

// Overloaded is a 529 overloaded_error, what the API answers when its
// servers are busy.
func Overloaded() Reply { return Status(529, "Overloaded") }

// ServerError is a 500 api_error.
func ServerError() Reply { return Status(http.StatusInternalServerError, "Internal server error") }

// Malformed is an answer that breaks off into invalid JSON: a streaming
// request gets message_start, a text block with one good delta, then an
// event whose data is not JSON.
func Malformed() Reply {
	return Reply{Events: []Event{
		{"message_start", `{"type":"message_start","message":{"id":"msg_bad","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"`},
	}}
}

func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	var body bytes.Buffer
	_, _ = body.ReadFrom(r.Body)
	s.mu.Lock()
	req := Request{N: s.n, Time: time.Now(), Header: r.Header.Clone(), Body: body.Bytes()}
	s.n++
	problem := ""
	switch {
	case r.Method != http.MethodPost || r.URL.Path != Path:
		problem = fmt.Sprintf("%s %s: want POST %s", r.Method, r.URL.Path, Path)
	case r.Header.Get("anthropic-version") == "":
		problem = "anthropic-version: header is required"
	case !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"):
		problem = fmt.Sprintf("content-type %q: want application/json", r.Header.Get("Content-Type"))
	default:
		problem = decode(req.Body, &req)
	}
	if !s.forget {
		s.requests = append(s.requests, req)
	}
	if problem != "" {
		s.problems = append(s.problems, fmt.Sprintf("request %d: %s", req.N, problem))
		s.mu.Unlock()
		writeError(w, req.N, http.StatusBadRequest, APIError{"invalid_request_error", problem})
		return
	}
	if s.apiKey != "" && r.Header.Get("X-Api-Key") != s.apiKey && r.Header.Get("Authorization") != "Bearer "+s.apiKey {
		s.mu.Unlock()
		writeError(w, req.N, http.StatusUnauthorized, APIError{"authentication_error", "invalid x-api-key"})
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
		writeError(w, req.N, http.StatusBadRequest, APIError{"invalid_request_error", "anthropictest: " + msg})
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
	w.Header().Set("request-id", fmt.Sprintf("req_test%d", req.N))
	switch {
	case reply.Status != 0 && reply.Status != http.StatusOK && reply.Body != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		_, _ = w.Write([]byte(reply.Body))
	case reply.Status != 0 && reply.Status != http.StatusOK:
		writeError(w, req.N, reply.Status, reply.Error)
	case req.Stream && reply.Events != nil:
		writeEvents(w, reply.Events, reply.StopAfter)
	case req.Stream && reply.Body == "" && !reply.JSON:
		writeEvents(w, events(req, reply), reply.StopAfter)
	case reply.Body != "":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(reply.Body))
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(wholeMessage(req, reply))
	}
}

func writeError(w http.ResponseWriter, n, status int, e APIError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": e.Type, "message": e.Message},
		"request_id": fmt.Sprintf("req_test%d", n)})
}

func stopReason(r Reply) string {
	switch {
	case r.StopReason != "":
		return r.StopReason
	case len(r.ToolUses) > 0:
		return "tool_use"
	}
	return "end_turn"
}

func usageOf(u *Usage, start bool) map[string]any {
	if u == nil {
		u = &Usage{}
	}
	out := map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_creation_input_tokens": u.CacheCreationInputTokens, "cache_read_input_tokens": u.CacheReadInputTokens,
	}
	if start {
		out["output_tokens"] = min(u.OutputTokens, 1) // as the API does: the count so far
		out["service_tier"] = "standard"
	}
	return out
}

// content is the reply's content blocks, whole.
func content(r Reply) []map[string]any {
	var out []map[string]any
	if r.Thinking != "" {
		out = append(out, map[string]any{"type": "thinking", "thinking": r.Thinking, "signature": "sig-test"})
	}
	if r.Text != "" {
		out = append(out, map[string]any{"type": "text", "text": r.Text})
	}
	for _, u := range r.ToolUses {
		in := json.RawMessage(u.Input)
		if !json.Valid(in) {
			in, _ = json.Marshal(u.Input) // a scripted broken input, whole: as a string
		}
		out = append(out, map[string]any{"type": "tool_use", "id": u.ID, "name": u.Name, "input": in})
	}
	return out
}

func wholeMessage(req Request, r Reply) map[string]any {
	return map[string]any{
		"id": fmt.Sprintf("msg_test%d", req.N), "type": "message", "role": "assistant", "model": req.Model,
		"content": content(r), "stop_reason": stopReason(r), "stop_sequence": nil, "usage": usageOf(r.Usage, false),
	}
}

func event(name string, data map[string]any) Event {
	data["type"] = name
	raw, _ := json.Marshal(data)
	return Event{Name: name, Data: string(raw)}
}

// events is r as the API streams it.
func events(req Request, r Reply) []Event {
	var out []Event
	add := func(e Event) { out = append(out, e) }
	add(event("message_start", map[string]any{"message": map[string]any{
		"id": fmt.Sprintf("msg_test%d", req.N), "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usageOf(r.Usage, true)}}))
	delta := func(i int, d map[string]any) {
		if r.Ping {
			add(Event{"ping", `{"type": "ping"}`})
		}
		add(event("content_block_delta", map[string]any{"index": i, "delta": d}))
	}
	i := 0
	if r.Thinking != "" {
		add(event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}}))
		for _, p := range pieces(r.Thinking, r.Split) {
			delta(i, map[string]any{"type": "thinking_delta", "thinking": p})
		}
		delta(i, map[string]any{"type": "signature_delta", "signature": "sig-test"})
		add(event("content_block_stop", map[string]any{"index": i}))
		i++
	}
	if r.Text != "" {
		add(event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}}))
		if i == 0 {
			add(Event{"ping", `{"type": "ping"}`})
		}
		for _, p := range pieces(r.Text, r.Split) {
			delta(i, map[string]any{"type": "text_delta", "text": p})
		}
		add(event("content_block_stop", map[string]any{"index": i}))
		i++
	}
	for _, u := range r.ToolUses {
		add(event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": u.ID, "name": u.Name, "input": map[string]any{}}}))
		delta(i, map[string]any{"type": "input_json_delta", "partial_json": ""})
		for _, p := range pieces(u.Input, r.Split) {
			delta(i, map[string]any{"type": "input_json_delta", "partial_json": p})
		}
		add(event("content_block_stop", map[string]any{"index": i}))
		i++
	}
	add(event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stopReason(r), "stop_sequence": nil}, "usage": usageOf(r.Usage, false)}))
	if !r.NoStop {
		add(event("message_stop", map[string]any{}))
	}
	if r.StreamError != nil {
		// The error ends the stream where it comes.
		raw, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": r.StreamError.Type, "message": r.StreamError.Message}})
		out = append(out[:min(r.ErrorAfter+1, len(out)):min(r.ErrorAfter+1, len(out))], Event{"error", string(raw)})
	}
	return out
}

func writeEvents(w http.ResponseWriter, evs []Event, stopAfter int) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for n, e := range evs {
		if stopAfter > 0 && n >= stopAfter {
			return
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.Name, e.Data); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
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
		for end < len(s) && end > 0 && s[end]&0xC0 == 0x80 {
			end--
		}
		if end == 0 {
			end = min(n, len(s))
			for end < len(s) && s[end]&0xC0 == 0x80 {
				end++
			}
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// requestKeys are the top-level keys the Messages API takes; any other is
// refused, as the API refuses extra inputs. (temperature, top_p and top_k
// are refused by the API version the SDK speaks.)
var requestKeys = map[string]bool{
	"model": true, "max_tokens": true, "messages": true, "system": true, "tools": true, "tool_choice": true,
	"stream": true, "stop_sequences": true, "metadata": true, "thinking": true, "service_tier": true,
	"container": true, "inference_geo": true, "output_config": true, "cache_control": true, "speed": true, "diagnostics": true,
}

var (
	toolIDPattern   = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)
)

type wireBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   *bool           `json:"is_error"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
	Title *string `json:"title"`
}

func blank(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) }) < 0
}

// decode fills req from body and returns the first protocol problem.
func decode(body []byte, req *Request) string {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return fmt.Sprintf("the body is not a JSON object: %v", err)
	}
	for k := range top {
		if !requestKeys[k] {
			return fmt.Sprintf("%s: Extra inputs are not permitted", k)
		}
	}
	if json.Unmarshal(top["model"], &req.Model) != nil || req.Model == "" {
		return "model: Field required (a non-empty string)"
	}
	if json.Unmarshal(top["max_tokens"], &req.MaxTokens) != nil || req.MaxTokens < 1 {
		return "max_tokens: Field required (an integer of at least 1)"
	}
	if raw, ok := top["stream"]; ok && json.Unmarshal(raw, &req.Stream) != nil {
		return "stream: want a boolean"
	}
	if raw, ok := top["system"]; ok {
		var s string
		var blocks []wireBlock
		switch {
		case json.Unmarshal(raw, &s) == nil:
			req.System = []string{s}
		case json.Unmarshal(raw, &blocks) == nil:
			for i, b := range blocks {
				if b.Type != "text" || b.Text == nil {
					return fmt.Sprintf("system[%d]: want a text block", i)
				}
				if blank(*b.Text) {
					return fmt.Sprintf("system[%d].text: text content blocks must contain non-whitespace text", i)
				}
				req.System = append(req.System, *b.Text)
			}
		default:
			return "system: want a string or an array of text blocks"
		}
	}
	if raw, ok := top["tools"]; ok {
		var tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal(raw, &tools); err != nil {
			return fmt.Sprintf("tools: %v", err)
		}
		seen := map[string]bool{}
		for i, t := range tools {
			if !toolNamePattern.MatchString(t.Name) {
				return fmt.Sprintf("tools.%d.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'", i)
			}
			if seen[t.Name] {
				return fmt.Sprintf("tools: Tool names must be unique (%q)", t.Name)
			}
			seen[t.Name] = true
			var schema struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(t.InputSchema, &schema) != nil || schema.Type != "object" {
				return fmt.Sprintf("tools.%d.input_schema: want a JSON Schema object with \"type\": \"object\"", i)
			}
			req.Tools = append(req.Tools, Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
		}
	}
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(top["messages"], &msgs); err != nil || len(msgs) == 0 {
		return "messages: Field required (a non-empty array)"
	}
	for i, wm := range msgs {
		m := Message{Role: wm.Role}
		if wm.Role != "user" && wm.Role != "assistant" {
			return fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		var s string
		var blocks []wireBlock
		switch {
		case json.Unmarshal(wm.Content, &s) == nil:
			if blank(s) {
				return fmt.Sprintf("messages.%d.content: text content blocks must contain non-whitespace text", i)
			}
			m.Content = []Block{{Type: "text", Text: s}}
		case json.Unmarshal(wm.Content, &blocks) == nil:
			if len(blocks) == 0 {
				return fmt.Sprintf("messages.%d: all messages must have non-empty content", i)
			}
			for j, b := range blocks {
				blk, p := block(wm.Role, b)
				if p != "" {
					return fmt.Sprintf("messages.%d.content.%d: %s", i, j, p)
				}
				m.Content = append(m.Content, blk)
			}
		default:
			return fmt.Sprintf("messages.%d.content: want a string or an array of content blocks", i)
		}
		req.Messages = append(req.Messages, m)
	}
	return checkTurns(req.Messages)
}

// block reads one content block of a turn of role.
func block(role string, b wireBlock) (Block, string) {
	out := Block{Type: b.Type}
	switch b.Type {
	case "text":
		if b.Text == nil || blank(*b.Text) {
			return out, "text content blocks must contain non-whitespace text"
		}
		out.Text = *b.Text
	case "tool_use":
		if role != "assistant" {
			return out, "tool_use blocks can only be in assistant messages"
		}
		if !toolIDPattern.MatchString(b.ID) {
			return out, fmt.Sprintf("tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$', got %q", b.ID)
		}
		if b.Name == "" || !bytes.HasPrefix(bytes.TrimSpace(b.Input), []byte("{")) || !json.Valid(b.Input) {
			return out, "tool_use: want a name and an input object"
		}
		out.ID, out.Name, out.Input = b.ID, b.Name, b.Input
	case "tool_result":
		if role != "user" {
			return out, "tool_result blocks can only be in user messages"
		}
		if !toolIDPattern.MatchString(b.ToolUseID) {
			return out, fmt.Sprintf("tool_result.tool_use_id: String should match pattern '^[a-zA-Z0-9_-]+$', got %q", b.ToolUseID)
		}
		out.ToolUseID = b.ToolUseID
		out.IsError = b.IsError != nil && *b.IsError
		if len(b.Content) > 0 && string(b.Content) != "null" {
			var s string
			var parts []wireBlock
			switch {
			case json.Unmarshal(b.Content, &s) == nil:
				out.Content = s
			case json.Unmarshal(b.Content, &parts) == nil:
				for k, p := range parts {
					if p.Type != "text" && p.Type != "image" && p.Type != "document" {
						return out, fmt.Sprintf("tool_result.content.%d.type: a tool result holds text, image and document blocks here, not %q", k, p.Type)
					}
					part, problem := block(role, p)
					if problem != "" {
						return out, fmt.Sprintf("tool_result.content.%d: %s", k, problem)
					}
					out.Parts = append(out.Parts, part)
					out.Content += part.Text
				}
			default:
				return out, "tool_result.content: want a string or an array of content blocks"
			}
		}
	case "image", "document":
		if role != "user" {
			return out, b.Type + " blocks can only be in user messages"
		}
		if problem := source(b, &out); problem != "" {
			return out, problem
		}
	default:
		return out, fmt.Sprintf("unknown content block type %q", b.Type)
	}
	return out, ""
}

// maxImageBase64 is the API's bound on an image's base64 data.
const maxImageBase64 = 5 << 20

// source reads an image or document block's source as the API checks it:
// an image of a type it takes, in base64 (at most 5 MB of it) or by url;
// a document as a base64 PDF, a url, or plain text.
func source(b wireBlock, out *Block) string {
	src := b.Source
	if src == nil {
		return b.Type + ".source: Field required"
	}
	out.Source, out.MediaType, out.Data, out.URL = src.Type, src.MediaType, src.Data, src.URL
	if b.Title != nil {
		if b.Type != "document" {
			return b.Type + ".title: Extra inputs are not permitted"
		}
		out.Title = *b.Title
	}
	switch src.Type {
	case "url":
		if !strings.HasPrefix(src.URL, "https://") && !strings.HasPrefix(src.URL, "http://") {
			return b.Type + ".source.url: want an http(s) URL"
		}
		return ""
	case "text":
		if b.Type != "document" || src.MediaType != "text/plain" || blank(src.Data) {
			return b.Type + ".source: a text source is a document's, with media_type text/plain and non-blank data"
		}
		return ""
	case "base64":
	default:
		return fmt.Sprintf("%s.source.type: %q is not base64, url or text", b.Type, src.Type)
	}
	switch {
	case b.Type == "image" && src.MediaType != "image/jpeg" && src.MediaType != "image/png" && src.MediaType != "image/gif" && src.MediaType != "image/webp":
		return fmt.Sprintf("image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp', got %q", src.MediaType)
	case b.Type == "document" && src.MediaType != "application/pdf":
		return fmt.Sprintf("document.source.base64.media_type: Input should be 'application/pdf', got %q", src.MediaType)
	case src.Data == "":
		return b.Type + ".source.data: Field required"
	case b.Type == "image" && len(src.Data) > maxImageBase64:
		return fmt.Sprintf("image.source.base64.data: image exceeds 5 MB maximum: %d bytes > %d bytes", len(src.Data), maxImageBase64)
	}
	raw, err := base64.StdEncoding.DecodeString(src.Data)
	if err != nil {
		return fmt.Sprintf("%s.source.base64.data: not valid base64: %v", b.Type, err)
	}
	out.Bytes = raw
	return ""
}

// checkTurns: the first turn is the user's, turns alternate, tool_use ids
// are unique, and each assistant turn's tool_use blocks are answered first
// thing in the next user turn, one tool_result per call, in call order;
// tool_result blocks appear nowhere else.
func checkTurns(msgs []Message) string {
	if msgs[0].Role != "user" {
		return "messages.0.role: the first message must use the \"user\" role"
	}
	ids := map[string]bool{}
	for i, m := range msgs {
		if i > 0 && m.Role == msgs[i-1].Role {
			return fmt.Sprintf("messages.%d: roles must alternate between \"user\" and \"assistant\" (two %s turns in a row)", i, m.Role)
		}
		var uses []Block
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				if ids[b.ID] {
					return fmt.Sprintf("messages.%d: tool_use ids must be unique (%q)", i, b.ID)
				}
				ids[b.ID] = true
				uses = append(uses, b)
			}
		}
		var asked []Block
		if i > 0 && m.Role == "user" {
			for _, b := range msgs[i-1].Content {
				if b.Type == "tool_use" {
					asked = append(asked, b)
				}
			}
		}
		results := 0
		for j, b := range m.Content {
			if b.Type != "tool_result" {
				continue
			}
			if j != results {
				return fmt.Sprintf("messages.%d.content.%d: tool_result blocks must come first in the user message, before any other content", i, j)
			}
			if results >= len(asked) {
				return fmt.Sprintf("messages.%d.content.%d: unexpected tool_use_id found in tool_result blocks: %s. Each tool_result block must have a corresponding tool_use block in the previous message", i, j, b.ToolUseID)
			}
			if b.ToolUseID != asked[results].ID {
				return fmt.Sprintf("messages.%d.content.%d: tool_result answers %q where call %d, %q, was expected (results must follow the calls in call order)", i, j, b.ToolUseID, results, asked[results].ID)
			}
			results++
		}
		if len(uses) > 0 {
			next := i + 1
			if next >= len(msgs) {
				continue // the last turn: the caller prefills, nothing to answer yet
			}
			n := 0
			for _, b := range msgs[next].Content {
				if b.Type == "tool_result" {
					n++
				}
			}
			if n < len(uses) {
				return fmt.Sprintf("messages.%d: tool_use ids were found without tool_result blocks immediately after: %s. Each tool_use block must have a corresponding tool_result block in the next message", i, uses[n].ID)
			}
		}
	}
	return ""
}
