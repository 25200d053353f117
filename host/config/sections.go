package config

import (
	"math"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/media"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/internal/sandbox"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// The sections of 10xgraph.json, in the order the schema lists them. Each
// registers its schema and its reader together, so they cannot drift apart
// unnoticed (TestSchemaAgreesWithParse holds them to the same files).
func init() {
	register(Section{Key: "agent", Required: true,
		Schema: func() *jsonschema.Schema {
			s := Text(`The registered graph to serve: "tenxgraph:react" (the prebuilt model and tools loop, whose ToolNode is "tools") or a code-first program's own, such as "graph.agent:app".`)
			s.Examples = []any{"tenxgraph:react"}
			return s
		},
		read: func(c *checker, path string, v *value, cfg *Config) { c.decode(path, v, &cfg.Agent) }})
	register(Section{Key: "remote_tools", Schema: remoteToolsSchema,
		read: func(c *checker, path string, v *value, cfg *Config) { cfg.RemoteTools = c.remoteTools(path, v) }})
	register(Section{Key: "model", Schema: modelSchema,
		read: func(c *checker, path string, v *value, cfg *Config) { cfg.Model = c.model(path, v) }})
	register(Section{Key: "provider_defaults", First: true,
		Schema: func() *jsonschema.Schema {
			return Object("Defaults of every provider entry (builtin_tools, plugins[], mcp_servers.<name>): call limits and the sandbox profile. An entry's own keys win; its env adds to this env, its pass_env to this pass_env.",
				Props(SettingProps(), ProfileProps(true))...)
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
			return Object("The cache of decoded threads, which saves a resume or the next turn from reading its thread again.",
				Prop{"max_bytes", WithDefault(Integer("The cache's budget, an estimate of its threads' memory; the least recently used threads are dropped to stay within it.", 1, math.MaxInt64), checkpoint.DefaultCacheBytes)})
		},
		read: func(c *checker, path string, v *value, cfg *Config) { c.decode(path, v, &cfg.Cache) }})
	register(Section{Key: "remote_tool_defaults",
		Schema: func() *jsonschema.Schema {
			return Object("Defaults of the remote tools, those of remote_tools and a run's own.",
				Prop{"timeout", WithDefault(Duration("How long a remote call waits for the client's result when its tool sets no timeout."), "10m")})
		},
		read: func(c *checker, path string, v *value, cfg *Config) {
			c.decode(toolspec.Join(path, "timeout"), v.field("timeout"), &cfg.RemoteToolTimeout)
		}})
	register(Section{Key: "media", Schema: mediaSchema,
		read: func(c *checker, path string, v *value, cfg *Config) { cfg.Media = c.media(path, v) }})
}

// NodeSchema is a provider entry's "node".
func NodeSchema() *jsonschema.Schema {
	return WithDefault(Text("The ToolNode offering the tools."), DefaultNode)
}

func remoteToolsSchema() *jsonschema.Schema {
	tool := Object("A tool declared on the server and run by the client: the graph pauses, the client runs its handler and sends the result.",
		Prop{"node", NodeSchema()},
		Prop{"node_name", Text("An alias of node.")},
		Prop{"name", Pattern("The tool's name, as the model calls it: letters, digits, '_' and '-', at most 64.", `^[a-zA-Z0-9_-]{1,64}$`)},
		Prop{"description", Str("What the tool does, for the model.")},
		Prop{"parameters", &jsonschema.Schema{Type: "object", Description: `The JSON Schema of the tool's arguments, an object schema such as {"type": "object", "properties": {}}.`}},
		Prop{"timeout", Duration("How long a call waits for the client's result (default: remote_tool_defaults.timeout).")},
	)
	tool.Required = []string{"name"}
	tool.Not = Requires("node", "node_name")
	return Array("Tools declared on the server, executed by the client. Their schemas are checked when the host starts.", tool)
}

// modelProviderList is `"openai" (…), "anthropic" (…) or "scripted" (…)`:
// the registered providers (package model) with their summaries.
func modelProviderList() string {
	var parts []string
	for _, p := range model.Providers() {
		parts = append(parts, `"`+p.Name+`" (`+p.Summary+`)`)
	}
	return OrList(parts)
}

// modelProviderNames are the registered providers' names, in order.
func modelProviderNames() []string {
	var names []string
	for _, p := range model.Providers() {
		names = append(names, p.Name)
	}
	return names
}

// needing are the names of the providers that need key, "openai and
// anthropic".
func needing(key string) string {
	var names []string
	for _, p := range model.Providers() {
		if slices.Contains(p.Needs, key) {
			names = append(names, p.Name)
		}
	}
	return andList(names)
}

// keyEnvDefaults are the providers' api_key_env defaults, "OPENAI_API_KEY
// for openai, ANTHROPIC_API_KEY for anthropic".
func keyEnvDefaults() string {
	var parts []string
	for _, p := range model.Providers() {
		if p.KeyEnv != "" {
			parts = append(parts, p.KeyEnv+" for "+p.Name)
		}
	}
	return strings.Join(parts, ", ")
}

func modelSchema() *jsonschema.Schema {
	s := Object("The chat model. Left out, a code-first graph brings its own.",
		Prop{"provider", Enum("Which API the model is reached by: "+modelProviderList()+".", modelProviderNames()...)},
		Prop{"model", Text(`The model name sent to the endpoint, such as "gpt-4o-mini" or "claude-sonnet-4-5"; required by ` + needing("model") + `.`)},
		Prop{"base_url", Str("The endpoint, when not the provider's own (OPENAI_BASE_URL or ANTHROPIC_BASE_URL override it at run time). Anthropic's is the API root, without /v1.")},
		Prop{"api_key_env", envNameSchema("The environment variable holding the API key (default " + keyEnvDefaults() + "): the key never sits in the file.")},
		Prop{"script", Text("The scripted provider's rule file, relative to this file's folder.")},
		Prop{"system_prompt", Str("Prepended to every conversation.")},
		Prop{"max_steps", WithDefault(Integer("Model calls per run, so a model that loops on tools ends with an error instead of a bill.", 1, math.MaxInt32), DefaultMaxSteps)},
		Prop{"timeout", Duration("Bounds one model call (default: the provider's).")},
		Prop{"max_retries", WithDefault(Integer("How often a failed call is retried; 0 turns retries off.", 0, math.MaxInt32), DefaultMaxRetries)},
		Prop{"max_tokens", WithDefault(Integer("Bounds one answer's output tokens (anthropic only: the Messages API requires one).", 1, math.MaxInt32), DefaultMaxTokens)},
	)
	s.Required = []string{"provider"}
	providers := model.Providers()
	for _, p := range providers {
		then := &jsonschema.Schema{Required: p.Needs}
		var others []string
		for _, o := range providers {
			if o.Name != p.Name {
				others = append(others, o.Own...)
			}
		}
		if len(others) > 0 {
			then.AllOf = Forbids(others...).AllOf
		}
		s.AllOf = append(s.AllOf, When("provider", []string{p.Name}, then))
	}
	return s
}

// SettingProps are the call limits every provider entry and
// provider_defaults take.
func SettingProps() []Prop {
	return []Prop{
		{"timeout", WithDefault(Duration("Bounds a call for as long as the tool neither answers nor reports progress."), DefaultTimeout.String())},
		{"max_argument_bytes", WithDefault(Integer("Bounds a call's arguments; a larger call never reaches the provider.", 1, MaxCallBytes), DefaultMaxArgumentBytes)},
		{"max_result_bytes", WithDefault(Integer("Bounds a result; a larger one becomes an error result naming the limit.", 1, MaxCallBytes), DefaultMaxResultBytes)},
	}
}

// EntryProps are the keys of every provider entry beyond the settings.
func EntryProps() []Prop {
	timeouts := &jsonschema.Schema{Type: "object", Description: "Timeouts of single tools, by the provider's own tool names, over timeout.",
		AdditionalProperties: Duration("The tool's timeout."), PropertyNames: Text("A tool name.")}
	approval := &jsonschema.Schema{Description: "The tools whose every call waits for a person's approval: true for all, or a list of the provider's own tool names.",
		AnyOf: []*jsonschema.Schema{Boolean(""), {Type: "array", Items: Text(""), MinItems: ptr(1), UniqueItems: true}}}
	return []Prop{{"tool_timeouts", timeouts}, {"require_approval", approval}}
}

func ptr[T any](v T) *T { return &v }

// ProfileProps are the sandbox profile's keys; env is an entry's own where
// it has one (mcp_servers, plugins).
func ProfileProps(withEnv bool) []Prop {
	var out []Prop
	if withEnv {
		out = append(out, Prop{"env", StrMap("Variables set in the provider's environment; ${VAR} takes a host variable. Nothing else of the host's environment is passed unless pass_env names it.")})
	}
	limits := Object("Resource limits of the provider's process (Linux).",
		Prop{"memory_mb", Integer("Memory, in MiB.", 1, math.MaxInt32)},
		Prop{"cpu_seconds", Integer("CPU time, in seconds.", 1, math.MaxInt32)},
		Prop{"open_files", Integer("Open files.", 1, math.MaxInt32)},
		Prop{"processes", Integer("Processes and threads.", 1, math.MaxInt32)})
	limits.MinProperties = ptr(1)
	return append(out,
		Prop{"pass_env", Array("Host environment variables passed through by name. The host's own secrets never are.", envNameSchema(""))},
		Prop{"limits", limits},
		Prop{"network", WithDefault(Enum(`"host" (the host's network) or "none" (no network at all).`, sandbox.NetworkHost, sandbox.NetworkNone), sandbox.NetworkHost)},
		Prop{"user", Text("The account the provider runs as (the host must be able to switch to it).")},
		Prop{"group", Text("The group it runs as; needs user.")},
		Prop{"filesystem", Object("What the provider may read and write (Landlock, Linux); left out, the whole filesystem as the account allows.",
			Prop{"read", Array("Folders and files it may read, relative to this file's folder.", Text(""))},
			Prop{"write", Array("Folders and files it may write.", Text(""))})},
	)
}

// checkpointerTypes describes the registered store kinds (package
// checkpoint), `"sqlite" (…), "memory" (…) or "postgres".`, and names
// them in order.
func checkpointerTypes() (desc string, names []string) {
	var parts []string
	for _, k := range checkpoint.Kinds() {
		names = append(names, k.Name)
		part := `"` + k.Name + `"`
		if k.Summary != "" {
			part += " (" + k.Summary + ")"
		}
		parts = append(parts, part)
	}
	return OrList(parts) + ".", names
}

func checkpointerSchema() *jsonschema.Schema {
	desc, names := checkpointerTypes()
	def, _ := checkpoint.LookupKind("")
	s := Object("Where thread state is kept. Pausing for remote tools needs somewhere to pause, so there is always one.",
		Prop{"type", WithDefault(Enum(desc, names...), def.Name)},
		Prop{"path", WithDefault(Text("The sqlite file, relative to this file's folder."), DefaultSQLitePath)},
		Prop{"dsn_env", envNameSchema(`The environment variable holding the postgres DSN, such as "DATABASE_URL".`)},
		Prop{"lease", WithDefault(Duration("How long a run's claim on its thread lasts unless renewed: how long a thread stays busy after the replica running it dies."), checkpoint.DefaultLease.String())},
		Prop{"keep_history", WithDefault(Integer("Checkpoints each thread keeps beyond its latest; -1 keeps them all.", -1, math.MaxInt32), DefaultKeepHistory)},
		Prop{"idle_ttl", Duration("Deletes the threads nobody has written for that long.")},
		Prop{"durability", WithDefault(Enum(`When runs write their checkpoints: "sync" (before the next step), "async" (beside it) or "exit" (when the run ends).`, string(checkpoint.DurabilitySync), string(checkpoint.DurabilityAsync), string(checkpoint.DurabilityExit)), string(checkpoint.DurabilitySync))},
	)
	kinds := checkpoint.Kinds()
	var notDefault []string
	for _, k := range kinds {
		var others []string
		for _, o := range kinds {
			if o.Name != k.Name {
				others = append(others, o.Own...)
			}
		}
		then := Forbids(others...)
		then.Required = k.Needs
		s.AllOf = append(s.AllOf, When("type", []string{k.Name}, then))
		if !k.Default {
			notDefault = append(notDefault, k.Own...)
		}
	}
	// Without a type the store is the default kind's.
	s.AllOf = append(s.AllOf, &jsonschema.Schema{If: &jsonschema.Schema{Not: Requires("type")}, Then: Forbids(notDefault...)})
	return s
}

func serverSchema() *jsonschema.Schema {
	tokens := Array(`Environment variables each holding an accepted token, such as ["TENXGRAPH_TOKEN"]; several let a token rotate without downtime.`, envNameSchema(""))
	tokens.MinItems = ptr(1)
	auth := Object("Requires a bearer token on every request. Left out, the API is open, which is only sensible on loopback.", Prop{"tokens_env", tokens})
	auth.Required = []string{"tokens_env"}
	return Object("The HTTP API.",
		Prop{"addr", WithDefault(Text("host:port to listen on."), DefaultAddr)},
		Prop{"auth", auth},
		Prop{"cors", Object("Browser origins allowed to call the API.",
			Prop{"allow_origins", Array(`Origins such as "http://localhost:5173", or "*".`, Text(""))})},
		Prop{"max_body_bytes", WithDefault(Integer("Bounds a request body.", 1, math.MaxInt64), DefaultMaxBodyBytes)},
		Prop{"shutdown_grace", WithDefault(Duration("How long runs in flight may finish when the server stops."), DefaultShutdownGrace.String())},
		Prop{"on_disconnect", WithDefault(Enum(`What happens to a run whose client goes away: "cancel" or "continue" (it finishes and saves its result).`, OnDisconnectCancel, OnDisconnectContinue), OnDisconnectCancel)},
		Prop{"allowed_hosts", Array("Host names served on a loopback address besides the loopback ones, without a port.", Text(""))},
		Prop{"max_request_messages", WithDefault(Integer("Bounds the messages one request adds to a thread.", 1, math.MaxInt32), DefaultMaxRequestMessages)},
	)
}

func mediaSchema() *jsonschema.Schema {
	types := Array("The media types threads take in.", Enum("", media.KnownTypes...))
	types.UniqueItems = true
	return Object("Which images, files and sounds threads take in.",
		Prop{"allowed_types", WithDefault(types, media.DefaultTypes)},
		Prop{"max_blob_bytes", WithDefault(Integer("Bounds one image, file or sound.", 1, math.MaxInt64), media.DefaultMaxBlobBytes)},
		Prop{"max_request_bytes", WithDefault(Integer("Bounds the new media of one request, or of one step's tool results.", 1, math.MaxInt64), media.DefaultMaxRequestBytes)},
		Prop{"max_image_pixels", WithDefault(Integer("Bounds an image's width times height.", 1, math.MaxInt64), media.DefaultMaxImagePixels)},
		Prop{"fetch", Object("Fetching media given by url (https only).",
			Prop{"allow_hosts", Array("The only hosts fetched from; left out, any public host.", Text(""))},
			Prop{"timeout", WithDefault(Duration("Bounds one fetch."), media.DefaultFetchTimeout.String())})},
	)
}
