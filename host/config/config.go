// Package config reads 10xgraph.json strictly: an unknown key, a duplicate
// key or a value of the wrong type is an error, and every error in the file
// is reported at once with its JSON path ("remote_tools[1].parameters"). A
// config that loads is one the host can start from without guessing; a
// misspelt key that is silently ignored is a setting the user believes in
// and does not have.
//
// Config holds what the file says, with defaults filled in and relative
// paths made absolute. Checks that need more than the file (that a graph
// node exists, that a plugin's binary matches its sha256, that environment
// variables are set) belong to the parts that use the values.
package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/media"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/pluginhost"
	"github.com/tenxgraph/tenxgraph/host/remotetool/declared"
	"github.com/tenxgraph/tenxgraph/internal/hostallow"
	"github.com/tenxgraph/tenxgraph/internal/sandbox"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
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
	// with the project rather than with the shell's current directory.
	DefaultSQLitePath = ".tenxgraph/state.db"
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
	RemoteTools []declared.Config
	// RemoteToolTimeout is how long a remote call waits for the client's
	// result when its tool has no timeout of its own, per-run client tools
	// included (remote_tool_defaults.timeout; 0:
	// toolnode.DefaultRemoteTimeout, ten minutes).
	RemoteToolTimeout time.Duration
	// Model is nil when the file has no "model": a code-first graph may
	// bring its own.
	Model *Model
	// BuiltinTools is nil when the file has no "builtin_tools": no builtin
	// tool runs unless asked for.
	BuiltinTools *BuiltinTools
	// MCPServers are keyed by the name that prefixes their tools.
	MCPServers map[string]MCPServer
	// MCPServerOrder lists MCPServers' keys in file order, so servers start
	// and tools are listed in the order the user wrote them.
	MCPServerOrder []string
	// Plugins are third-party tool providers, in file order.
	Plugins []Plugin
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
	AllowedTypes []string
	// MaxBlobBytes bounds one image, file or sound (0:
	// media.DefaultMaxBlobBytes, 10 MiB). One sent as data must also fit
	// in server.max_body_bytes as base64, a third larger.
	MaxBlobBytes int64
	// MaxRequestBytes bounds the new media of one request, or of one
	// step's tool results (0: media.DefaultMaxRequestBytes, 32 MiB).
	MaxRequestBytes int64
	// MaxImagePixels bounds an image's width times height (0:
	// media.DefaultMaxImagePixels, 8000 x 8000).
	MaxImagePixels int64
	// FetchAllowHosts are the only hosts a url source is fetched from,
	// in http_fetch's allow_hosts grammar (a CIDR entry also opens its
	// non-public range); nil (fetch.allow_hosts left out) fetches from any
	// public host, an empty list from none. Only https is fetched.
	FetchAllowHosts []string
	// FetchTimeout bounds one fetch (0: media.DefaultFetchTimeout, 10s).
	FetchTimeout time.Duration
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

// providerKeys read the keys of provider_defaults, which every provider
// entry takes too. A new shared key is one line here and a field above.
var providerKeys = []struct {
	name string
	read func(f field, s *ProviderSettings)
}{
	{"timeout", func(f field, s *ProviderSettings) { s.Timeout, _ = f.duration() }},
	{"max_argument_bytes", func(f field, s *ProviderSettings) { s.MaxArgumentBytes, _ = f.integer(1, MaxCallBytes) }},
	{"max_result_bytes", func(f field, s *ProviderSettings) { s.MaxResultBytes, _ = f.integer(1, MaxCallBytes) }},
}

// providerDefaultKeys are provider_defaults' keys; providerEntryKeys are
// the shared keys of an entry, which also takes tool_timeouts.
func providerDefaultKeys() []string {
	keys := make([]string, len(providerKeys))
	for i, k := range providerKeys {
		keys[i] = k.name
	}
	return keys
}

func providerEntryKeys(own ...string) []string {
	return append(append(own, providerDefaultKeys()...), "tool_timeouts", "require_approval")
}

// readProviderKeys sets what o has of the shared keys over s.
func readProviderKeys(o field, s *ProviderSettings) {
	for _, k := range providerKeys {
		if g := o.get(k.name); g.present() {
			k.read(g, s)
		}
	}
}

// providerSettings reads an entry's shared keys over provider_defaults.
func (c *checker) providerSettings(o field) ProviderSettings {
	s := c.defaults
	readProviderKeys(o, &s)
	names, vals := o.get("tool_timeouts").members()
	for i, name := range names {
		if name == "" {
			c.add(vals[i].path, "a tool name cannot be empty")
			continue
		}
		if d, ok := vals[i].duration(); ok {
			if s.ToolTimeouts == nil {
				s.ToolTimeouts = map[string]time.Duration{}
			}
			s.ToolTimeouts[name] = d
		}
	}
	if ra := o.get("require_approval"); ra.present() {
		if ra.v.kind == kindBool {
			s.RequireApproval.All = ra.v.b
		} else if ra.v.kind != kindArray {
			c.add(ra.path, "want true, false or a list of the provider's tool names")
		} else {
			items, _ := ra.items()
			if len(items) == 0 {
				c.add(ra.path, "an empty list asks nothing: use false, or name the tools")
			}
			seen := map[string]bool{}
			for _, it := range items {
				n, ok := it.required("a tool name")
				switch {
				case !ok:
				case seen[n]:
					c.add(it.path, "%q is listed twice", n)
				default:
					seen[n] = true
					s.RequireApproval.Tools = append(s.RequireApproval.Tools, n)
				}
			}
		}
	}
	return s
}

