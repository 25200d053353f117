// Package plugins is the plugins provider kind: third-party tool
// providers, executables built with the SDK's Serve, which the plugin host
// starts and talks to over gRPC.
package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/kind"
	"github.com/tenxgraph/tenxgraph/host/pluginhost"
	"github.com/tenxgraph/tenxgraph/internal/sandbox"
	"github.com/tenxgraph/tenxgraph/plugins/builtin"
	"github.com/tenxgraph/tenxgraph/plugins/mcp"
	"github.com/tenxgraph/tenxgraph/plugins/remote"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// Key is the kind's key in 10xgraph.json.
const Key = "plugins"

func init() {
	kind.Register(kind.Kind{Key: Key, Schema: schema, Read: read, Entries: entries, Jobs: jobs})
}

// Plugin is a third-party tool provider: an executable built with sdk.Serve.
type Plugin struct {
	config.ProviderSettings
	// Name identifies the plugin in logs, errors and `tenxgraph tools`.
	Name string `json:"name"`
	// Command is the executable and its arguments; Command[0] is made
	// absolute when it is a relative path.
	Command []string `json:"command"`
	// SHA256 is the executable's expected checksum (lowercase hex), or
	// empty. When set, the host refuses to run a binary that differs.
	SHA256 string `json:"sha256"`
	// Node is the ToolNode offering the plugin's tools (default "tools").
	Node string `json:"node"`
	// Prefix is put before each of the plugin's tool names on the node
	// ("wx_" offers "forecast" as "wx_forecast"), so that two plugins
	// exporting one name can sit on one node. Per-tool settings such as
	// tool_timeouts keep the plugin's own names.
	Prefix string `json:"prefix"`
	// Env is added to the plugin's environment, its ${VAR}s unexpanded
	// (the host expands them when it starts the plugin).
	Env map[string]string `json:"env"`
	// Start is "startup" (default: a broken plugin fails the start, not the
	// first run) or "lazy" (started on first use, for costly plugins).
	Start string `json:"start"`
	// Cwd is the plugin's working directory (absolute; "" for the host's).
	Cwd string `json:"cwd"`
	// Sandbox is what the plugin's process may have; its Env includes Env.
	Sandbox sandbox.Profile `json:",embed"`
	// Options are sent to the plugin with Configure (a JSON object, as
	// written; nil when absent). A plugin that declares an options schema
	// has them checked against it when it starts, `validate` included.
	Options json.RawMessage `json:"options"`
}

// Of is cfg's plugins, in file order.
func Of(cfg *config.Config) []Plugin { return kind.Value[[]Plugin](cfg, Key) }

func schema() *jsonschema.Schema {
	p := config.Property
	command := config.Array(`The plugin's executable and its arguments, such as ["./bin/weather-plugin"]; a relative executable is relative to this file's folder.`, config.Str(""))
	command.MinItems = new(1)
	command.PrefixItems = []*jsonschema.Schema{config.Text("")}
	pl := config.Object("A third-party tool provider: an executable built with the SDK's Serve.", config.Props([]config.Prop{
		p("name", config.Pattern("A short name for logs and errors, such as \"weather\".", config.NamePattern.String())),
		p("command", command),
		p("sha256", config.Pattern("The executable's SHA-256 (`sha256sum`): the host refuses to run a binary that differs.", config.SHA256Pattern.String())),
		p("node", config.NodeSchema()),
		p("env", config.StrMap("Variables set in the plugin's environment; ${VAR} takes a host variable.")),
		p("start", config.WithDefault(config.Enum(`"startup" (a broken plugin fails the start, not the first run) or "lazy" (started on first use).`, "startup", "lazy"), "startup")),
	}, config.SettingProps(), config.EntryProps(), []config.Prop{
		p("cwd", config.Text("Its working directory, relative to this file's folder (default: the host's).")),
		p("prefix", config.Pattern(`Put before each of its tool names on the node, such as "wx_", so that two plugins' names cannot collide.`, config.ShortNamePattern.String())),
		p("options", &jsonschema.Schema{Type: "object", Description: "The plugin's own options, sent to it when it starts; a plugin that declares an options schema has them checked against it (`tenxgraph validate` starts it to read the schema)."}),
	}, config.ProfileProps(false))...)
	pl.Required = []string{"name", "command"}
	return config.Array("Third-party tool providers, started in this order.", pl)
}

func read(r *config.Reader) any {
	if !r.IsArray() || r.Refused() {
		return nil
	}
	var out []Plugin
	first := map[string]int{}
	for i, it := range r.Items() {
		if !it.IsObject() || it.Refused() {
			continue
		}
		pl := Plugin{Node: config.DefaultNode, Start: "startup"}
		it.Decode(&pl)
		it.Settings(&pl.ProviderSettings)
		if j, dup := first[pl.Name]; dup && pl.Name != "" {
			it.Field("name").Problem("duplicate plugin name %q (first at plugins[%d])", pl.Name, j)
		} else if pl.Name != "" {
			first[pl.Name] = i
		}
		if it.Field("command").Covered() {
			pl.Command = nil
		} else if len(pl.Command) > 0 && !filepath.IsAbs(pl.Command[0]) && strings.ContainsAny(pl.Command[0], `/`+string(filepath.Separator)) {
			pl.Command[0] = it.Resolve(pl.Command[0])
		}
		pl.SHA256 = strings.ToLower(pl.SHA256)
		if pl.Cwd != "" {
			pl.Cwd = it.Resolve(pl.Cwd)
		}
		pl.Env = it.Env(pl.Env)
		pl.Sandbox.Env = pl.Env
		pl.Sandbox = it.Profile(pl.Sandbox)
		out = append(out, pl)
	}
	if out == nil {
		return nil
	}
	return out
}

// path is the config path of plugins[i].
func path(i int) string { return fmt.Sprintf("%s[%d]", Key, i) }

func entries(v any) []kind.Entry {
	var out []kind.Entry
	for i, pl := range v.([]Plugin) {
		out = append(out, kind.Entry{Path: path(i), Node: pl.Node, Label: fmt.Sprintf("%s %s", path(i), pl.Name), Profile: pl.Sandbox})
	}
	return out
}

// reserved are the names of the providers this binary serves itself.
var reserved = []string{builtin.Name, remote.Name, mcp.Name}

func jobs(_ context.Context, v any, _ kind.Host) ([]kind.Job, toolspec.Problems) {
	var out []kind.Job
	var ps toolspec.Problems
	for i, pl := range v.([]Plugin) {
		if slices.Contains(reserved, pl.Name) {
			ps.Add(path(i)+".name", "%q is the name of a provider tenxgraph serves itself; choose another", pl.Name)
			continue
		}
		key := path(i)
		out = append(out, kind.Job{Label: fmt.Sprintf("%s %s", key, pl.Name), Path: key, Node: pl.Node, Approve: pl.RequireApproval,
			CheckOptions: pl.Options != nil && len(pl.Command) > 0,
			Config: pluginhost.Config{Name: pl.Name, Command: pl.Command, SHA256: pl.SHA256, Lazy: pl.Start == "lazy", Prefix: pl.Prefix,
				Sandbox: pl.Sandbox, Key: key, Dir: pl.Cwd, Limits: pl.Limits(key), Options: pl.Options}})
	}
	return out, ps
}
