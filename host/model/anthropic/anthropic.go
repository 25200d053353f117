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
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	anth "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/tenxgraph/tenxgraph/host/memo"
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

// histories keeps, per thread, the fragments a Model last sent, so that a
// call on a long thread encodes what the thread gained since the last one
// instead of the whole thread (a thread of 5,000 messages is about a
// megabyte of JSON, sent on every call), and its blobs are read and
// encoded once: see model.Encodings. A thread with media keeps its
// fragments whatever its length. Turns are merged when the body is
// assembled, not here, so a fragment never depends on its neighbours.
type histories = memo.PerThread[model.Encodings[fragment]]

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

// protocolError is an answer that does not follow the Messages API wire
// format (or breaks off): not retried, reported as is.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return e.msg }

func protocolErrorf(format string, args ...any) error {
	return &protocolError{msg: fmt.Sprintf(format, args...)}
}