// Model configures the chat model: model.Config, which the providers
// read, so that they need nothing of this package.
type Model = model.Config

// BuiltinTools selects the builtin tools provider's tools.
type BuiltinTools struct {
	ProviderSettings
	// Node is the ToolNode offering the tools (default "tools").
	Node string
	// Enable lists the tools to offer, in file order. Nothing is on by
	// default: tools that fetch URLs or touch files are capabilities the
	// user grants, one by one.
	Enable []string
	// HTTPFetch limits http_fetch.
	HTTPFetch HTTPFetch
	// Workspace confines the file tools.
	Workspace Workspace
	// Sandbox is what the builtin provider's process may have.
	Sandbox sandbox.Profile
}

// HTTPFetch limits the http_fetch tool, which a model drives with
// arbitrary URLs: without a host list it would be a way into the
// network the host sits on.
type HTTPFetch struct {
	// AllowHosts are the only hosts http_fetch may reach, and the
	// address ranges (CIDR entries) beyond the public Internet it may
	// connect to; required when http_fetch is enabled. See
	// builtin.HTTPFetchOptions.AllowedHosts.
	AllowHosts []string
	// MaxBytes caps a response; 0 leaves the provider's default.
	MaxBytes int64
	// Timeout bounds a fetch; 0 leaves the provider's default.
	Timeout time.Duration
}

// Workspace confines read_file, write_file and list_files.
type Workspace struct {
	// Root is the folder the file tools cannot leave (absolute); required
	// when any of them is enabled, so a model never roams the whole disk.
	Root string
}

// MCPServer is one entry of mcp_servers, in the shape users know from
// desktop MCP clients' "mcpServers".
type MCPServer struct {
	// ProviderSettings' Timeout keeps the bridge's meaning (it also bounds
	// the connection's start, at least 30s); the bridge enforces them per
	// server.
	ProviderSettings
	// Name is the entry's key; it prefixes the server's tool names, so it
	// must be short and plain.
	Name string
	// Type is "stdio", "http" or "sse"; when the file omits it, command
	// means stdio and url means http. LangChain's and Cline's spellings of
	// http ("streamable_http", "streamable-http", "streamableHttp") are
	// accepted and stored as "http", so configs copied from them work.
	Type string
	// Command starts a stdio server. A relative path containing a
	// separator is made absolute; a bare name is looked up in PATH.
	// ${VAR} references here and in Args, Env, Cwd, URL and Headers
	// (internal/expand's grammar) are kept verbatim for the bridge to
	// expand, so secrets stay out of the file.
	Command string
	Args    []string
	Env     map[string]string
	// Cwd is the stdio server's working directory (absolute). It defaults
	// to the config's folder, so relative paths in Args mean the same as
	// everywhere else in the file.
	Cwd string
	// URL reaches an http or sse server.
	URL     string
	Headers map[string]string
	// MaxOutputBytes caps a tool result handed to the model; a larger one
	// is truncated with a marker. 0 leaves the bridge's default (1 MiB). It
	// must not exceed max_result_bytes, past which a result is an error.
	MaxOutputBytes int64
	// Node is the ToolNode offering the server's tools (default "tools").
	Node string
	// AllowTools, when set, are the only tools offered; DenyTools are
	// hidden. At most one is set: together they would be ambiguous.
	AllowTools []string
	DenyTools  []string
	// Disabled keeps the entry in the file without starting it.
	Disabled bool
	// Sandbox is what a stdio server's process may have; its Env is Env
	// on top of provider_defaults', ${VAR}s unexpanded.
	Sandbox sandbox.Profile
}

// Plugin is a third-party tool provider: an executable built with sdk.Serve.
type Plugin struct {
	ProviderSettings
	// Name identifies the plugin in logs, errors and `tenxgraph tools`.
	Name string
	// Command is the executable and its arguments; Command[0] is made
	// absolute when it is a relative path.
	Command []string
	// SHA256 is the executable's expected checksum (lowercase hex), or
	// empty. When set, the host refuses to run a binary that differs.
	SHA256 string
	// Node is the ToolNode offering the plugin's tools (default "tools").
	Node string
	// Prefix is put before each of the plugin's tool names on the node
	// ("wx_" offers "forecast" as "wx_forecast"), so that two plugins
	// exporting one name can sit on one node. Per-tool settings such as
	// tool_timeouts keep the plugin's own names.
	Prefix string
	// Env is added to the plugin's environment, its ${VAR}s unexpanded
	// (the host expands them when it starts the plugin).
	Env map[string]string
	// Start is "startup" (default: a broken plugin fails the start, not the
	// first run) or "lazy" (started on first use, for costly plugins).
	Start string
	// Cwd is the plugin's working directory (absolute; "" for the host's).
	Cwd string
	// Sandbox is what the plugin's process may have; its Env includes Env.
	Sandbox sandbox.Profile
	// Options are sent to the plugin with Configure (a JSON object, as
	// written; nil when absent). A plugin that declares an options schema
	// has them checked against it when it starts, `validate` included.
	Options json.RawMessage
}

