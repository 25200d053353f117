package config

import (
	"regexp"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/decl"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/pluginhost"
	"github.com/tenxgraph/tenxgraph/internal/sandbox"
)

// Defaults for keys the file leaves out.
const (
	// DefaultNode is the ToolNode of the prebuilt "tenxgraph:react" graph,
	// so a provider entry without "node" lands where that graph looks.
	DefaultNode = "tools"
	// DefaultAddr listens on loopback only: exposing the API is a choice
	// the file must make explicitly.
	DefaultAddr = "127.0.0.1:8123"
	// DefaultMaxBodyBytes bounds request bodies (4 MiB).
	DefaultMaxBodyBytes = 4 << 20
	// DefaultMaxRequestMessages bounds the messages one request adds to a
	// thread. A client sends one message a turn (a tool message holds all
	// of a step's results), and a conversation imported whole, or an
	// AG-UI transcript of several hundred turns, stays under it; without
	// it, one 4 MiB body of tiny messages stores some 100,000.
	DefaultMaxRequestMessages = 1000
	// DefaultMaxSteps stops a model that keeps calling tools forever: the
	// one default of model.max_steps, which a ModelNode (package agent)
	// built without a bound uses too.
	DefaultMaxSteps = 25
	// DefaultMaxRetries matches the OpenAI SDKs' default.
	DefaultMaxRetries = 2
	// DefaultAPIKeyEnv is where every OpenAI client looks for the key.
	DefaultAPIKeyEnv = model.DefaultAPIKeyEnv
	// DefaultAnthropicAPIKeyEnv is where Anthropic's clients look for the
	// key.
	DefaultAnthropicAPIKeyEnv = model.DefaultAnthropicAPIKeyEnv
	// DefaultMaxTokens is the anthropic provider's max_tokens when the
	// config sets none (model.DefaultMaxTokens).
	DefaultMaxTokens = model.DefaultMaxTokens
	// DefaultSQLitePath is relative to the config's folder, so state stays
	// with the project rather than with the shell's current directory
	// (checkpoint.DefaultSQLitePath).
	DefaultSQLitePath = checkpoint.DefaultSQLitePath
	// DefaultTimeout, DefaultMaxArgumentBytes and DefaultMaxResultBytes
	// are the call limits of a provider entry that sets none: the plugin
	// host's, which enforces them.
	DefaultTimeout          = pluginhost.DefaultTimeout
	DefaultMaxArgumentBytes = pluginhost.DefaultMaxArgumentBytes
	DefaultMaxResultBytes   = pluginhost.DefaultMaxResultBytes
	// DefaultShutdownGrace is how long a stopping server lets runs finish
	// before cancelling them: longer than a typical model call, short
	// enough that a deploy does not hang.
	DefaultShutdownGrace = 30 * time.Second
)

// MaxCallBytes is the largest max_argument_bytes and max_result_bytes
// (pluginhost.MaxCallBytes).
const MaxCallBytes = pluginhost.MaxCallBytes

// Config is a validated 10xgraph.json.
type Config struct {
	// Dir is the config file's folder (absolute). Relative paths in the
	// file are resolved against it, so the host behaves the same whatever
	// directory it is started from.
	Dir string
	// Agent names the registered graph to serve ("tenxgraph:react", or a
	// code-first program's own "graph.agent:app"); the file configures a
	// graph, it cannot define one.
	Agent string
	// RemoteTools are declared on the server, executed by the client.
	// They are checked here (names, schemas, duplicates) so a broken schema
	// fails at startup, not when a model first calls the tool; whether
	// each Node exists is checked when the graph is built.
	RemoteTools []decl.RemoteTool
	// RemoteToolTimeout is how long a remote call waits for the client's
	// result when its tool has no timeout of its own, per-run client tools
	// included (remote_tool_defaults.timeout; 0:
	// toolnode.DefaultRemoteTimeout, ten minutes).
	RemoteToolTimeout time.Duration
	// Model is nil when the file has no "model": a code-first graph may
	// bring its own.
	Model *Model
	// providers are the provider kinds' values by key (Provider): each
	// kind's package owns its type.
	providers map[string]any
	// Checkpointer is where thread state is kept; always set (sqlite by
	// default), because pausing for remote tools needs somewhere to pause.
	Checkpointer Checkpointer
	// Server is the HTTP API's setup; always set, with safe defaults.
	Server Server
	// Cache bounds the memory of the threads kept decoded between runs.
	Cache Cache
	// SandboxDefaults is provider_defaults' sandbox profile, under every
	// provider entry's own (the entries' Sandbox already include it). The
	// remote bridge, which has no entry, runs with it as it is.
	SandboxDefaults sandbox.Profile
	// Media is what images, files and sounds the host takes in.
	Media Media
}

