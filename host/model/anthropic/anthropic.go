// Package anthropic is the model.ChatModel for Anthropic's Messages API
// (POST {base_url}/v1/messages): Claude on Anthropic's own endpoint, and the
// proxies and local servers that speak the same API. It uses Anthropic's
// official Go SDK (github.com/anthropics/anthropic-sdk-go/v2) for what an
// HTTP call needs — authentication headers, the API version header, the
// retry loop with its backoff and Retry-After handling, error answers, the
// SSE decoder — and builds the request body and reads the answer's events
// itself, with encoding/json from a few types of its own, as the openai
// provider does: the SDK's reflective encoder cost a tenth of the host's
// CPU per round trip there, and the body of a call on a long thread is
// mostly the encoding of the previous call, kept per thread (history.go).
//
// # What it sends
//
// The thread is rewritten for the model first (message.ForModel: each
// tool-calling assistant message is followed by one result per call, in
// call order). Then:
//
//   - system messages before the first other message become the top-level
//     "system" text blocks; a system message later in the thread is sent as
//     user text (the Messages API has no system turn in most models);
//   - user text becomes text blocks; an assistant message's text and tool
//     calls become text and tool_use blocks, in their order;
//   - a tool message's results become tool_result blocks (tool_use_id,
//     content as text, is_error) in one user turn, in call order;
//   - a user message's images become image blocks with a base64 source
//     (a url source for an image given by https url), a PDF a document
//     block (titled with its file name), a text/plain file a document
//     with a text source; a tool result's attachments go the same way
//     inside its tool_result, before its text. What the API does not take
//     (audio, other file types, an image over 5 MB of base64 or 8000 px)
//     is a text stand-in naming it and why, and a request carries the
//     newest 20 images and 20 MB of media at most (media.go);
//   - consecutive messages of one role are merged into one turn (the API
//     wants user and assistant turns to alternate), tool results first;
//   - blank text (empty or only white space), which the API refuses, is
//     left out, and so is a message left with no blocks;
//   - call ids that are not of letters, digits, '_' and '-' (the only ones
//     the API takes) are replaced by a digest of themselves, the same on
//     the tool_use and on its tool_result.
//
// Each block kind is mapped in one place (appendBlock). The step's tools go
// in "tools" with their JSON Schema as input_schema; max_tokens, which the
// API requires, is Config.MaxTokens (model.max_tokens, default 8192).
//
// # What it reads
//
// A request with OnDelta set is streamed (the API's SSE events:
// message_start, content_block_start/delta/stop, message_delta,
// message_stop, ping, error): text_delta pieces go to OnDelta as they
// arrive, a tool_use block's input is assembled from its input_json_delta
// pieces, usage is taken from message_start and message_delta. A request
// without OnDelta is one plain JSON round trip, unless max_tokens is over
// 21,333 (the SDK's rule: such an answer may outlast an idle connection),
// when it is streamed too. A server that answers a stream with one JSON
// message, or JSON with a stream, is understood. Thinking blocks
// are not shown and not kept. The stop reason decides what the answer is:
// end_turn, tool_use, stop_sequence and pause_turn end a normal answer;
// max_tokens or model_context_window_exceeded in the middle of a tool call
// is an error (its input is cut off), as is a refusal or a stop that
// leaves nothing; after text, they end a truncated answer.
//
// # Failures
//
// Requests are retried on connection errors, 408, 409, 429, 5xx and 529
// (overloaded), by the SDK's retry loop: exponential backoff from 0.5s
// (capped at 8s, with jitter), or exactly the wait the server asks for in
// retry-after-ms or retry-after when it is at most two minutes; a longer
// requested wait ends the retries with the server's error. The server's
// x-should-retry header overrides the status. An error event before the
// answer's first delta (Anthropic's servers send overloaded_error so when
// busy) is retried as its status would be; once the answer has begun, a
// stream is never retried. Timeout bounds each attempt, the whole stream
// included; an attempt that times out is retried like a dropped
// connection.
package anthropic

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	anth "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/tenxgraph/tenxgraph/host/model"
)

// DefaultBaseURL is Anthropic's own API root, used when neither the
// config's base_url nor ANTHROPIC_BASE_URL names another.
const DefaultBaseURL = "https://api.anthropic.com"

