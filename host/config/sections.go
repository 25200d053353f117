package config

import (
	"math"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/media"
	"github.com/tenxgraph/tenxgraph/internal/sandbox"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// The sections of 10xgraph.json, in the order the schema lists them. Each
// registers its schema and its reader together, so they cannot drift apart
// unnoticed (TestSchemaAgreesWithParse holds them to the same files).
func init() {
	register(Section{Key: "agent", Required: true,
		Schema: func() *jsonschema.Schema {
			s := text(`The registered graph to serve: "tenxgraph:react" (the prebuilt model and tools loop, whose ToolNode is "tools") or a code-first program's own, such as "graph.agent:app".`)
			s.Examples = []any{"tenxgraph:react"}
			return s
		},
		read: func(c *checker, path string, v *value, cfg *Config) { c.decode(path, v, &cfg.Agent) }})
	register(Section{Key: "remote_tools", Schema: remoteToolsSchema,
		read: func(c *checker, path string, v *value, cfg *Config) { cfg.RemoteTools = c.remoteTools(path, v) }})
	register(Section{Key: "model", Schema: modelSchema,
		read: func(c *checker, path string, v *value, cfg *Config) { cfg.Model = c.model(path, v) }})
	register(Section{Key: "builtin_tools", Schema: builtinSchema,
		read: func(c *checker, path string, v *value, cfg *Config) { cfg.BuiltinTools = c.builtinTools(path, v) }})
	register(Section{Key: "mcp_servers", Schema: mcpServersSchema,
		read: func(c *checker, path string, v *value, cfg *Config) {
			cfg.MCPServers, cfg.MCPServerOrder = c.mcpServers(path, v)
		}})
	register(Section{Key: "plugins", Schema: pluginsSchema,
		read: func(c *checker, path string, v *value, cfg *Config) { cfg.Plugins = c.plugins(path, v) }})
	register(Section{Key: "provider_defaults", First: true,
		Schema: func() *jsonschema.Schema {
			return object("Defaults of every provider entry (builtin_tools, plugins[], mcp_servers.<name>): call limits and the sandbox profile. An entry's own keys win; its env adds to this env, its pass_env to this pass_env.",
				props(settingProps(), profileProps(true))...)
		},
		read: func(c *checker, path string, v *value, cfg *Config) {
			cfg.SandboxDefaults = c.providerDefaults(path, v)
		}})
	register(Section{Key: "checkpointer", Schema: checkpointerSchema,
		read: func(c *checker, path string, v *value, cfg *Config) { cfg.Checkpointer = c.checkpointer(path, v) }})
	register(Section{Key: "server", Schema: serverSchema,
		read: func(c *checker, path string, v *value, cfg *Config) { cfg.Server = c.server(path, v) }})
	register(Section{Key: "cache",
		Schema: func() *jsonschema.Schema {
			return object("The cache of decoded threads, which saves a resume or the next turn from reading its thread again.",
				prop{"max_bytes", withDefault(integer("The cache's budget, an estimate of its threads' memory; the least recently used threads are dropped to stay within it.", 1, math.MaxInt64), checkpoint.DefaultCacheBytes)})
		},
		read: func(c *checker, path string, v *value, cfg *Config) { c.decode(path, v, &cfg.Cache) }})
	register(Section{Key: "remote_tool_defaults",
		Schema: func() *jsonschema.Schema {
			return object("Defaults of the remote tools, those of remote_tools and a run's own.",
				prop{"timeout", withDefault(duration("How long a remote call waits for the client's result when its tool sets no timeout."), "10m")})
		},
		read: func(c *checker, path string, v *value, cfg *Config) {
			c.decode(toolspec.Join(path, "timeout"), v.field("timeout"), &cfg.RemoteToolTimeout)
		}})
	register(Section{Key: "media", Schema: mediaSchema,
		read: func(c *checker, path string, v *value, cfg *Config) { cfg.Media = c.media(path, v) }})
}

// nodeSchema is a provider entry's "node".
func nodeSchema() *jsonschema.Schema {
	return withDefault(text("The ToolNode offering the tools."), DefaultNode)
}

func remoteToolsSchema() *jsonschema.Schema {
	tool := object("A tool declared on the server and run by the client: the graph pauses, the client runs its handler and sends the result.",
		prop{"node", nodeSchema()},
		prop{"node_name", text("An alias of node.")},
		prop{"name", pattern("The tool's name, as the model calls it: letters, digits, '_' and '-', at most 64.", `^[a-zA-Z0-9_-]{1,64}$`)},
		prop{"description", str("What the tool does, for the model.")},
		prop{"parameters", &jsonschema.Schema{Type: "object", Description: `The JSON Schema of the tool's arguments, an object schema such as {"type": "object", "properties": {}}.`}},
		prop{"timeout", duration("How long a call waits for the client's result (default: remote_tool_defaults.timeout).")},
	)
	tool.Required = []string{"name"}
	tool.Not = requires("node", "node_name")
	return array("Tools declared on the server, executed by the client. Their schemas are checked when the host starts.", tool)
}

// A ModelProvider is a value of model.provider: its name, what it is, and
// the keys of the model block that belong to it alone or that it needs.
type ModelProvider struct {
	// Name is the value of model.provider.
	Name string
	// Summary says what it is, in missing-provider messages and the schema.
	Summary string
	// Needs are the keys it cannot run without.
	Needs []string
	// Own are the keys only it takes.
	Own []string
}

// modelProviders are the model providers, in the order messages list them.
var modelProviders = []ModelProvider{
	{Name: "openai", Summary: "any OpenAI-compatible endpoint", Needs: []string{"model"}},
	{Name: "anthropic", Summary: "Anthropic's Messages API", Needs: []string{"model"}, Own: []string{"max_tokens"}},
	{Name: "scripted", Summary: "rules from a script file, for demos and tests", Needs: []string{"script"}},
}

func modelProviderNames() []string {
	names := make([]string, len(modelProviders))
	for i, p := range modelProviders {
		names[i] = p.Name
	}
	return names
}

// modelProviderList is `"openai" (…), "anthropic" (…) or "scripted" (…)`.
func modelProviderList() string {
	parts := make([]string, len(modelProviders))
	for i, p := range modelProviders {
		parts[i] = `"` + p.Name + `" (` + p.Summary + `)`
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

func modelSchema() *jsonschema.Schema {
	s := object("The chat model. Left out, a code-first graph brings its own.",
		prop{"provider", enum("Which API the model is reached by: "+modelProviderList()+".", modelProviderNames()...)},
		prop{"model", text(`The model name sent to the endpoint, such as "gpt-4o-mini" or "claude-sonnet-4-5"; required by openai and anthropic.`)},
		prop{"base_url", str("The endpoint, when not the provider's own (OPENAI_BASE_URL or ANTHROPIC_BASE_URL override it at run time). Anthropic's is the API root, without /v1.")},
		prop{"api_key_env", envNameSchema("The environment variable holding the API key (default OPENAI_API_KEY for openai, ANTHROPIC_API_KEY for anthropic): the key never sits in the file.")},
		prop{"script", text("The scripted provider's rule file, relative to this file's folder.")},
		prop{"system_prompt", str("Prepended to every conversation.")},
		prop{"max_steps", withDefault(integer("Model calls per run, so a model that loops on tools ends with an error instead of a bill.", 1, math.MaxInt32), DefaultMaxSteps)},
		prop{"timeout", duration("Bounds one model call (default: the provider's).")},
		prop{"max_retries", withDefault(integer("How often a failed call is retried; 0 turns retries off.", 0, math.MaxInt32), DefaultMaxRetries)},
		prop{"max_tokens", withDefault(integer("Bounds one answer's output tokens (anthropic only: the Messages API requires one).", 1, math.MaxInt32), DefaultMaxTokens)},
	)
	s.Required = []string{"provider"}
	for _, p := range modelProviders {
		then := &jsonschema.Schema{Required: p.Needs}
		var others []string
		for _, o := range modelProviders {
			if o.Name != p.Name {
				others = append(others, o.Own...)
			}
		}
		if len(others) > 0 {
			then.AllOf = forbids(others...).AllOf
		}
		s.AllOf = append(s.AllOf, when("provider", []string{p.Name}, then))
	}
	return s
}

// settingProps are the call limits every provider entry and
// provider_defaults take.
func settingProps() []prop {
	return []prop{
		{"timeout", withDefault(duration("Bounds a call for as long as the tool neither answers nor reports progress."), DefaultTimeout.String())},
		{"max_argument_bytes", withDefault(integer("Bounds a call's arguments; a larger call never reaches the provider.", 1, MaxCallBytes), DefaultMaxArgumentBytes)},
		{"max_result_bytes", withDefault(integer("Bounds a result; a larger one becomes an error result naming the limit.", 1, MaxCallBytes), DefaultMaxResultBytes)},
	}
}

// entryProps are the keys of every provider entry beyond the settings.
func entryProps() []prop {
	timeouts := &jsonschema.Schema{Type: "object", Description: "Timeouts of single tools, by the provider's own tool names, over timeout.",
		AdditionalProperties: duration("The tool's timeout."), PropertyNames: text("A tool name.")}
	approval := &jsonschema.Schema{Description: "The tools whose every call waits for a person's approval: true for all, or a list of the provider's own tool names.",
		AnyOf: []*jsonschema.Schema{boolean(""), {Type: "array", Items: text(""), MinItems: ptr(1), UniqueItems: true}}}
	return []prop{{"tool_timeouts", timeouts}, {"require_approval", approval}}
}

func ptr[T any](v T) *T { return &v }

// profileProps are the sandbox profile's keys; env is an entry's own where
// it has one (mcp_servers, plugins).
func profileProps(withEnv bool) []prop {
	var out []prop
	if withEnv {
		out = append(out, prop{"env", strMap("Variables set in the provider's environment; ${VAR} takes a host variable. Nothing else of the host's environment is passed unless pass_env names it.")})
	}
	limits := object("Resource limits of the provider's process (Linux).",
		prop{"memory_mb", integer("Memory, in MiB.", 1, math.MaxInt32)},
		prop{"cpu_seconds", integer("CPU time, in seconds.", 1, math.MaxInt32)},
		prop{"open_files", integer("Open files.", 1, math.MaxInt32)},
		prop{"processes", integer("Processes and threads.", 1, math.MaxInt32)})
	limits.MinProperties = ptr(1)
	return append(out,
		prop{"pass_env", array("Host environment variables passed through by name. The host's own secrets never are.", envNameSchema(""))},
		prop{"limits", limits},
		prop{"network", withDefault(enum(`"host" (the host's network) or "none" (no network at all).`, sandbox.NetworkHost, sandbox.NetworkNone), sandbox.NetworkHost)},
		prop{"user", text("The account the provider runs as (the host must be able to switch to it).")},
		prop{"group", text("The group it runs as; needs user.")},
		prop{"filesystem", object("What the provider may read and write (Landlock, Linux); left out, the whole filesystem as the account allows.",
			prop{"read", array("Folders and files it may read, relative to this file's folder.", text(""))},
			prop{"write", array("Folders and files it may write.", text(""))})},
	)
}

func builtinSchema() *jsonschema.Schema {
	enable := array("The tools to offer. None is on by default: tools that fetch URLs or touch files are capabilities granted one by one.", enum("", builtinNames...))
	enable.UniqueItems = true
	s := object("The builtin tools provider.", props([]prop{
		{"node", nodeSchema()},
		{"enable", enable},
		{"http_fetch", object("Limits of http_fetch.",
			prop{"allow_hosts", array(`The only hosts http_fetch may reach ("api.example.com", "*.example.org:8443"), and CIDR ranges beyond the public Internet; required when http_fetch is enabled.`, text(""))},
			prop{"max_bytes", integer("Caps a response.", 1, math.MaxInt64)},
			prop{"timeout", duration("Bounds a fetch.")})},
		{"workspace", object("The folder the file tools cannot leave.",
			prop{"root", text("The folder, relative to this file's folder; required when read_file, write_file or list_files is enabled.")})},
	}, settingProps(), entryProps(), profileProps(true))...)
	s.Required = []string{"enable"}
	return s
}

// mcpTypes are mcp_servers' transports, with the other clients' spellings
// of http.
var mcpTypes = []string{"stdio", "http", "sse", "streamable_http", "streamable-http", "streamableHttp"}

func mcpServersSchema() *jsonschema.Schema {
	server := object("An MCP server, in the shape desktop MCP clients' mcpServers use: command to start a local one, url to reach a remote one.", props([]prop{
		{"type", enum(`"stdio" (started with command), "http" or "sse" (reached by url); left out, command means stdio and url http.`, mcpTypes...)},
		{"command", text("The executable of a stdio server: a bare name is looked up in PATH, a relative path is relative to this file's folder; ${VAR} takes a host variable.")},
		{"args", array("Its arguments.", str(""))},
		{"env", strMap("Variables set in the server's environment; ${VAR} takes a host variable.")},
		{"cwd", text("Its working directory (default: this file's folder).")},
		{"url", text("The endpoint of an http or sse server.")},
		{"headers", strMap("HTTP headers sent to an http or sse server; ${VAR} takes a host variable.")},
		{"max_output_bytes", withDefault(integer("Caps a tool result handed to the model; a larger one is truncated with a marker. At most max_result_bytes.", 1, MaxMCPOutputBytes), defaultMCPOutputBytes)},
		{"node", nodeSchema()},
		{"allow_tools", array("The only tools offered (not with deny_tools).", text(""))},
		{"deny_tools", array("Tools hidden (not with allow_tools).", text(""))},
		{"disabled", withDefault(boolean("Keeps the entry without starting it."), false)},
	}, settingProps(), entryProps(), profileProps(false))...)
	server.OneOf = []*jsonschema.Schema{requires("command"), requires("url")}
	stdioOnly := []string{"args", "env", "cwd", "pass_env", "limits", "network", "user", "group", "filesystem"}
	server.AllOf = []*jsonschema.Schema{
		when("type", []string{"stdio"}, forbids("url")),
		when("type", mcpTypes[1:], forbids("command")),
		{If: requires("command"), Then: forbids("headers")},
		{If: requires("url"), Then: forbids(stdioOnly...)},
		{Not: requires("allow_tools", "deny_tools")},
	}
	return &jsonschema.Schema{Type: "object", Description: "MCP servers by name; the name prefixes their tools' names when two would collide.",
		PropertyNames: pattern("A server's name prefixes the names of its tools when two would collide, so it is short and plain.", shortNamePattern.String()), AdditionalProperties: server}
}

func pluginsSchema() *jsonschema.Schema {
	command := array(`The plugin's executable and its arguments, such as ["./bin/weather-plugin"]; a relative executable is relative to this file's folder.`, str(""))
	command.MinItems = ptr(1)
	command.PrefixItems = []*jsonschema.Schema{text("")}
	p := object("A third-party tool provider: an executable built with the SDK's Serve.", props([]prop{
		{"name", pattern("A short name for logs and errors, such as \"weather\".", pluginNamePattern.String())},
		{"command", command},
		{"sha256", pattern("The executable's SHA-256 (`sha256sum`): the host refuses to run a binary that differs.", sha256Pattern.String())},
		{"node", nodeSchema()},
		{"env", strMap("Variables set in the plugin's environment; ${VAR} takes a host variable.")},
		{"start", withDefault(enum(`"startup" (a broken plugin fails the start, not the first run) or "lazy" (started on first use).`, "startup", "lazy"), "startup")},
	}, settingProps(), entryProps(), []prop{
		{"cwd", text("Its working directory, relative to this file's folder (default: the host's).")},
		{"prefix", pattern(`Put before each of its tool names on the node, such as "wx_", so that two plugins' names cannot collide.`, shortNamePattern.String())},
		{"options", &jsonschema.Schema{Type: "object", Description: "The plugin's own options, sent to it when it starts; a plugin that declares an options schema has them checked against it (`tenxgraph validate` starts it to read the schema)."}},
	}, profileProps(false))...)
	p.Required = []string{"name", "command"}
	return array("Third-party tool providers, started in this order.", p)
}

// A CheckpointerKind is a value of checkpointer.type and the keys that
// belong to it alone.
type CheckpointerKind struct {
	// Name is the value of checkpointer.type.
	Name string
	// Own are the keys only it takes; Needs, those it cannot run without.
	Own, Needs []string
}

// checkpointerKinds are the stores, in the order messages list them; the
// first is the default.
var checkpointerKinds = []CheckpointerKind{
	{Name: "sqlite", Own: []string{"path"}},
	{Name: "memory"},
	{Name: "postgres", Own: []string{"dsn_env"}, Needs: []string{"dsn_env"}},
}

func checkpointerNames() []string {
	names := make([]string, len(checkpointerKinds))
	for i, k := range checkpointerKinds {
		names[i] = k.Name
	}
	return names
}

func checkpointerSchema() *jsonschema.Schema {
	s := object("Where thread state is kept. Pausing for remote tools needs somewhere to pause, so there is always one.",
		prop{"type", withDefault(enum(`"sqlite" (embedded, survives restarts), "memory" (lost on exit) or "postgres".`, checkpointerNames()...), checkpointerKinds[0].Name)},
		prop{"path", withDefault(text("The sqlite file, relative to this file's folder."), DefaultSQLitePath)},
		prop{"dsn_env", envNameSchema(`The environment variable holding the postgres DSN, such as "DATABASE_URL".`)},
		prop{"lease", withDefault(duration("How long a run's claim on its thread lasts unless renewed: how long a thread stays busy after the replica running it dies."), checkpoint.DefaultLease.String())},
		prop{"keep_history", withDefault(integer("Checkpoints each thread keeps beyond its latest; -1 keeps them all.", -1, math.MaxInt32), DefaultKeepHistory)},
		prop{"idle_ttl", duration("Deletes the threads nobody has written for that long.")},
		prop{"durability", withDefault(enum(`When runs write their checkpoints: "sync" (before the next step), "async" (beside it) or "exit" (when the run ends).`, string(checkpoint.DurabilitySync), string(checkpoint.DurabilityAsync), string(checkpoint.DurabilityExit)), string(checkpoint.DurabilitySync))},
	)
	for _, k := range checkpointerKinds {
		var others []string
		for _, o := range checkpointerKinds {
			if o.Name != k.Name {
				others = append(others, o.Own...)
			}
		}
		then := forbids(others...)
		then.Required = k.Needs
		s.AllOf = append(s.AllOf, when("type", []string{k.Name}, then))
	}
	// Without a type the store is the first kind's.
	s.AllOf = append(s.AllOf, &jsonschema.Schema{If: &jsonschema.Schema{Not: requires("type")}, Then: forbids(checkpointerKinds[2].Own...)})
	return s
}

func serverSchema() *jsonschema.Schema {
	tokens := array(`Environment variables each holding an accepted token, such as ["TENXGRAPH_TOKEN"]; several let a token rotate without downtime.`, envNameSchema(""))
	tokens.MinItems = ptr(1)
	auth := object("Requires a bearer token on every request. Left out, the API is open, which is only sensible on loopback.", prop{"tokens_env", tokens})
	auth.Required = []string{"tokens_env"}
	return object("The HTTP API.",
		prop{"addr", withDefault(text("host:port to listen on."), DefaultAddr)},
		prop{"auth", auth},
		prop{"cors", object("Browser origins allowed to call the API.",
			prop{"allow_origins", array(`Origins such as "http://localhost:5173", or "*".`, text(""))})},
		prop{"max_body_bytes", withDefault(integer("Bounds a request body.", 1, math.MaxInt64), DefaultMaxBodyBytes)},
		prop{"shutdown_grace", withDefault(duration("How long runs in flight may finish when the server stops."), DefaultShutdownGrace.String())},
		prop{"on_disconnect", withDefault(enum(`What happens to a run whose client goes away: "cancel" or "continue" (it finishes and saves its result).`, OnDisconnectCancel, OnDisconnectContinue), OnDisconnectCancel)},
		prop{"allowed_hosts", array("Host names served on a loopback address besides the loopback ones, without a port.", text(""))},
		prop{"max_request_messages", withDefault(integer("Bounds the messages one request adds to a thread.", 1, math.MaxInt32), DefaultMaxRequestMessages)},
	)
}

func mediaSchema() *jsonschema.Schema {
	types := array("The media types threads take in.", enum("", media.KnownTypes...))
	types.UniqueItems = true
	return object("Which images, files and sounds threads take in.",
		prop{"allowed_types", withDefault(types, media.DefaultTypes)},
		prop{"max_blob_bytes", withDefault(integer("Bounds one image, file or sound.", 1, math.MaxInt64), media.DefaultMaxBlobBytes)},
		prop{"max_request_bytes", withDefault(integer("Bounds the new media of one request, or of one step's tool results.", 1, math.MaxInt64), media.DefaultMaxRequestBytes)},
		prop{"max_image_pixels", withDefault(integer("Bounds an image's width times height.", 1, math.MaxInt64), media.DefaultMaxImagePixels)},
		prop{"fetch", object("Fetching media given by url (https only).",
			prop{"allow_hosts", array("The only hosts fetched from; left out, any public host.", text(""))},
			prop{"timeout", withDefault(duration("Bounds one fetch."), media.DefaultFetchTimeout.String())})},
	)
}