// Media is the "media" block: which images, files and sounds threads take
// in, how large, and from which hosts a url is fetched. Zero values are
// package media's defaults.
type Media struct {
	// AllowedTypes are the accepted media types, from media.KnownTypes;
	// nil means media.DefaultTypes (PNG, JPEG, GIF, WebP, PDF, WAV, MP3,
	// plain text).
	AllowedTypes []string `json:"allowed_types"`
	// MaxBlobBytes bounds one image, file or sound (0:
	// media.DefaultMaxBlobBytes, 10 MiB). One sent as data must also fit
	// in server.max_body_bytes as base64, a third larger.
	MaxBlobBytes int64 `json:"max_blob_bytes"`
	// MaxRequestBytes bounds the new media of one request, or of one
	// step's tool results (0: media.DefaultMaxRequestBytes, 32 MiB).
	MaxRequestBytes int64 `json:"max_request_bytes"`
	// MaxImagePixels bounds an image's width times height (0:
	// media.DefaultMaxImagePixels, 8000 x 8000).
	MaxImagePixels int64 `json:"max_image_pixels"`
	// FetchAllowHosts are the only hosts a url source is fetched from,
	// in http_fetch's allow_hosts grammar (a CIDR entry also opens its
	// non-public range); nil (fetch.allow_hosts left out) fetches from any
	// public host, an empty list from none. Only https is fetched.
	FetchAllowHosts []string `json:"-"`
	// FetchTimeout bounds one fetch (0: media.DefaultFetchTimeout, 10s).
	FetchTimeout time.Duration `json:"-"`
}

// ProviderSettings are the keys every provider entry (builtin_tools,
// plugins[], mcp_servers.<name>) takes with the same meaning. The top-level
// provider_defaults sets them for every entry that leaves them out; an
// entry's settings hold the result. A zero value means the built-in default.
type ProviderSettings struct {
	// Settings are the call limits, in the plugin host's own type: the
	// host fills in their defaults (Settings.Limits) and enforces them.
	pluginhost.Settings
	// RequireApproval names the tools whose every call waits for a
	// person's approval before it runs (require_approval). Only an entry
	// sets it: tool names belong to one provider.
	RequireApproval Approval
}

// Approval is require_approval: true (All) or a list of the provider's tool
// names (Tools). The names are checked against the provider's tools when it
// starts.
type Approval struct {
	All   bool
	Tools []string
}

// Set reports whether any tool needs approval.
func (a Approval) Set() bool { return a.All || len(a.Tools) > 0 }

// Model configures the chat model: model.Config, which the providers
// read, so that they need nothing of this package.
type Model = model.Config

// DefaultKeepHistory is checkpointer.keep_history when unset: the last
// hundred checkpoints of a thread (a few dozen turns) show how it got where
// it is, and a long thread's store stays about the size of its messages
// rather than growing with every step.
const DefaultKeepHistory = 100

// Checkpointer selects where thread state is stored: checkpoint.Config,
// which the store kinds read, so that they need nothing of this package.
type Checkpointer = checkpoint.Config

// Cache bounds the cache of decoded threads, which saves a run on a thread
// the host just wrote (a resume, the next turn) from reading and decoding it
// again.
type Cache struct {
	// MaxBytes is the cache's budget, an estimate of the memory its
	// threads take (0: checkpoint.DefaultCacheBytes, 256 MiB); the least
	// recently used threads are dropped to stay within it.
	MaxBytes int64 `json:"max_bytes"`
}

// Server configures the HTTP API.
type Server struct {
	// Addr is host:port to listen on (default 127.0.0.1:8123).
	Addr string `json:"addr"`
	// Auth is nil when the API is open, which is only sensible on loopback.
	Auth *Auth `json:"auth"`
	// CORS lets browser pages on other origins call the API.
	CORS CORS `json:"cors"`
	// MaxBodyBytes bounds a request body (default 4 MiB).
	MaxBodyBytes int64 `json:"max_body_bytes"`
	// MaxRequestMessages bounds the messages one request adds to a thread
	// (default DefaultMaxRequestMessages).
	MaxRequestMessages int `json:"max_request_messages"`
	// ShutdownGrace is how long runs in flight may finish when the server
	// stops before they are cancelled (0: DefaultShutdownGrace).
	ShutdownGrace time.Duration `json:"shutdown_grace"`
	// OnDisconnect is what happens to a run whose client goes away before
	// it ends: OnDisconnectCancel (also when empty, the default) or
	// OnDisconnectContinue.
	OnDisconnect string `json:"on_disconnect"`
	// AllowedHosts are Host names served besides the loopback ones on a
	// loopback connection (a name in /etc/hosts, say). A page that rebinds
	// its own DNS name to 127.0.0.1 sends its own name, so only listed
	// names get through. Lower case, without a port.
	AllowedHosts []string `json:"allowed_hosts"`
}

// The values of server.on_disconnect. Cancel is the default: a run lasts
// no longer than the request that started it, so the number of runs is
// bounded by the connections the server accepts. Continue lets a run
// finish (and save its result) after its client left.
const (
	OnDisconnectCancel   = "cancel"
	OnDisconnectContinue = "continue"
)

// Auth requires a bearer token on every API request.
type Auth struct {
	// TokensEnv names environment variables each holding an accepted token;
	// several allow rotating a token without downtime.
	TokensEnv []string `json:"tokens_env"`
}

// CORS lists the browser origins allowed to call the API.
type CORS struct {
	// AllowOrigins are origins such as "http://localhost:5173", or "*".
	AllowOrigins []string `json:"allow_origins"`
}

// NamePattern is the tool name rule: plugin names show up next to
// tool names in listings and errors.
var NamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// SHA256Pattern is a sha256 in hex, as `sha256sum` prints it.
var SHA256Pattern = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

// ShortNamePattern keeps MCP server names and tool-name prefixes short
// and plain: both go before tool names, which models accept only up to 64
// such characters.
var ShortNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,32}$`)

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