// BaseURLEnv is the environment variable that replaces DefaultBaseURL, as
// in Anthropic's SDKs. An explicit base_url in the config wins over it.
const BaseURLEnv = "ANTHROPIC_BASE_URL"

// DefaultMaxTokens is max_tokens when the config sets none: the API
// requires one, and 8192 is an output every current Claude model allows
// while leaving room for a long tool call. (An older model with a smaller
// limit answers 400 naming it; set model.max_tokens then.)
const DefaultMaxTokens = model.DefaultMaxTokens

// Config configures a Model. New reads no environment variables: what
// Config says is what is used.
type Config struct {
	// Model is the model name sent with every request (required).
	Model string
	// BaseURL is the API root, without /v1 (the provider appends
	// /v1/messages); empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent with every request (Authorization: Bearer, as the SDK
	// sends it, and x-api-key, which proxies of the Messages API read);
	// empty sends neither (what local servers expect).
	APIKey string
	// MaxTokens is max_tokens, the bound on one answer's output tokens;
	// 0 means DefaultMaxTokens.
	MaxTokens int
	// Timeout bounds each attempt, from sending the request to the end of
	// the stream; 0 means no limit other than the caller's context.
	Timeout time.Duration
	// MaxRetries is how many times a failed attempt is retried; 0 means
	// none. (The config's model.max_retries defaults to 2, like the SDKs.)
	MaxRetries int
	// HTTPClient, when set, makes the requests (proxies, custom TLS,
	// tests); the default is a client on model.DefaultTransport.
	HTTPClient *http.Client

	// apiKeyEnv names where the key came from, for error messages.
	apiKeyEnv string
}

// Model is a chat model behind the Messages API. It holds no per-call
// state, so one Model serves any number of concurrent runs.
type Model struct {
	name       string
	maxTokens  int
	baseURL    string
	apiKeyEnv  string
	hasKey     bool
	timeout    time.Duration
	maxRetries int
	client     anth.Client
	schemas    model.Schemas
	histories  histories
}

var _ model.ChatModel = (*Model)(nil)

// maxRetryAfter is the longest wait a server may ask for between attempts;
// a longer one ends the retries with the server's error instead of
// holding a run for it.
const maxRetryAfter = 2 * time.Minute

// New makes a Model from cfg.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New(`anthropic: a model name is required (model.model, such as "claude-sonnet-4-5")`)
	}
	if cfg.MaxRetries < 0 {
		return nil, fmt.Errorf("anthropic: max retries is %d; want 0 or more", cfg.MaxRetries)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("anthropic: timeout is %s; want 0 (none) or more", cfg.Timeout)
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: max tokens is %d; want 1 or more (0: %d)", cfg.MaxTokens, DefaultMaxTokens)
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if err := CheckBaseURL(base); err != nil {
		return nil, fmt.Errorf("anthropic: base URL %q: %w", base, err)
	}
	m := &Model{
		name:       cfg.Model,
		maxTokens:  cfg.MaxTokens,
		baseURL:    strings.TrimRight(base, "/"),
		apiKeyEnv:  cfg.apiKeyEnv,
		hasKey:     cfg.APIKey != "",
		timeout:    cfg.Timeout,
		maxRetries: cfg.MaxRetries,
	}
	if m.maxTokens == 0 {
		m.maxTokens = DefaultMaxTokens
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: model.DefaultTransport()}
	}
	// WithoutEnvironmentDefaults: the SDK reads none of ANTHROPIC_API_KEY,
	// ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL, ANTHROPIC_CUSTOM_HEADERS or
	// the profile files under the user's config folder, so no key, header
	// or server reaches a request the config did not mean it for.
	// WithoutOpenTelemetry: the SDK opens no span of its own and sends no
	// trace context; the host traces its model calls itself.
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithoutOpenTelemetry(),
		option.WithBaseURL(m.baseURL + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(cfg.MaxRetries),
		option.WithMiddleware(m.attempt),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey), option.WithHeader("x-api-key", cfg.APIKey))
	}
	m.client = anth.NewClient(opts...)
	return m, nil
}