// DefaultKeepHistory is checkpointer.keep_history when unset: the last
// hundred checkpoints of a thread (a few dozen turns) show how it got where
// it is, and a long thread's store stays about the size of its messages
// rather than growing with every step.
const DefaultKeepHistory = 100

// Checkpointer selects where thread state is stored.
type Checkpointer struct {
	// Type is "sqlite" (default: embedded, survives restarts), "memory"
	// (lost on exit) or "postgres".
	Type string
	// Path is the sqlite file (absolute).
	Path string
	// DSNEnv names the environment variable holding the postgres DSN, which
	// carries a password and so never sits in the file.
	DSNEnv string
	// Lease is how long a run's claim on its thread lasts unless its
	// heartbeat renews it (0: checkpoint.DefaultLease, 30s): how long a thread
	// stays busy after the replica running it dies.
	Lease time.Duration
	// KeepHistory is how many checkpoints each thread keeps beyond its
	// latest (what a resume needs): older ones are deleted as new ones are
	// written, and History lists fewer snapshots. nil means
	// DefaultKeepHistory, -1 keeps them all. The messages are kept whole
	// either way.
	KeepHistory *int
	// IdleTTL, when set, deletes the threads nobody has written for that
	// long (and that no run holds), and gives their space back.
	IdleTTL time.Duration
	// Durability is when runs write their checkpoints, unless a request
	// says otherwise: one of graph's durability modes, "" for the default
	// (checkpoint.DurabilitySync).
	Durability checkpoint.Durability
}

// Cache bounds the cache of decoded threads, which saves a run on a thread
// the host just wrote (a resume, the next turn) from reading and decoding it
// again.
type Cache struct {
	// MaxBytes is the cache's budget, an estimate of the memory its
	// threads take (0: checkpoint.DefaultCacheBytes, 256 MiB); the least
	// recently used threads are dropped to stay within it.
	MaxBytes int64
}

// Server configures the HTTP API.
type Server struct {
	// Addr is host:port to listen on (default 127.0.0.1:8123).
	Addr string
	// Auth is nil when the API is open, which is only sensible on loopback.
	Auth *Auth
	// CORS lets browser pages on other origins call the API.
	CORS CORS
	// MaxBodyBytes bounds a request body (default 4 MiB).
	MaxBodyBytes int64
	// MaxRequestMessages bounds the messages one request adds to a thread
	// (default DefaultMaxRequestMessages).
	MaxRequestMessages int
	// ShutdownGrace is how long runs in flight may finish when the server
	// stops before they are cancelled (0: DefaultShutdownGrace).
	ShutdownGrace time.Duration
	// OnDisconnect is what happens to a run whose client goes away before
	// it ends: OnDisconnectCancel (also when empty, the default) or
	// OnDisconnectContinue.
	OnDisconnect string
	// AllowedHosts are Host names served besides the loopback ones on a
	// loopback connection (a name in /etc/hosts, say). A page that rebinds
	// its own DNS name to 127.0.0.1 sends its own name, so only listed
	// names get through. Lower case, without a port.
	AllowedHosts []string
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
	TokensEnv []string
}

// CORS lists the browser origins allowed to call the API.
type CORS struct {
	// AllowOrigins are origins such as "http://localhost:5173", or "*".
	AllowOrigins []string
}

// Load reads and parses the config file at path.
func Load(path string) (*Config, error) {
	data, dir, err := read(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, dir)
}

// LoadPartial is Load for the validate command, which reports every
// problem at once, those it finds with the graph included: it returns the
// config as far as it could be read along with the file's problems (see
// Check). err is for a file that cannot be read.
func LoadPartial(path string) (*Config, toolspec.Problems, error) {
	data, dir, err := read(path)
	if err != nil {
		return nil, nil, err
	}
	cfg, ps := Check(data, dir)
	return cfg, ps, nil
}

func read(path string) (data []byte, dir string, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", fmt.Errorf("config %s: %w", path, err)
	}
	data, err = os.ReadFile(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("no config file at %s: create one there (a small one is {\"agent\": \"tenxgraph:react\", \"model\": {\"provider\": \"openai\", \"model\": \"gpt-4o-mini\"}}) or pass --config with the path of yours: %w", abs, err)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read config: %w", err)
	}
	return data, filepath.Dir(abs), nil
}

// Parse decodes and validates a config whose file is in dir. On failure the
// error is a toolspec.Problems listing every problem found.
func Parse(data []byte, dir string) (*Config, error) {
	cfg, ps := Check(data, dir)
	if len(ps) > 0 {
		return nil, ps
	}
	return cfg, nil
}

