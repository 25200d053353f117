// Package mcpservers is the mcp_servers provider kind: MCP servers, in the
// shape desktop MCP clients' "mcpServers" use, bridged to the host by
// package plugins/mcp (one bridge process per ToolNode that has any).
package mcpservers

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/kind"
	"github.com/tenxgraph/tenxgraph/host/pluginhost"
	"github.com/tenxgraph/tenxgraph/internal/expand"
	"github.com/tenxgraph/tenxgraph/internal/sandbox"
	"github.com/tenxgraph/tenxgraph/plugins/mcp"
	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// Key is the kind's key in 10xgraph.json.
const Key = "mcp_servers"

// The bridge is told the tool names its node already has, so MCP servers
// start after the other kinds: Late.
func init() {
	kind.Register(kind.Kind{Key: Key, Schema: schema, Read: read, Late: true, Entries: entries, Jobs: jobs, CheckEnv: checkEnv})
}

// Servers are the entries of mcp_servers.
type Servers struct {
	// ByName are the servers, keyed by the name that prefixes their
	// tools.
	ByName map[string]Server
	// Order lists ByName's keys in file order, so servers start and tools
	// are listed in the order the user wrote them.
	Order []string
}

// Server is one entry of mcp_servers.
type Server struct {
	// ProviderSettings' Timeout keeps the bridge's meaning (it also bounds
	// the connection's start, at least 30s); the bridge enforces them per
	// server.
	config.ProviderSettings
	// Name is the entry's key; it prefixes the server's tool names, so it
	// must be short and plain.
	Name string
	// Type is "stdio", "http" or "sse"; when the file omits it, command
	// means stdio and url means http. LangChain's and Cline's spellings of
	// http ("streamable_http", "streamable-http", "streamableHttp") are
	// accepted and stored as "http", so configs copied from them work.
	Type string `json:"type"`
	// Command starts a stdio server. A relative path containing a
	// separator is made absolute; a bare name is looked up in PATH.
	// ${VAR} references here and in Args, Env, Cwd, URL and Headers
	// (internal/expand's grammar) are kept verbatim for the bridge to
	// expand, so secrets stay out of the file.
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	// Cwd is the stdio server's working directory (absolute). It defaults
	// to the config's folder, so relative paths in Args mean the same as
	// everywhere else in the file.
	Cwd string `json:"cwd"`
	// URL reaches an http or sse server.
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	// MaxOutputBytes caps a tool result handed to the model; a larger one
	// is truncated with a marker. 0 leaves the bridge's default (1 MiB). It
	// must not exceed max_result_bytes, past which a result is an error.
	MaxOutputBytes int64 `json:"max_output_bytes"`
	// Node is the ToolNode offering the server's tools (default "tools").
	Node string `json:"node"`
	// AllowTools, when set, are the only tools offered; DenyTools are
	// hidden. At most one is set: together they would be ambiguous.
	AllowTools []string `json:"allow_tools"`
	DenyTools  []string `json:"deny_tools"`
	// Disabled keeps the entry in the file without starting it.
	Disabled bool `json:"disabled"`
	// Sandbox is what a stdio server's process may have; its Env is Env
	// on top of provider_defaults', ${VAR}s unexpanded.
	Sandbox sandbox.Profile `json:",embed"`
}

// Of is cfg's mcp_servers, nil when the file has none.
func Of(cfg *config.Config) *Servers { return kind.Value[*Servers](cfg, Key) }

// MaxOutputBytes is the largest max_output_bytes of an MCP server: a
// result crosses from the bridge to the host as one gRPC message
// (plugins/mcp.MaxOutputLimit).
const MaxOutputBytes = 192 << 20

// types are mcp_servers' transports, with the other clients' spellings
// of http.
var types = []string{"stdio", "http", "sse", "streamable_http", "streamable-http", "streamableHttp"}

// stdioKeys are the keys only a server started with command takes.
var stdioKeys = []string{"args", "env", "cwd", "pass_env", "limits", "network", "user", "group", "filesystem"}