// CheckBaseURL reports what is wrong with an Anthropic base URL: it must be
// an http or https URL, and the API root, without the /v1 the provider
// appends itself (a base URL ending in /v1 would call /v1/v1/messages).
func CheckBaseURL(s string) error {
	if err := model.CheckBaseURL(s); err != nil {
		return err
	}
	u, _ := url.Parse(s) // parsed above
	if p := strings.TrimRight(u.Path, "/"); p == "/v1" || strings.HasSuffix(p, "/v1") {
		u.Path = strings.TrimSuffix(p, "/v1")
		return fmt.Errorf("the base URL is the API root, without /v1 (the provider appends /v1/messages): use %q", u.String())
	}
	return nil
}

// FromConfig makes a Model from the config's model section, reading the
// environment:
//
//   - the base URL is model.base_url when set, else $ANTHROPIC_BASE_URL
//     when set, else DefaultBaseURL;
//   - the API key is read from the variable model.api_key_env names
//     (default ANTHROPIC_API_KEY). It is required unless the base URL is a
//     local server (model.IsLocal), since local servers that speak the
//     Messages API need none by default. A local server that wants a key
//     gets it when the variable is set.
func FromConfig(c *model.Config) (*Model, error) {
	if c == nil {
		return nil, errors.New("anthropic: no model section")
	}
	base := c.BaseURL
	if base == "" {
		if env := strings.TrimSpace(os.Getenv(BaseURLEnv)); env != "" {
			if err := CheckBaseURL(env); err != nil {
				return nil, fmt.Errorf("anthropic: $%s=%q: %w", BaseURLEnv, env, err)
			}
			base = env
		} else {
			base = DefaultBaseURL
		}
	}
	keyEnv := c.APIKeyEnv
	if keyEnv == "" {
		keyEnv = model.DefaultAnthropicAPIKeyEnv
	}
	key := strings.TrimSpace(os.Getenv(keyEnv))
	if key == "" && !model.IsLocal(base) {
		return nil, fmt.Errorf("anthropic: no API key for %s: set the environment variable %s (model.api_key_env names the variable; the key itself never goes in the file). "+
			"Local servers that speak the Messages API need none", base, keyEnv)
	}
	return New(Config{
		Model:      c.Model,
		BaseURL:    base,
		APIKey:     key,
		MaxTokens:  c.MaxTokens,
		Timeout:    c.Timeout,
		MaxRetries: c.MaxRetries,
		apiKeyEnv:  keyEnv,
	})
}

// String names the model and where it runs, for logs and banners.
func (m *Model) String() string {
	return fmt.Sprintf("anthropic model %s at %s", m.name, m.baseURL)
}

// Generate implements model.ChatModel: it streams when req.OnDelta is set
// (or max_tokens is too large for one plain answer) and makes one plain
// request otherwise.
func (m *Model) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	body, err := m.request(ctx, req)
	if err != nil {
		return model.Response{}, err
	}
	attempts := new(atomic.Int32)
	ctx = context.WithValue(ctx, attemptsKey{}, attempts)
	resp, err := m.call(ctx, body, streams(req, m.maxTokens), req.OnDelta)
	if err != nil {
		return model.Response{}, m.explain(ctx, err, int(attempts.Load()))
	}
	return resp, nil
}

type attemptsKey struct{}

// attempt is the SDK middleware around every HTTP attempt: it counts
// attempts for error messages, sends the body in one write, gives error
// answers the shape the SDK reads, ends the retries when the server asks
// for too long a wait, and applies Timeout to the attempt alone (the
// SDK's own per-attempt timeout also covers the wait before the next
// retry). The timeout lasts until the body is closed, so it bounds a
// whole stream.
func (m *Model) attempt(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	if n, ok := req.Context().Value(attemptsKey{}).(*atomic.Int32); ok {
		n.Add(1)
	}
	// The SDK wraps each attempt's body in a reader net/http cannot tell is
	// in memory, and net/http then writes the headers and the body apart;
	// the body GetBody gives (the same bytes) is one it knows.
	if req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
		if body, err := req.GetBody(); err == nil {
			_ = req.Body.Close()
			req.Body = body
		}
	}
	cancel := context.CancelFunc(func() {})
	if m.timeout > 0 {
		var ctx context.Context
		ctx, cancel = context.WithTimeout(req.Context(), m.timeout)
		req = req.WithContext(ctx)
	}
	res, err := next(req)
	if err != nil || res == nil || res.Body == nil {
		cancel()
		return res, err
	}
	if res.StatusCode < 300 {
		peekStream(res)
	}
	if res.StatusCode >= 400 {
		normaliseError(res)
		if wait, ok := retryAfter(res.Header); ok && wait > maxRetryAfter {
			res.Header.Set("x-should-retry", "false")
		}
		cancel()
		return res, nil
	}
	res.Body = &cancelOnClose{ReadCloser: res.Body, cancel: cancel}
	return res, nil
}