// Check decodes and validates a config whose file is in dir, and returns
// every problem found together with the config as far as it could be read:
// a value with a problem is left at its default. The config is nil only
// when the data is not a JSON object. Use it to go on checking what needs
// more than the file (the graph's nodes) before reporting; start nothing
// from a config that has problems.
func Check(data []byte, dir string) (*Config, toolspec.Problems) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, toolspec.Problems{{Message: fmt.Sprintf("config folder %q: %v", dir, err)}}
	}
	c := &checker{dir: abs}
	root := parse(data, &c.ps)
	if root == nil {
		return nil, c.ps
	}
	if root.kind != kindObject {
		c.add("", "the config must be a JSON object, got %s", root.kind)
		return nil, c.ps
	}
	top := field{c: c, v: root}.object(topKeys()...)
	cfg := &Config{Dir: abs}
	_, _ = top.get(schemaKey).str()
	for _, first := range []bool{true, false} {
		for _, s := range sections {
			if s.First == first {
				s.read(c, top.get(s.Key), cfg)
			}
		}
	}
	c.checkSecrets(cfg)
	return cfg, c.ps
}

// node reads a provider entry's "node".
func nodeName(f field) string {
	if s, ok := f.text(); ok {
		return s
	}
	return DefaultNode
}

func (c *checker) remoteTools(f field) []declared.Config {
	items, _ := f.items()
	if len(items) == 0 {
		return nil
	}
	tools := make([]declared.Config, len(items))
	for i, it := range items {
		o := it.object("node", "node_name", "name", "description", "parameters", "timeout")
		t := &tools[i]
		t.Node = DefaultNode
		node, alias := o.get("node"), o.get("node_name")
		switch {
		case node.present() && alias.present():
			c.add(alias.path, "use one of node or node_name (node_name is an alias of node)")
		case alias.present():
			t.Node = nodeName(alias)
		default:
			t.Node = nodeName(node)
		}
		t.Name, _ = o.get("name").str()
		t.Description, _ = o.get("description").str()
		t.Timeout, _ = o.get("timeout").duration()
		if p := o.get("parameters"); p.present() {
			var buf bytes.Buffer
			p.v.encode(&buf)
			t.Parameters = buf.Bytes()
		}
	}
	// Names, schemas and duplicates are judged by the rules shared with
	// code-first AttachRemoteTools. Where this file already said what is
	// wrong (a name that is not a string), its "missing" would only repeat it.
	var more toolspec.Problems
	for _, p := range declared.Check(tools) {
		if path := toolspec.Join(f.path, p.Path); !c.covered(path) {
			more.Add(path, "%s", p.Message)
		}
	}
	c.ps = append(c.ps, more...)
	return tools
}

func (c *checker) model(f field) *Model {
	o := f.object("provider", "model", "base_url", "api_key_env", "script", "system_prompt", "max_steps", "timeout", "max_retries", "max_tokens")
	if !o.present() {
		return nil
	}
	m := &Model{MaxSteps: DefaultMaxSteps, MaxRetries: DefaultMaxRetries}
	provider := o.get("provider")
	if !provider.present() {
		c.add(provider.path, "missing: %s", modelProviderList())
	}
	m.Provider, _ = provider.oneOf(modelProviderNames()...)

	model := o.get("model")
	m.Model, _ = model.text()
	if m.Provider == "openai" && !model.present() {
		c.add(model.path, `missing: the openai provider needs a model name, such as "gpt-4o-mini"`)
	}
	if m.Provider == "anthropic" && !model.present() {
		c.add(model.path, `missing: the anthropic provider needs a model name, such as "claude-sonnet-4-5"`)
	}
	if u, ok := o.get("base_url").text(); ok {
		if err := checkURL(u); err != nil {
			c.add(o.get("base_url").path, "%v", err)
		} else if m.Provider == "anthropic" {
			if p := strings.TrimRight(urlPath(u), "/"); p == "/v1" || strings.HasSuffix(p, "/v1") {
				c.add(o.get("base_url").path, "the anthropic provider's base_url is the API root, without /v1 (it appends /v1/messages): use %q", strings.TrimSuffix(strings.TrimRight(u, "/"), "/v1"))
			}
		}
		m.BaseURL = u
	}
	m.APIKeyEnv, _ = o.get("api_key_env").envName()
	if !o.get("api_key_env").present() {
		switch m.Provider {
		case "openai":
			m.APIKeyEnv = DefaultAPIKeyEnv
		case "anthropic":
			m.APIKeyEnv = DefaultAnthropicAPIKeyEnv
		}
	}
	if mt := o.get("max_tokens"); mt.present() {
		if n, ok := mt.integer(1, math.MaxInt32); ok {
			m.MaxTokens = int(n)
		}
		if m.Provider != "" && m.Provider != "anthropic" {
			c.add(mt.path, "only the anthropic provider takes max_tokens (the Messages API requires one); the %s provider leaves the output limit to the model", m.Provider)
		}
	} else if m.Provider == "anthropic" {
		m.MaxTokens = DefaultMaxTokens
	}
	script := o.get("script")
	m.Script, _ = script.filePath()
	if m.Provider == "scripted" && !script.present() {
		c.add(script.path, "missing: the scripted provider reads its rules from this file")
	}
	m.SystemPrompt, _ = o.get("system_prompt").str()
	if n, ok := o.get("max_steps").integer(1, math.MaxInt32); ok {
		m.MaxSteps = int(n)
	}
	m.Timeout, _ = o.get("timeout").duration()
	if n, ok := o.get("max_retries").integer(0, math.MaxInt32); ok {
		m.MaxRetries = int(n)
	}
	return m
}