func schema() *jsonschema.Schema {
	p := config.Property
	server := config.Object("An MCP server, in the shape desktop MCP clients' mcpServers use: command to start a local one, url to reach a remote one.", config.Props([]config.Prop{
		p("type", config.Enum(`"stdio" (started with command), "http" or "sse" (reached by url); left out, command means stdio and url http.`, types...)),
		p("command", config.Text("The executable of a stdio server: a bare name is looked up in PATH, a relative path is relative to this file's folder; ${VAR} takes a host variable.")),
		p("args", config.Array("Its arguments.", config.Str(""))),
		p("env", config.StrMap("Variables set in the server's environment; ${VAR} takes a host variable.")),
		p("cwd", config.Text("Its working directory (default: this file's folder).")),
		p("url", config.Text("The endpoint of an http or sse server.")),
		p("headers", config.StrMap("HTTP headers sent to an http or sse server; ${VAR} takes a host variable.")),
		p("max_output_bytes", config.WithDefault(config.Integer("Caps a tool result handed to the model; a larger one is truncated with a marker. At most max_result_bytes.", 1, MaxOutputBytes), mcp.DefaultMaxOutputBytes)),
		p("node", config.NodeSchema()),
		p("allow_tools", config.Array("The only tools offered (not with deny_tools).", config.Text(""))),
		p("deny_tools", config.Array("Tools hidden (not with allow_tools).", config.Text(""))),
		p("disabled", config.WithDefault(config.Boolean("Keeps the entry without starting it."), false)),
	}, config.SettingProps(), config.EntryProps(), config.ProfileProps(false))...)
	server.OneOf = []*jsonschema.Schema{config.Requires("command"), config.Requires("url")}
	server.AllOf = []*jsonschema.Schema{
		config.When("type", []string{"stdio"}, config.Forbids("url")),
		config.When("type", types[1:], config.Forbids("command")),
		{If: config.Requires("command"), Then: config.Forbids("headers")},
		{If: config.Requires("url"), Then: config.Forbids(stdioKeys...)},
		{Not: config.Requires("allow_tools", "deny_tools")},
	}
	return &jsonschema.Schema{Type: "object", Description: "MCP servers by name; the name prefixes their tools' names when two would collide.",
		PropertyNames: config.Pattern("A server's name prefixes the names of its tools when two would collide, so it is short and plain.", config.ShortNamePattern.String()), AdditionalProperties: server}
}

func read(r *config.Reader) any {
	names := r.Keys()
	if len(names) == 0 || r.Refused() {
		return nil
	}
	servers := &Servers{ByName: make(map[string]Server, len(names)), Order: names}
	for _, name := range names {
		s := Server{Name: name, Node: config.DefaultNode}
		if e := r.Field(name); !e.Refused() {
			s = readServer(e, s)
		}
		servers.ByName[name] = s
	}
	return servers
}

func readServer(r *config.Reader, s Server) Server {
	r.Decode(&s)
	r.Settings(&s.ProviderSettings)
	typ, command, u := r.Field("type"), r.Field("command"), r.Field("url")
	if s.Type == "streamable_http" || s.Type == "streamable-http" || s.Type == "streamableHttp" {
		s.Type = "http"
	}
	switch {
	case command.Present() && u.Present():
		r.Problem("set command (to start a local server) or url (to reach a remote one), not both")
		s.Type = ""
	case !command.Present() && !u.Present():
		r.Problem("missing command (to start a local server) or url (to reach a remote one)")
		s.Type = ""
	case !typ.Present() && command.Present():
		s.Type = "stdio"
	case !typ.Present():
		s.Type = "http"
	case s.Type == "stdio" && u.Present():
		u.Problem("a stdio server is started with command; url is for type \"http\" or \"sse\"")
	case s.Type != "stdio" && s.Type != "" && command.Present():
		command.Problem("an %s server is reached by url; command is for type \"stdio\"", s.Type)
	}
	if cmd := s.Command; !strings.HasPrefix(cmd, "$") && strings.ContainsAny(cmd, `/`+string(filepath.Separator)) {
		s.Command = r.Resolve(cmd)
	}
	if s.Cwd != "" && !strings.HasPrefix(s.Cwd, "$") {
		s.Cwd = r.Resolve(s.Cwd)
	}
	if lit, ok := literal(s.URL); ok && s.URL != "" { // one with ${VAR}s is checked once expanded
		if err := config.CheckURL(lit); err != nil {
			u.Problem("%v", err)
		}
	}
	headers := r.Field("headers")
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		err := checkHeaderName(k)
		if err == nil {
			err = checkHeaderValue(s.Headers[k])
		}
		if err != nil {
			headers.Field(k).Problem("%v", err)
			delete(s.Headers, k)
		}
	}
	if out, res := cmp.Or(s.MaxOutputBytes, mcp.DefaultMaxOutputBytes), cmp.Or(s.MaxResultBytes, config.DefaultMaxResultBytes); out > res {
		r.Field("max_output_bytes").Problem("%d is more than max_result_bytes (%d): a result the bridge truncates to this size would still be refused; lower it or raise max_result_bytes", out, res)
	}
	if r.Field("allow_tools").Present() && r.Field("deny_tools").Present() {
		r.Field("deny_tools").Problem("set allow_tools or deny_tools, not both")
	}
	s.Env = r.Env(s.Env)
	s.Sandbox.Env = s.Env
	s.Sandbox = r.Profile(s.Sandbox)
	// Keys of the other transport are mistakes the server would ignore.
	switch s.Type {
	case "stdio":
		if headers.Present() {
			headers.Problem("only used by \"http\" and \"sse\" servers (reached by url)")
		}
		if s.Cwd == "" {
			s.Cwd = r.Dir()
		}
	case "http", "sse":
		for _, k := range stdioKeys {
			if f := r.Field(k); f.Present() {
				f.Problem("only used by \"stdio\" servers (started with command)")
			}
		}
	}
	// What the bridge expands is held to the secrets rule once the whole
	// file is read.
	command.Expression(s.Command, true)
	for i, a := range s.Args {
		r.Field("args").Index(i).Expression(a, true)
	}
	r.Field("cwd").Expression(s.Cwd, false)
	u.Expression(s.URL, false)
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		headers.Field(k).Expression(s.Headers[k], false)
	}
	return s
}