// peekMax bounds what peekStream reads ahead.
const peekMax = 64 << 10

// peekStream reads a streamed answer up to its first content delta. An
// error event before it (Anthropic's servers answer 200 and then send
// overloaded_error as an event when they are busy) means nothing has been
// said, so the answer becomes the error status the event stands for, and
// the SDK's retry loop retries it like any other: one retry mechanism,
// one count of attempts. Whatever was read is handed on unchanged
// otherwise.
func peekStream(res *http.Response) {
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt != "text/event-stream" {
		return
	}
	br := bufio.NewReaderSize(res.Body, 4096)
	var seen bytes.Buffer
	var name string
	var data bytes.Buffer
	for seen.Len() < peekMax {
		line, err := br.ReadSlice('\n')
		seen.Write(line)
		if err != nil {
			break // a long line, the end or a broken stream: the reader will say
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 {
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "event":
				name = string(value)
			case "data":
				data.Write(value)
			}
			continue
		}
		if name == "" && data.Len() > 0 {
			var probe struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(data.Bytes(), &probe)
			name = probe.Type
		}
		switch name {
		case "content_block_delta", "message_delta", "message_stop":
			res.Body = &replayBody{Reader: io.MultiReader(bytes.NewReader(seen.Bytes()), br), Closer: res.Body}
			return
		case "error":
			var ev struct {
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			_ = json.Unmarshal(data.Bytes(), &ev)
			status := map[string]int{"overloaded_error": statusOverloaded, "api_error": http.StatusInternalServerError, "rate_limit_error": http.StatusTooManyRequests}[ev.Error.Type]
			if status == 0 {
				break
			}
			body, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": ev.Error.Type,
				"message": strings.TrimRight(ev.Error.Message, ". ") + " (an error event before the answer began)"}})
			_ = res.Body.Close()
			res.StatusCode, res.Status = status, fmt.Sprintf("%d %s", status, errorType(status))
			res.Header.Set("Content-Type", "application/json")
			res.Body, res.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			return
		}
		name = ""
		data.Reset()
	}
	res.Body = &replayBody{Reader: io.MultiReader(bytes.NewReader(seen.Bytes()), br), Closer: res.Body}
}

// replayBody is a body whose start was read ahead: what was read, then the
// rest.
type replayBody struct {
	io.Reader
	io.Closer
}

// retryAfter is the wait the server asks for, as the SDK reads it:
// retry-after-ms, else retry-after in seconds or as an HTTP date.
func retryAfter(h http.Header) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil {
			return time.Duration(s * float64(time.Second)), true
		}
		if t, err := time.Parse(time.RFC1123, v); err == nil {
			return time.Until(t), true
		}
	}
	return 0, false
}

// normaliseError rewrites an error answer into Anthropic's shape,
// {"type": "error", "error": {"type": ..., "message": ...}}, which is the
// one the SDK reads: proxies and compatible servers also answer
// {"error": "text"}, {"message": ...}, {"detail": ...}, OpenAI's
// {"error": {"message": ...}} or an HTML page, and the message would be
// lost.
func normaliseError(res *http.Response) {
	data, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	_ = res.Body.Close()
	var probe struct {
		Error struct {
			Message *string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &probe) != nil || probe.Error.Message == nil {
		data, _ = json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": errorType(res.StatusCode), "message": errorMessage(data)}})
	}
	res.Body = io.NopCloser(bytes.NewReader(data))
	res.ContentLength = int64(len(data))
}

// errorType is the Anthropic error type of a status, for answers that
// carry none.
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
	case statusOverloaded:
		return "overloaded_error"
	}
	return "api_error"
}