func (c *checker) builtinTools(f field) *BuiltinTools {
	o := f.object(append(providerEntryKeys("node", "enable", "http_fetch", "workspace"), profileKeys...)...)
	if !o.present() {
		return nil
	}
	b := &BuiltinTools{Node: nodeName(o.get("node")), ProviderSettings: c.providerSettings(o)}
	env, _ := o.get("env").strMap(checkEnvKey, nil)
	b.Sandbox = c.profile(o, env)
	enable := o.get("enable")
	if !enable.present() {
		c.add(enable.path, "missing: list the tools to turn on, from %s", quoteList(builtinNames))
	}
	items, _ := enable.items()
	first := map[string]int{}
	for i, it := range items {
		name, ok := it.oneOf(builtinNames...)
		if !ok {
			continue
		}
		if j, dup := first[name]; dup {
			c.add(it.path, "%q is already enabled at [%d]", name, j)
			continue
		}
		first[name] = i
		b.Enable = append(b.Enable, name)
	}

	hf := o.get("http_fetch").object("allow_hosts", "max_bytes", "timeout")
	hosts := hf.get("allow_hosts")
	allowed, listed := hosts.list(checkHost)
	b.HTTPFetch.AllowHosts = allowed
	b.HTTPFetch.MaxBytes, _ = hf.get("max_bytes").integer(1, math.MaxInt64)
	b.HTTPFetch.Timeout, _ = hf.get("timeout").duration()
	if _, on := first["http_fetch"]; on && (listed || !hosts.present()) && len(allowed) == 0 && !c.covered(hosts.path) {
		c.add(hosts.path, "missing: http_fetch is enabled, and a model may only fetch from hosts listed here, such as [\"api.example.com\"]")
	}

	root := o.get("workspace").object("root").get("root")
	b.Workspace.Root, _ = root.filePath()
	for _, name := range []string{"read_file", "write_file", "list_files"} {
		if _, on := first[name]; on && b.Workspace.Root == "" && !c.covered(root.path) {
			c.add(root.path, "missing: %s is enabled, and the file tools work only inside this folder", name)
			break
		}
	}
	return b
}

// MaxMCPOutputBytes is the largest max_output_bytes of an MCP server: a
// result crosses from the bridge to the host as one gRPC message
// (plugins/mcp.MaxOutputLimit).
const MaxMCPOutputBytes = 192 << 20

// defaultMCPOutputBytes is the bridge's max_output_bytes when the file
// sets none (plugins/mcp.DefaultMaxOutputBytes).
const defaultMCPOutputBytes = 1 << 20

