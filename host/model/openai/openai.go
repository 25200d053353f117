// Package openai is the model.ChatModel for any OpenAI-compatible chat
// endpoint: OpenAI itself, Ollama, vLLM, llama.cpp's server, LM Studio and
// the many hosted services that speak the same API. It is built on the
// official SDK (github.com/openai/openai-go/v3) and uses the Chat Completions
// API, the one every compatible server implements.
//
// # What it sends
//
// The thread is mapped to chat messages one to one: system, user and
// assistant messages keep their text; an assistant message's tool_call blocks
// become its tool_calls; every tool_result becomes one "tool" message, in the
// order of the calls it answers (the history is reshaped with
// message.ForModel first, so remote results that arrived on resume sit right
// after their call). A result whose content is a JSON string is sent as that
// text, any other JSON value as compact JSON text, and an error result
// (is_error) is prefixed with "Error: " so the model knows the call failed.
//
// A user message's images, PDFs and sounds are content parts (image_url
// with a data: URL, file with file_data, input_audio); a tool result's
// attachments, which a tool message cannot carry, are named in its text
// and sent in one user message after the step's last tool message. What
// Chat Completions does not take, or what is over its limits, is a text
// stand-in naming the block and why (media.go). The bytes are read through
// the request's BlobReader and kept encoded per thread, so an image is
// read and encoded once (model.Encodings).
//
// The step's tools are offered as function tools with parallel_tool_calls
// on, so the model may call several tools in one step.
//
// # Streaming
//
// A request with OnDelta set is streamed (SSE): text deltas go to OnDelta as
// they arrive, tool-call deltas are assembled by their index (ids and names
// may arrive in any chunk, several calls may share a chunk), and usage is
// asked for with stream_options.include_usage. A request without OnDelta is
// one plain JSON round trip. Either way Generate returns the whole message.
//
// # Failures
//
// Requests are retried on connection errors, 408, 409, 429 and 5xx, by the
// SDK's retry loop: exponential backoff from 0.5s (capped at 8s, with
// jitter), or exactly the wait the server asks for in Retry-After-Ms or
// Retry-After (seconds or an HTTP date) when it is at most two minutes; a
// longer requested wait ends the retries with the server's error. Timeout
// bounds each attempt, including reading the whole stream; an attempt that
// times out is retried like a dropped connection, and the wait between
// attempts is not charged to it. A streamed answer is never retried once it
// has started.
//
// A malformed stream chunk, a stream that ends before the model finished, or
// a finish_reason of "length" in the middle of a tool call is an error that
// says so. Tool-call arguments that are not a JSON object are not an error:
// they are kept, wrapped as {"_invalid_arguments": "<the text the model
// produced>"} (a thread must stay storable as JSON), so the ToolNode checks
// them against the tool's schema and the model gets an error result it can
// correct instead of the run failing.
package openai

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/tenxgraph/tenxgraph/host/memo"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
)

// DefaultBaseURL is OpenAI's own endpoint, used when neither the config's
// base_url nor OPENAI_BASE_URL names another.
const DefaultBaseURL = "https://api.openai.com/v1"

// BaseURLEnv is the environment variable that replaces DefaultBaseURL, as in
// every OpenAI SDK. An explicit base_url in the config wins over it.
const BaseURLEnv = "OPENAI_BASE_URL"

// InvalidArgumentsKey is the key under which tool-call arguments that are
// not a JSON object are kept, as the text the model produced (see
// message.InvalidArgumentsKey: the ToolNode answers such calls with an
// error result).
const InvalidArgumentsKey = message.InvalidArgumentsKey

// Config configures a Model. New reads no environment variables: what
// Config says is what is used.
type Config struct {
	// Model is the model name sent with every request (required).
	Model string
	// BaseURL is the API root, such as "http://127.0.0.1:11434/v1" for
	// Ollama; empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends no Authorization
	// header (what local servers expect).
	APIKey string
	// Timeout bounds each attempt, from sending the request to the end of
	// the answer (the whole stream when streaming); 0 means no limit other
	// than the caller's context.
	Timeout time.Duration
	// MaxRetries is how many times a failed attempt is retried; 0 means
	// none. (The config's model.max_retries defaults to 2, like the SDKs.)
	MaxRetries int
	// HTTPClient, when set, makes the requests (proxies, custom TLS,
	// tests); the default is a client on a clone of http.DefaultTransport.
	HTTPClient *http.Client

	// apiKeyEnv names where the key came from, for error messages.
	apiKeyEnv string
}

// Model is an OpenAI-compatible chat model. It holds no per-call state, so
// one Model serves any number of concurrent runs.
type Model struct {
	name       string
	baseURL    string
	apiKeyEnv  string
	hasKey     bool
	timeout    time.Duration
	maxRetries int
	client     oai.Client
	schemas    schemaCache
	histories  histories
}

