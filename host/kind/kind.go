// Package kind is the registry of provider kinds, Caddy's module pattern
// for the keys of 10xgraph.json that start tool providers (builtin_tools,
// mcp_servers, plugins). A kind is one package: it owns its key, the Go
// type its entries decode into, their JSON Schema with descriptions and
// defaults, the checks a schema cannot express, and how its entries become
// provider processes at ToolNodes. It registers once, from an init:
//
//	func init() { kind.Register(kind.Kind{Key: "my_tools", ...}) }
//
// and a program links it with one import line (host/service imports the
// kinds it serves). The config loader reads every registered key and the
// service starts every registered kind the same way; neither names one.
package kind

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/pluginhost"
	"github.com/tenxgraph/tenxgraph/internal/registry"
	"github.com/tenxgraph/tenxgraph/internal/sandbox"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// Kind is one provider kind. Every function gets v, the value its Read
// returned for the file (never nil: a file without the key has no entries
// of the kind).
type Kind struct {
	// Key is the top-level key of 10xgraph.json.
	Key string
	// Schema is the key's JSON Schema, with the descriptions and defaults
	// editors show (config's builders keep it short).
	Schema func() *jsonschema.Schema
	// Read decodes and checks the key's value (Present false when the file
	// leaves it out) and returns the kind's own value, or nil when there
	// is nothing to start.
	Read func(r *config.Reader) any
	// Late kinds start after the others, so that their Jobs may ask
	// Host.Taken which tool names a node already has (MCP servers' tools
	// take their server's prefix rather than collide).
	Late bool
	// Entries are v's entries that start, in file order: where each is
	// in the file, its node, and what its process may have.
	Entries func(v any) []Entry
	// Jobs are the processes v starts, or the problems why they cannot
	// start, at config paths.
	Jobs func(ctx context.Context, v any, h Host) ([]Job, toolspec.Problems)
	// CheckEnv reports each ${VAR} of v the host's environment cannot
	// expand, before anything starts. Nil expands each entry's
	// Profile.Env.
	CheckEnv func(v any, h Host) toolspec.Problems
}

// Entry is one entry of a kind's section that starts.
type Entry struct {
	// Path is the entry's config path ("plugins[0]").
	Path string
	// Node is the ToolNode offering its tools.
	Node string
	// Label names its process in `tenxgraph tools` ("plugins[0] weather").
	Label string
	// Profile is what its process may have, provider_defaults included;
	// its Env, ${VAR}s unexpanded.
	Profile sandbox.Profile
	// Remote, when set, says why the entry has no process of its own (a
	// server reached at its url), shown in place of its profile.
	Remote string
}

// Job is one provider process to start.
type Job struct {
	// Label names the process in `tenxgraph tools`.
	Label string
	// Path is the config path its problems are reported at.
	Path string
	// Node is the ToolNode offering its tools.
	Node string
	// Config is how the plugin host starts it; its Sandbox.Env may hold
	// ${VAR}s, which the service expands from the host's environment.
	Config pluginhost.Config
	// Approve names the tools whose every call waits for a person.
	Approve config.Approval
	// CheckOptions is true when Config.Options are the user's own: validate
	// checks them against the plugin's options schema even when the config
	// has other problems and nothing starts.
	CheckOptions bool
}

// Host is what the service gives a kind's Jobs and CheckEnv.
type Host struct {
	// Config is the whole config.
	Config *config.Config
	// Self is this program, which serves the providers the binary holds
	// (`tenxgraph plugin NAME`).
	Self string
	// Vars looks a host variable up; the host's own secrets read as unset.
	Vars func(string) (string, bool)
	// Taken lists the tools a node has so far, its configured remote
	// tools' included; set for Late kinds only.
	Taken func(node string) []string
}

// EnvPath is the config path of the env where variable k of an entry's
// env (at path entry) is set: provider_defaults' when the entry has the
// default's value, else the entry's own.
func (h Host) EnvPath(entry string, env map[string]string, k string) string {
	if d, ok := h.Config.SandboxDefaults.Env[k]; entry == "remote_tools" || ok && env[k] == d {
		return "provider_defaults.env"
	}
	return toolspec.Join(entry, "env")
}

// kinds are the registered kinds, listed by key.
var kinds = registry.List[Kind]{What: "provider kind",
	Name: func(k Kind) string { return k.Key }, Rank: func(Kind) int { return 0 }}

// Register adds a provider kind: its section to the config loader
// (config.RegisterProvider) and its start to the service. Call it from
// the kind package's init. A key registered twice panics, as Caddy's
// registry refuses a module ID twice: one kind's checks would silently win.
func Register(k Kind) {
	kinds.Add(k)
	config.RegisterProvider(k.Key, k.Schema, k.Read)
}

// All are the registered kinds, by key.
func All() []Kind { return kinds.All() }

// Value is what kind key read from cfg, as its type T (the zero T when the
// file has none): what a kind's typed accessor returns.
func Value[T any](cfg *config.Config, key string) T {
	v, _ := cfg.Provider(key).(T)
	return v
}