// serverNamePattern keeps server names short and plain: they prefix tool
// names, which models accept only up to 64 such characters.
var serverNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,32}$`)

func (c *checker) mcpServers(f field) (map[string]MCPServer, []string) {
	names, entries := f.members()
	if len(names) == 0 {
		return nil, nil
	}
	servers := make(map[string]MCPServer, len(names))
	for i, name := range names {
		if !serverNamePattern.MatchString(name) {
			c.add(entries[i].path, "server name %q must be 1 to 32 letters, digits, '_' or '-': it prefixes the names of the server's tools", name)
		}
		s := c.mcpServer(entries[i])
		s.Name = name
		servers[name] = s
	}
	return servers, names
}

func (c *checker) mcpServer(f field) MCPServer {
	o := f.object(append(providerEntryKeys("type", "command", "args", "env", "cwd", "url", "headers", "max_output_bytes", "node", "allow_tools", "deny_tools", "disabled"),
		"pass_env", "limits", "network", "user", "group", "filesystem")...)
	s := MCPServer{Node: nodeName(o.get("node"))}
	if !o.present() {
		return s
	}
	s.ProviderSettings = c.providerSettings(o)
	typ, command, u := o.get("type"), o.get("command"), o.get("url")
	if t, ok := typ.str(); ok {
		switch t {
		case "stdio", "http", "sse":
			s.Type = t
		case "streamable_http", "streamable-http", "streamableHttp":
			s.Type = "http"
		default:
			c.add(typ.path, `must be one of "stdio" (started with command), "http" or "sse" (reached by url), got %q`, t)
		}
	}
	switch {
	case command.present() && u.present():
		c.add(f.path, "set command (to start a local server) or url (to reach a remote one), not both")
		s.Type = ""
	case !command.present() && !u.present():
		c.add(f.path, "missing command (to start a local server) or url (to reach a remote one)")
		s.Type = ""
	case s.Type == "" && !typ.present() && command.present():
		s.Type = "stdio"
	case s.Type == "" && !typ.present():
		s.Type = "http"
	case s.Type == "stdio" && u.present():
		c.add(u.path, "a stdio server is started with command; url is for type \"http\" or \"sse\"")
	case s.Type != "stdio" && s.Type != "" && command.present():
		c.add(command.path, "an %s server is reached by url; command is for type \"stdio\"", s.Type)
	}

	if cmd, ok := command.text(); ok {
		if !strings.HasPrefix(cmd, "$") && strings.ContainsAny(cmd, `/`+string(filepath.Separator)) {
			cmd = c.resolve(cmd)
		}
		s.Command = cmd
	}
	s.Args, _ = o.get("args").list(field.str)
	s.Env, _ = o.get("env").strMap(checkEnvKey, nil)
	cwd := o.get("cwd")
	if d, ok := cwd.text(); ok {
		if !strings.HasPrefix(d, "$") {
			d = c.resolve(d)
		}
		s.Cwd = d
	}
	if addr, ok := u.text(); ok {
		if v, ok := literal(addr); ok { // one with ${VAR}s is checked once expanded
			if err := checkURL(v); err != nil {
				c.add(u.path, "%v", err)
			}
		}
		s.URL = addr
	}
	s.Headers, _ = o.get("headers").strMap(checkHeaderName, checkHeaderValue)
	s.MaxOutputBytes, _ = o.get("max_output_bytes").integer(1, MaxMCPOutputBytes)
	if out, res := cmp.Or(s.MaxOutputBytes, defaultMCPOutputBytes), cmp.Or(s.MaxResultBytes, DefaultMaxResultBytes); out > res {
		c.add(o.get("max_output_bytes").path, "%d is more than max_result_bytes (%d): a result the bridge truncates to this size would still be refused; lower it or raise max_result_bytes", out, res)
	}
	s.AllowTools, _ = o.get("allow_tools").list(field.text)
	s.DenyTools, _ = o.get("deny_tools").list(field.text)
	if o.get("allow_tools").present() && o.get("deny_tools").present() {
		c.add(o.get("deny_tools").path, "set allow_tools or deny_tools, not both")
	}
	s.Disabled, _ = o.get("disabled").boolean()
	s.Sandbox = c.profile(o, s.Env)

	// Keys of the other transport are mistakes the server would ignore.
	switch s.Type {
	case "stdio":
		if h := o.get("headers"); h.present() {
			c.add(h.path, "only used by \"http\" and \"sse\" servers (reached by url)")
		}
		if s.Cwd == "" {
			s.Cwd = c.dir
		}
	case "http", "sse":
		for _, k := range []string{"args", "env", "cwd", "pass_env", "limits", "network", "user", "group", "filesystem"} {
			if g := o.get(k); g.present() {
				c.add(g.path, "only used by \"stdio\" servers (started with command)")
			}
		}
	}
	return s
}

// pluginNamePattern is the tool name rule: plugin names show up next to
// tool names in listings and errors.
var pluginNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

var sha256Pattern = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

// prefixPattern keeps a tool-name prefix within the tool name rule, short
// enough to leave the name room.
var prefixPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,32}$`)

func (c *checker) plugins(f field) []Plugin {
	items, _ := f.items()
	var out []Plugin
	first := map[string]int{}
	for i, it := range items {
		o := it.object(append(providerEntryKeys("name", "command", "sha256", "node", "env", "start"), "cwd", "pass_env", "limits", "network", "user", "group", "prefix", "filesystem", "options")...)
		if !o.present() {
			continue
		}
		p := Plugin{Node: nodeName(o.get("node")), Start: "startup", ProviderSettings: c.providerSettings(o)}
		name := o.get("name")
		if n, ok := name.required(`a short name for logs and errors, such as "weather"`); ok {
			switch j, dup := first[n]; {
			case !pluginNamePattern.MatchString(n):
				c.add(name.path, "%q must be 1 to 64 letters, digits, '_' or '-'", n)
			case dup:
				c.add(name.path, "duplicate plugin name %q (first at plugins[%d])", n, j)
			default:
				first[n] = i
			}
			p.Name = n
		}
		command := o.get("command")
		if !command.present() {
			c.add(command.path, `missing: the plugin's executable and its arguments, such as ["./bin/weather-plugin"]`)
		}
		if args, ok := command.list(field.str); ok {
			switch {
			case len(args) == 0:
				c.add(command.path, `must not be empty: the plugin's executable and its arguments, such as ["./bin/weather-plugin"]`)
			case args[0] == "":
				c.add(toolspec.Join(command.path, toolspec.Index(0)), "must not be empty: the plugin's executable")
			default:
				if !filepath.IsAbs(args[0]) && strings.ContainsAny(args[0], `/`+string(filepath.Separator)) {
					args[0] = c.resolve(args[0])
				}
				p.Command = args
			}
		}
		sum := o.get("sha256")
		if h, ok := sum.str(); ok {
			if sha256Pattern.MatchString(h) {
				p.SHA256 = strings.ToLower(h)
			} else {
				c.add(sum.path, "must be 64 hexadecimal characters, the output of `sha256sum` on the executable (got %d characters)", len(h))
			}
		}
		if prefix := o.get("prefix"); prefix.present() {
			if s, ok := prefix.str(); ok {
				if prefixPattern.MatchString(s) {
					p.Prefix = s
				} else {
					c.add(prefix.path, "%q must be 1 to 32 letters, digits, '_' or '-', such as \"wx_\": it goes before each tool name", s)
				}
			}
		}
		p.Env, _ = o.get("env").strMap(checkEnvKey, nil)
		if s, ok := o.get("start").oneOf("startup", "lazy"); ok {
			p.Start = s
		}
		p.Cwd, _ = o.get("cwd").filePath()
		p.Sandbox = c.profile(o, p.Env)
		if opts := o.get("options"); opts.present() {
			if opts.v.kind != kindObject {
				opts.wrongType("an object: the plugin's own options, which it declares")
			} else {
				var buf bytes.Buffer
				opts.v.encode(&buf)
				p.Options = buf.Bytes()
			}
		}
		out = append(out, p)
	}
	return out
}