// statusOverloaded is the status Anthropic answers with when its servers
// are overloaded (retried, like a 5xx).
const statusOverloaded = 529

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// explain turns a failed call into an error that says what happened and,
// where it helps, what to change.
func (m *Model) explain(ctx context.Context, err error, attempts int) error {
	if ctx.Err() != nil {
		return fmt.Errorf("anthropic: %w", context.Cause(ctx))
	}
	tries := ""
	if attempts > 1 {
		tries = fmt.Sprintf(" (after %d attempts)", attempts)
	}
	var apiErr *anth.Error
	if errors.As(err, &apiErr) {
		msg := apiMessage(apiErr)
		if h := m.hint(apiErr.StatusCode, msg); h != "" {
			msg = strings.TrimRight(msg, ". ") + h
		}
		status := http.StatusText(apiErr.StatusCode)
		if apiErr.StatusCode == statusOverloaded {
			status = "Overloaded"
		}
		return fmt.Errorf("anthropic: %s answered %d %s%s: %s", m.baseURL, apiErr.StatusCode, status, tries, msg)
	}
	var se *streamError
	if errors.As(err, &se) {
		return fmt.Errorf("anthropic: %s: %w", m.baseURL, err)
	}
	var pe *protocolError
	if errors.As(err, &pe) {
		return fmt.Errorf("anthropic: %s: %w", m.baseURL, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("anthropic: %s did not finish answering within %s (model.timeout)%s: %w", m.baseURL, m.timeout, tries, context.DeadlineExceeded)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("anthropic: cannot reach %s%s: connection refused; is the server running and is model.base_url right? (%w)", m.baseURL, tries, err)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return fmt.Errorf("anthropic: cannot resolve the host of %s%s: %w", m.baseURL, tries, err)
	}
	return fmt.Errorf("anthropic: %s%s: %w", m.baseURL, tries, err)
}

// apiMessage is the server's own words for an error status.
func apiMessage(e *anth.Error) string {
	if msg := strings.TrimSpace(e.Message); msg != "" {
		return msg
	}
	if raw := strings.TrimSpace(e.RawJSON()); raw != "" && raw != "{}" {
		return snippet([]byte(raw))
	}
	return "(no message)"
}

func (m *Model) hint(status int, msg string) string {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		env := m.apiKeyEnv
		if env == "" {
			env = model.DefaultAnthropicAPIKeyEnv
		}
		if !m.hasKey {
			return fmt.Sprintf(". No API key was sent: set %s (model.api_key_env names the variable)", env)
		}
		return fmt.Sprintf(". Check the key in %s", env)
	case http.StatusNotFound:
		return fmt.Sprintf(". Check the model name (%q) and that base_url is the API root, without /v1", m.name)
	case http.StatusBadRequest:
		if strings.Contains(msg, "max_tokens") {
			return fmt.Sprintf(". tenxgraph sent max_tokens %d: set model.max_tokens to what the model allows", m.maxTokens)
		}
		if strings.Contains(msg, "thinking") {
			return ". tenxgraph keeps no thinking blocks in the thread, so a model that must get its thinking back with its tool results cannot run tools here yet: use a model that does not think unless asked"
		}
	case http.StatusRequestEntityTooLarge:
		return ". The thread is larger than the API takes in one request"
	case http.StatusTooManyRequests:
		return ". The API is rate limiting this key; model.max_retries and the server's retry-after decide how long tenxgraph waits"
	case statusOverloaded:
		return ". Anthropic's servers are overloaded; try again later (model.max_retries sets how often tenxgraph retries)"
	}
	return ""
}

// protocolError is an answer that does not follow the Messages API wire
// format (or breaks off): not retried, reported as is.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return e.msg }

func protocolErrorf(format string, args ...any) error {
	return &protocolError{msg: fmt.Sprintf(format, args...)}
}

// streamError is an error event in the middle of a stream: the server's
// error type and message.
type streamError struct {
	typ, msg string
	events   int
}

func (e *streamError) Error() string {
	s := fmt.Sprintf("the server reported an error in the middle of the stream (event %d): %s", e.events, e.msg)
	if e.typ != "" {
		s += " (" + e.typ + ")"
	}
	if e.typ == "overloaded_error" {
		s += "; Anthropic's servers are overloaded, try again later"
	}
	return s
}
