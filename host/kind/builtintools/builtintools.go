// Package builtintools is the builtin_tools provider kind: the tools this
// binary serves itself (package plugins/builtin), which a config grants
// one by one.
package builtintools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/kind"
	"github.com/tenxgraph/tenxgraph/host/pluginhost"
	"github.com/tenxgraph/tenxgraph/internal/sandbox"
	"github.com/tenxgraph/tenxgraph/plugins/builtin"
	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// Key is the kind's key in 10xgraph.json.
const Key = "builtin_tools"

func init() {
	kind.Register(kind.Kind{Key: Key, Schema: schema, Read: read, Entries: entries, Jobs: jobs})
}

// Config is the builtin_tools block: which builtin tools run, and the
// limits of those that reach outside the process.
type Config struct {
	config.ProviderSettings
	// Node is the ToolNode offering the tools (default "tools").
	Node string `json:"node"`
	// Enable lists the tools to offer, in file order. Nothing is on by
	// default: tools that fetch URLs or touch files are capabilities the
	// user grants, one by one.
	Enable []string `json:"enable"`
	// HTTPFetch limits http_fetch.
	HTTPFetch HTTPFetch `json:"http_fetch"`
	// Workspace confines the file tools.
	Workspace Workspace `json:"workspace"`
	// Sandbox is what the builtin provider's process may have.
	Sandbox sandbox.Profile `json:",embed"`
}

// HTTPFetch limits the http_fetch tool, which a model drives with
// arbitrary URLs: without a host list it would be a way into the
// network the host sits on.
type HTTPFetch struct {
	// AllowHosts are the only hosts http_fetch may reach, and the
	// address ranges (CIDR entries) beyond the public Internet it may
	// connect to; required when http_fetch is enabled. See
	// builtin.HTTPFetchOptions.AllowedHosts.
	AllowHosts []string `json:"allow_hosts"`
	// MaxBytes caps a response; 0 leaves the provider's default.
	MaxBytes int64 `json:"max_bytes"`
	// Timeout bounds a fetch; 0 leaves the provider's default.
	Timeout time.Duration `json:"timeout"`
}

// Workspace confines read_file, write_file and list_files.
type Workspace struct {
	// Root is the folder the file tools cannot leave (absolute); required
	// when any of them is enabled, so a model never roams the whole disk.
	Root string `json:"root"`
}

// Of is cfg's builtin_tools, nil when the file has none.
func Of(cfg *config.Config) *Config { return kind.Value[*Config](cfg, Key) }

// names are the builtin provider's tools.
var names = []string{"calculator", "current_time", "http_fetch", "read_file", "write_file", "list_files"}

func schema() *jsonschema.Schema {
	p := config.Property
	enable := config.Array("The tools to offer. None is on by default: tools that fetch URLs or touch files are capabilities granted one by one.", config.Enum("", names...))
	enable.UniqueItems = true
	s := config.Object("The builtin tools provider.", config.Props([]config.Prop{
		p("node", config.NodeSchema()),
		p("enable", enable),
		p("http_fetch", config.Object("Limits of http_fetch.",
			p("allow_hosts", config.Array(`The only hosts http_fetch may reach ("api.example.com", "*.example.org:8443"), and CIDR ranges beyond the public Internet; required when http_fetch is enabled.`, config.Text(""))),
			p("max_bytes", config.Integer("Caps a response.", 1, math.MaxInt64)),
			p("timeout", config.Duration("Bounds a fetch.")))),
		p("workspace", config.Object("The folder the file tools cannot leave.",
			p("root", config.Text("The folder, relative to this file's folder; required when read_file, write_file or list_files is enabled.")))),
	}, config.SettingProps(), config.EntryProps(), config.ProfileProps(true))...)
	s.Required = []string{"enable"}
	return s
}

func read(r *config.Reader) any {
	if !r.Present() || r.Refused() {
		return nil
	}
	b := &Config{Node: config.DefaultNode}
	r.Decode(b)
	r.Settings(&b.ProviderSettings)
	b.Sandbox.Env = r.Env(b.Sandbox.Env)
	b.Sandbox = r.Profile(b.Sandbox)
	b.Enable = nil
	first := map[string]int{}
	for i, it := range r.Field("enable").Items() {
		name, ok := it.String()
		if !ok || !slices.Contains(names, name) {
			continue
		}
		if j, dup := first[name]; dup {
			it.Problem("%q is already enabled at [%d]", name, j)
			continue
		}
		first[name] = i
		b.Enable = append(b.Enable, name)
	}
	hosts := r.Field("http_fetch").Field("allow_hosts")
	b.HTTPFetch.AllowHosts = hosts.Hosts(b.HTTPFetch.AllowHosts)
	if _, on := first["http_fetch"]; on && len(b.HTTPFetch.AllowHosts) == 0 && !hosts.Covered() {
		hosts.Problem("missing: http_fetch is enabled, and a model may only fetch from hosts listed here, such as [\"api.example.com\"]")
	}
	root := r.Field("workspace").Field("root")
	if b.Workspace.Root != "" {
		b.Workspace.Root = r.Resolve(b.Workspace.Root)
	}
	for _, name := range []string{"read_file", "write_file", "list_files"} {
		if _, on := first[name]; on && b.Workspace.Root == "" && !root.Covered() {
			root.Problem("missing: %s is enabled, and the file tools work only inside this folder", name)
			break
		}
	}
	return b
}

func entries(v any) []kind.Entry {
	b := v.(*Config)
	if len(b.Enable) == 0 {
		return nil
	}
	return []kind.Entry{{Path: Key, Node: b.Node, Label: builtin.Name, Profile: b.Sandbox}}
}

func jobs(_ context.Context, v any, h kind.Host) ([]kind.Job, toolspec.Problems) {
	b := v.(*Config)
	if len(b.Enable) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(builtin.Options{Enable: b.Enable, WorkspaceRoot: b.Workspace.Root,
		HTTPFetch: builtin.HTTPFetchOptions{AllowedHosts: b.HTTPFetch.AllowHosts, MaxBytes: b.HTTPFetch.MaxBytes, Timeout: sdk.Duration(b.HTTPFetch.Timeout)}})
	if err != nil {
		return nil, toolspec.Problems{{Path: Key, Message: fmt.Sprintf("encode the builtin tools' options: %v", err)}}
	}
	profile := b.Sandbox
	if fs := profile.Filesystem; fs != nil && b.Workspace.Root != "" {
		// The file tools' folder is theirs to write, whatever else the
		// profile lists.
		profile.Filesystem = &sandbox.Filesystem{Read: fs.Read, Write: append(slices.Clone(fs.Write), b.Workspace.Root)}
	}
	return []kind.Job{{Label: builtin.Name, Path: Key, Node: b.Node, Approve: b.RequireApproval,
		Config: pluginhost.Config{Name: builtin.Name, Command: []string{h.Self, "plugin", builtin.Name}, Options: raw,
			Sandbox: profile, Key: Key, Limits: b.Limits(Key)}}}, nil
}