// providerDefaults reads provider_defaults: the sandbox profile every
// provider entry starts from.
func (c *checker) providerDefaults(o field) sandbox.Profile {
	if !o.present() {
		return sandbox.Profile{}
	}
	env, _ := o.get("env").strMap(checkEnvKey, nil)
	c.sandboxDefaults = c.profile(o, env)
	return c.sandboxDefaults
}

func (c *checker) checkpointer(f field) Checkpointer {
	o := f.object("type", "path", "dsn_env", "lease", "keep_history", "idle_ttl", "durability")
	cp := Checkpointer{Type: "sqlite"}
	cp.Lease, _ = o.get("lease").duration()
	if n, ok := o.get("keep_history").integer(-1, math.MaxInt32); ok {
		keep := int(n)
		cp.KeepHistory = &keep
	}
	cp.IdleTTL, _ = o.get("idle_ttl").duration()
	d, _ := o.get("durability").oneOf(string(checkpoint.DurabilitySync), string(checkpoint.DurabilityAsync), string(checkpoint.DurabilityExit))
	cp.Durability = checkpoint.Durability(d)
	typ := o.get("type")
	if typ.present() {
		t, ok := typ.oneOf(checkpointerNames()...)
		if !ok {
			return cp // which keys belong depends on a type we do not know
		}
		cp.Type = t
	}
	path, dsn := o.get("path"), o.get("dsn_env")
	if cp.Type != "sqlite" && path.present() {
		c.add(path.path, "only used when type is \"sqlite\" (the %s checkpointer has no file)", cp.Type)
	}
	if cp.Type != "postgres" && dsn.present() {
		c.add(dsn.path, "only used when type is \"postgres\"")
	}
	switch cp.Type {
	case "sqlite":
		cp.Path = c.resolve(DefaultSQLitePath)
		if p, ok := path.filePath(); ok {
			cp.Path = p
		}
	case "postgres":
		if !dsn.present() {
			c.add(dsn.path, "missing: the postgres checkpointer reads its DSN from the environment variable named here, such as \"DATABASE_URL\"")
		}
		cp.DSNEnv, _ = dsn.envName()
	}
	return cp
}

func (c *checker) server(f field) Server {
	o := f.object("addr", "auth", "cors", "max_body_bytes", "shutdown_grace", "on_disconnect", "allowed_hosts", "max_request_messages")
	s := Server{Addr: DefaultAddr, MaxBodyBytes: DefaultMaxBodyBytes, MaxRequestMessages: DefaultMaxRequestMessages}
	if v, ok := o.get("on_disconnect").oneOf(OnDisconnectCancel, OnDisconnectContinue); ok {
		s.OnDisconnect = v
	}
	addr := o.get("addr")
	if a, ok := addr.text(); ok {
		if err := checkAddr(a); err != nil {
			c.add(addr.path, "%v", err)
		} else {
			s.Addr = a
		}
	}
	if auth := o.get("auth").object("tokens_env"); auth.present() {
		tokens := auth.get("tokens_env")
		if !tokens.present() {
			c.add(tokens.path, "missing: name the environment variables that hold the accepted tokens, such as [\"TENXGRAPH_TOKEN\"]")
		}
		names, ok := tokens.list(field.envName)
		if ok && len(names) == 0 {
			c.add(tokens.path, "must name at least one environment variable; leave out auth for an open API")
		}
		s.Auth = &Auth{TokensEnv: names}
	}
	s.CORS.AllowOrigins, _ = o.get("cors").object("allow_origins").get("allow_origins").list(checkOrigin)
	if n, ok := o.get("max_body_bytes").integer(1, math.MaxInt64); ok {
		s.MaxBodyBytes = n
	}
	if n, ok := o.get("max_request_messages").integer(1, math.MaxInt32); ok {
		s.MaxRequestMessages = int(n)
	}
	s.ShutdownGrace, _ = o.get("shutdown_grace").duration()
	s.AllowedHosts, _ = o.get("allowed_hosts").list(checkServedHost)
	return s
}