// literal is the value of s when it names no variable.
func literal(s string) (string, bool) {
	e, err := expand.Parse(s)
	if err != nil || !e.Literal() {
		return "", false
	}
	v, err := e.Expand(func(string) (string, bool) { return "", false })
	return v, err == nil
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

// enabled are the servers that start, in file order.
func (ss *Servers) enabled() []Server {
	var out []Server
	for _, name := range ss.Order {
		if s := ss.ByName[name]; !s.Disabled {
			out = append(out, s)
		}
	}
	return out
}

// path is a server's config path.
func (s Server) path() string { return toolspec.Join(Key, s.Name) }

func entries(v any) []kind.Entry {
	var out []kind.Entry
	for _, s := range v.(*Servers).enabled() {
		e := kind.Entry{Path: s.path(), Node: s.Node, Label: Key + "." + s.Name, Profile: s.Sandbox}
		if s.Type != "stdio" {
			e.Profile, e.Remote = sandbox.Profile{}, "reached at its url; no process of its own (its bridge: "+(sandbox.Profile{}).Describe()+")"
		}
		out = append(out, e)
	}
	return out
}

// checkEnv reports each ${VAR} of an enabled server's settings the host's
// environment cannot expand, as the bridge would expand it.
func checkEnv(v any, h kind.Host) toolspec.Problems {
	var ps toolspec.Problems
	for _, s := range v.(*Servers).enabled() {
		_, problems := bridged(s).Expanded(h.Vars)
		for _, p := range problems {
			path := toolspec.Join(s.path(), p.Path)
			if k, ok := strings.CutPrefix(p.Path, "env."); ok {
				path = toolspec.Join(h.EnvPath(s.path(), s.Sandbox.Env, k), k)
			}
			ps.Add(path, "%s", p.Message)
		}
	}
	return ps
}

// timeoutMargin is how much longer than its servers' timeouts the host
// waits for an MCP bridge: the bridge enforces each server's limits itself
// and says which one ran out; the host's bound is for a bridge that hangs.
const timeoutMargin = 5 * time.Second

// jobs are the MCP bridges for the enabled servers: one process per node
// that has any (nearly always just "tools"), so that each bridge is a
// plain provider of one node, naming its tools uniquely on that node,
// which is where tool names must be unique. Each is told its node's
// other tools' names (h.Taken), so that a server tool with a taken name is
// offered under its server's prefix instead of colliding.
func jobs(_ context.Context, v any, h kind.Host) ([]kind.Job, toolspec.Problems) {
	var nodes []string
	byNode := map[string][]mcp.Server{}
	wait := map[string]time.Duration{}
	bound := map[string]pluginhost.Limits{}
	for _, sc := range v.(*Servers).enabled() {
		if _, ok := byNode[sc.Node]; !ok {
			nodes = append(nodes, sc.Node)
		}
		byNode[sc.Node] = append(byNode[sc.Node], bridged(sc))
		wait[sc.Node] = max(wait[sc.Node], sc.Timeout, mcp.DefaultTimeout)
		l, b := sc.Limits(Key), bound[sc.Node]
		for _, d := range sc.ToolTimeouts {
			l.Timeout = max(l.Timeout, d)
		}
		bound[sc.Node] = pluginhost.Limits{Timeout: max(b.Timeout, l.Timeout+timeoutMargin), Key: l.Key,
			MaxArgumentBytes: max(b.MaxArgumentBytes, l.MaxArgumentBytes), MaxResultBytes: max(b.MaxResultBytes, l.MaxResultBytes)}
	}
	var out []kind.Job
	for _, node := range nodes {
		opts := mcp.Options{Servers: byNode[node], Taken: h.Taken(node),
			Vars: vars(byNode[node], h.Vars), WireLog: os.Getenv(mcp.EnvWireLog)}
		raw, err := json.Marshal(opts)
		if err != nil {
			return nil, toolspec.Problems{{Path: Key, Message: fmt.Sprintf("encode the MCP bridge's options: %v", err)}}
		}
		name := mcp.Name
		if len(nodes) > 1 {
			name = mcp.Name + ":" + node
		}
		// The bridge itself gets only the base environment and the host's
		// network: each server's own profile is applied when the bridge
		// starts it, and the values it may see travel with Configure.
		out = append(out, kind.Job{Label: name, Path: Key, Node: node, Config: pluginhost.Config{Name: name,
			Command: []string{h.Self, "plugin", mcp.Name}, Options: raw, Key: Key,
			// It stops its servers (stdin closed, SIGTERM, SIGKILL, a second
			// each) before it exits; each server is the target of an init of
			// its own, which takes the server's processes along however it
			// ends.
			StopTimeout:  2*mcp.StopGrace + time.Second,
			StartTimeout: wait[node] + 30*time.Second, Limits: bound[node]}})
	}
	return out, nil
}

// bridged is an entry as the bridge takes it. Its env is the profile's
// (provider_defaults' under the entry's), and each pass_env name becomes
// an env entry whose value travels in Options.Vars. Its limits are
// included: the bridge knows which server a tool belongs to, so it
// enforces them.
func bridged(sc Server) mcp.Server {
	l := sc.Limits("")
	env := maps.Clone(sc.Sandbox.Env)
	for _, k := range sc.Sandbox.PassEnv {
		if _, ok := os.LookupEnv(k); ok {
			if env == nil {
				env = map[string]string{}
			}
			env[k] = "${" + k + "}"
		}
	}
	profile := sc.Sandbox
	profile.Env, profile.PassEnv = nil, nil
	tools := make(map[string]sdk.Duration, len(sc.ToolTimeouts))
	for name, d := range sc.ToolTimeouts {
		tools[name] = sdk.Duration(d)
	}
	return mcp.Server{Name: sc.Name, Type: sc.Type, Command: sc.Command, Args: sc.Args, Env: env, Cwd: sc.Cwd,
		URL: sc.URL, Headers: sc.Headers, Timeout: sdk.Duration(sc.Timeout), AllowTools: sc.AllowTools, DenyTools: sc.DenyTools,
		MaxOutputBytes: sc.MaxOutputBytes, Sandbox: profile, ToolTimeouts: tools,
		RequireApprovalAll: sc.RequireApproval.All, RequireApproval: sc.RequireApproval.Tools,
		MaxArgumentBytes: l.MaxArgumentBytes, MaxResultBytes: l.MaxResultBytes}
}

// vars are the host variables the servers' ${VAR}s name, wherever in
// their expressions, with their values read by lookup: the values the
// bridge expands them with, as it has no other way to see them.
func vars(servers []mcp.Server, lookup func(string) (string, bool)) map[string]string {
	out := map[string]string{}
	for _, s := range servers {
		for _, k := range s.Vars() {
			if v, ok := lookup(k); ok {
				out[k] = v
			}
		}
	}
	return out
}