var _ model.ChatModel = (*Model)(nil)

// schemaCache keeps the canonical encoding of the tool schemas a Model has
// sent (see model.Schemas).
type schemaCache struct{ model.Schemas }

// histories keeps, per thread, the chat messages a Model last sent,
// encoded, one []byte a thread message (its chat messages comma-separated,
// empty for none), media included: see model.Encodings. A thread with
// media keeps them whatever its length, so that its blobs are read and
// encoded once.
type histories = memo.PerThread[model.Encodings[[]byte]]

// New makes a Model from cfg.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai: a model name is required (model.model, such as \"gpt-4o-mini\" or \"llama3.2\")")
	}
	if cfg.MaxRetries < 0 {
		return nil, fmt.Errorf("openai: max retries is %d; want 0 or more", cfg.MaxRetries)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("openai: timeout is %s; want 0 (none) or more", cfg.Timeout)
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if err := model.CheckBaseURL(base); err != nil {
		return nil, fmt.Errorf("openai: base URL %q: %w", base, err)
	}
	m := &Model{
		name:       cfg.Model,
		baseURL:    strings.TrimRight(base, "/"),
		apiKeyEnv:  cfg.apiKeyEnv,
		hasKey:     cfg.APIKey != "",
		timeout:    cfg.Timeout,
		maxRetries: cfg.MaxRetries,
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	opts := []option.RequestOption{
		option.WithBaseURL(m.baseURL + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(cfg.MaxRetries),
		option.WithMiddleware(m.attempt),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	// The client is made from these options alone: unlike oai.NewClient it
	// reads nothing from the environment, so no stray OPENAI_API_KEY,
	// OPENAI_ADMIN_KEY or OPENAI_ORG_ID reaches a server the config did not
	// mean it for.
	m.client = oai.Client{Options: opts}
	return m, nil
}

// FromConfig makes a Model from the config's model section, reading the
// environment:
//
//   - the base URL is model.base_url when set, else $OPENAI_BASE_URL when
//     set, else DefaultBaseURL (the precedence of OpenAI's SDKs: an explicit
//     setting beats the environment, which beats the default);
//   - the API key is read from the variable model.api_key_env names
//     (default OPENAI_API_KEY). It is required unless the base URL is a
//     local server — loopback, a private or link-local address, localhost,
//     a single-label host name such as a Compose service ("ollama"), or a
//     name under .local, .localhost or .internal — since Ollama, llama.cpp,
//     vLLM and LM Studio need none by default. A local server that wants a
//     key gets it when the variable is set.
func FromConfig(c *model.Config) (*Model, error) {
	if c == nil {
		return nil, errors.New("openai: no model section")
	}
	base := c.BaseURL
	if base == "" {
		if env := strings.TrimSpace(os.Getenv(BaseURLEnv)); env != "" {
			if err := model.CheckBaseURL(env); err != nil {
				return nil, fmt.Errorf("openai: $%s=%q: %w", BaseURLEnv, env, err)
			}
			base = env
		} else {
			base = DefaultBaseURL
		}
	}
	keyEnv := c.APIKeyEnv
	if keyEnv == "" {
		keyEnv = model.DefaultAPIKeyEnv
	}
	key := strings.TrimSpace(os.Getenv(keyEnv))
	if key == "" && !model.IsLocal(base) {
		return nil, fmt.Errorf("openai: no API key for %s: set the environment variable %s (model.api_key_env names the variable; the key itself never goes in the file). "+
			"Local servers (Ollama, llama.cpp, vLLM, LM Studio on localhost or a private network) need none", base, keyEnv)
	}
	return New(Config{
		Model:      c.Model,
		BaseURL:    base,
		APIKey:     key,
		Timeout:    c.Timeout,
		MaxRetries: c.MaxRetries,
		apiKeyEnv:  keyEnv,
	})
}

// String names the model and where it runs, for logs and banners.
func (m *Model) String() string {
	return fmt.Sprintf("openai-compatible model %s at %s", m.name, m.baseURL)
}

// MaxIdleConnsPerHost is how many idle connections the default client keeps
// to the model server (see model.MaxIdleConnsPerHost).
const MaxIdleConnsPerHost = model.MaxIdleConnsPerHost

// defaultHTTPClient is the client of every Model whose Config brings none,
// on model.DefaultTransport: concurrent calls reuse their connections.
func defaultHTTPClient() *http.Client {
	return &http.Client{Transport: model.DefaultTransport()}
}

// protocolError is an answer that does not follow the Chat Completions
// wire format (or breaks off): not retried, reported as is.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return e.msg }

func protocolErrorf(format string, args ...any) error {
	return &protocolError{msg: fmt.Sprintf(format, args...)}
}