// checkServedHost reads a server.allowed_hosts entry: a host name or IP
// address as a Host header carries it, without a scheme, port or path, which
// is compared with the Host of each request. It is returned in lower case.
func checkServedHost(f field) (string, bool) {
	h, ok := f.text()
	if !ok {
		return "", false
	}
	name := strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	switch {
	case strings.Contains(h, "://") || strings.ContainsAny(h, "/?#@ "):
		f.c.add(f.path, "%q is not a host name: list only the name, such as \"myhost.local\", without a scheme or path", h)
		return "", false
	case net.ParseIP(name) == nil && strings.Contains(h, ":"):
		f.c.add(f.path, "%q has a port: list only the name (any port of the server is accepted)", h)
		return "", false
	case net.ParseIP(name) == nil && strings.ContainsAny(h, "[]"):
		f.c.add(f.path, "%q is not a host name or IP address", h)
		return "", false
	}
	if ip := net.ParseIP(name); ip != nil {
		return ip.String(), true
	}
	return strings.ToLower(strings.TrimSuffix(h, ".")), true
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http or https URL", s)
	}
	return nil
}

// urlPath is the path of s, a URL checkURL accepted.
func urlPath(s string) string {
	u, _ := url.Parse(s)
	return u.Path
}

func checkAddr(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q must be host:port, such as %q", s, DefaultAddr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: the port must be a number from 0 to 65535", s)
	}
	return nil
}

// checkHost reads an allow_hosts entry: a host name, optionally with a port
// or a leading "*." wildcard, a public IP address, or a CIDR range, but not
// a URL, by the rules the builtin provider applies.
func checkHost(f field) (string, bool) {
	h, ok := f.text()
	if !ok {
		return "", false
	}
	if err := hostallow.Check(h); err != nil {
		f.c.add(f.path, "%v", err)
		return "", false
	}
	return h, true
}

// checkOrigin reads a CORS origin. Browsers send Origin without a path or a
// trailing slash, so an entry with one would never match.
func checkOrigin(f field) (string, bool) {
	o, ok := f.text()
	if !ok || o == "*" {
		return o, ok
	}
	u, err := url.Parse(o)
	switch {
	case err != nil || u.Scheme == "" || u.Host == "":
		f.c.add(f.path, "%q is not an origin: use scheme://host[:port], such as \"http://localhost:5173\", or \"*\"", o)
		return "", false
	case u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#"):
		f.c.add(f.path, "%q is not an origin: browsers send only scheme://host[:port], with no path or trailing slash, such as %q", o, u.Scheme+"://"+u.Host)
		return "", false
	}
	return o, true
}

func checkEnvKey(k string) error {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return fmt.Errorf("%q is not an environment variable name", k)
	}
	return nil
}

func checkHeaderValue(v string) error {
	if strings.ContainsAny(v, "\r\n\x00") {
		return fmt.Errorf("a header value cannot contain a line break or NUL")
	}
	return nil
}

// checkHeaderName accepts RFC 9110 token characters.
func checkHeaderName(k string) error {
	if k == "" {
		return fmt.Errorf("a header name cannot be empty")
	}
	for _, r := range k {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return fmt.Errorf("%q is not a valid header name", k)
		}
	}
	return nil
}

// media reads the "media" block.
func (c *checker) media(f field) Media {
	o := f.object("allowed_types", "max_blob_bytes", "max_request_bytes", "max_image_pixels", "fetch")
	var m Media
	if types := o.get("allowed_types"); types.present() {
		seen := map[string]bool{}
		m.AllowedTypes, _ = types.list(func(it field) (string, bool) {
			t, ok := it.text()
			if !ok {
				return "", false
			}
			if err := media.CheckType(t); err != nil {
				it.c.add(it.path, "%v", err)
				return "", false
			}
			if seen[t] {
				it.c.add(it.path, "%q is listed twice", t)
				return "", false
			}
			seen[t] = true
			return t, true
		})
		if m.AllowedTypes == nil {
			m.AllowedTypes = []string{}
		}
	}
	m.MaxBlobBytes, _ = o.get("max_blob_bytes").integer(1, math.MaxInt64)
	m.MaxRequestBytes, _ = o.get("max_request_bytes").integer(1, math.MaxInt64)
	m.MaxImagePixels, _ = o.get("max_image_pixels").integer(1, math.MaxInt64)
	fetch := o.get("fetch").object("allow_hosts", "timeout")
	if hosts := fetch.get("allow_hosts"); hosts.present() {
		m.FetchAllowHosts, _ = hosts.list(checkHost)
		if m.FetchAllowHosts == nil {
			m.FetchAllowHosts = []string{}
		}
	}
	m.FetchTimeout, _ = fetch.get("timeout").duration()
	return m
}
