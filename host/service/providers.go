package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/pluginhost"
	"github.com/tenxgraph/tenxgraph/host/remotetool"
	"github.com/tenxgraph/tenxgraph/host/toolnode"
	"github.com/tenxgraph/tenxgraph/internal/expand"
	"github.com/tenxgraph/tenxgraph/internal/sandbox"
	"github.com/tenxgraph/tenxgraph/plugins/builtin"
	"github.com/tenxgraph/tenxgraph/plugins/mcp"
	"github.com/tenxgraph/tenxgraph/plugins/remote"
	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// Names of the providers this binary serves itself; plugins may not take
// them.
const (
	builtinName = builtin.Name
	bridgeName  = remote.Name
	mcpName     = mcp.Name
)

// startProviders starts every provider plugin of the config at once (start
// time is that of the slowest, not the sum) and files them by node. The
// remote bridge always runs: any run may bring client tools.
func (s *Service) startProviders(ctx context.Context, opts Options, env *agent.Env) error {
	s.startedProviders = true
	cfg := s.Config
	self := opts.Executable
	if self == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find this program to serve the builtin providers: %w", err)
		}
		self = exe
	}
	log := opts.Logger
	if log == nil {
		log = DefaultLogger()
	}
	type job struct {
		label   string // the process's name in Profiles
		path    string // config path for errors
		node    string // "" for the bridge
		cfg     pluginhost.Config
		approve config.Approval
	}
	jobs := []job{{label: bridgeName, path: "remote_tools", cfg: pluginhost.Config{Name: bridgeName, Command: []string{self, "plugin", "remote"},
		Sandbox: cfg.SandboxDefaults, Key: "provider_defaults"}}}
	if bt := cfg.BuiltinTools; bt != nil && len(bt.Enable) > 0 {
		raw, err := json.Marshal(builtin.Options{Enable: bt.Enable, WorkspaceRoot: bt.Workspace.Root,
			HTTPFetch: builtin.HTTPFetchOptions{AllowedHosts: bt.HTTPFetch.AllowHosts, MaxBytes: bt.HTTPFetch.MaxBytes, Timeout: bt.HTTPFetch.Timeout}})
		if err != nil {
			return fmt.Errorf("builtin_tools: %w", err)
		}
		profile := bt.Sandbox
		if fs := profile.Filesystem; fs != nil && bt.Workspace.Root != "" {
			// The file tools' folder is theirs to write, whatever else the
			// profile lists.
			profile.Filesystem = &sandbox.Filesystem{Read: fs.Read, Write: append(slices.Clone(fs.Write), bt.Workspace.Root)}
		}
		jobs = append(jobs, job{label: builtinName, path: "builtin_tools", node: bt.Node, cfg: pluginhost.Config{Name: builtinName,
			Command: []string{self, "plugin", "builtin"}, Options: raw, Sandbox: profile, Key: "builtin_tools",
			Limits: bt.ProviderSettings.Limits("builtin_tools")}, approve: bt.RequireApproval})
	}
	var ps toolspec.Problems
	for i, pl := range cfg.Plugins {
		if pl.Name == builtinName || pl.Name == bridgeName || pl.Name == mcpName {
			ps.Add(fmt.Sprintf("plugins[%d].name", i), "%q is the name of a provider tenxgraph serves itself; choose another", pl.Name)
			continue
		}
		key := fmt.Sprintf("plugins[%d]", i)
		jobs = append(jobs, job{label: fmt.Sprintf("%s %s", key, pl.Name), path: key, node: pl.Node, cfg: pluginConfig(pl, key), approve: pl.RequireApproval})
	}
	// Each profile's env is expanded here, from the host's environment:
	// the launcher sets literal values.
	vars := hostVars(cfg)
	for i := range jobs {
		env, problems := expandEnv(jobs[i].cfg.Sandbox.Env, vars)
		for _, p := range problems {
			ps.Add(toolspec.Join(envPath(cfg, jobs[i].path, jobs[i].cfg.Sandbox.Env, p.Path), p.Path), "%s", p.Message)
		}
		jobs[i].cfg.Sandbox.Env = env
	}
	if len(ps) > 0 {
		return ps
	}
	started := make([]*pluginhost.Plugin, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.cfg.Logger = log
			j.cfg.Deny, j.cfg.Trampoline = cfg.Secrets(), self
			started[i], errs[i] = pluginhost.Start(ctx, j.cfg)
		}()
	}
	wg.Wait()
	for i, j := range jobs {
		var refused toolspec.Problems // options the plugin's options schema refuses, at their paths
		switch {
		case errors.As(errs[i], &refused):
			ps = append(ps, refused...)
			continue
		case errs[i] != nil:
			ps.Add(j.path, "%v", errs[i])
			continue
		}
		s.providers = append(s.providers, started[i])
		s.process(j.label, started[i])
		checkToolTimeouts(ctx, started[i], j.path, j.cfg.Prefix, j.cfg.Limits.ToolTimeouts, &ps)
		var p sdk.Provider = started[i]
		if j.approve.Set() {
			// Names are the plugin's own, like tool_timeouts'; the node
			// knows its tools by their prefixed names.
			checkApprovals(ctx, started[i], j.path, j.cfg.Prefix, j.approve.Tools, &ps)
			var names []string
			for _, n := range j.approve.Tools {
				names = append(names, j.cfg.Prefix+n)
			}
			p = toolnode.RequireApproval(p, names)
		}
		if j.node == "" {
			env.Bridge = started[i]
		} else {
			env.Providers[j.node] = append(env.Providers[j.node], p)
		}
	}
	if len(ps) > 0 {
		return ps
	}
	return s.startMCP(ctx, self, log, env)
}

// pluginConfig is a plugins[] entry as the plugin host takes it; key is
// its config path.
func pluginConfig(pl config.Plugin, key string) pluginhost.Config {
	return pluginhost.Config{Name: pl.Name, Command: pl.Command, SHA256: pl.SHA256, Lazy: pl.Start == "lazy", Prefix: pl.Prefix,
		Sandbox: pl.Sandbox, Key: key, Dir: pl.Cwd, Limits: pl.ProviderSettings.Limits(key), Options: pl.Options}
}

// optionProblems checks the options of each plugins[] entry that has
// options, and no problem so far, against the options schema its plugin
// declares, for a config whose providers are not started because of other
// mistakes: each such plugin is started, asked for its schema, checked,
// and stopped, so that validate still lists every mistake in one pass. A
// plugin that fails to start says so at its entry.
func optionProblems(ctx context.Context, cfg *config.Config, opts Options, have toolspec.Problems) toolspec.Problems {
	self, log := opts.Executable, opts.Logger
	if self == "" {
		self, _ = os.Executable()
	}
	if log == nil {
		log = DefaultLogger()
	}
	vars := hostVars(cfg)
	var pcs []pluginhost.Config
	for i, pl := range cfg.Plugins {
		key := fmt.Sprintf("plugins[%d]", i)
		if pl.Options == nil || len(pl.Command) == 0 || slices.ContainsFunc(have, func(p sdk.Problem) bool {
			return p.Path == key || strings.HasPrefix(p.Path, key+".") || strings.HasPrefix(p.Path, key+"[")
		}) {
			continue
		}
		pc := pluginConfig(pl, key)
		env, problems := expandEnv(pc.Sandbox.Env, vars)
		if len(problems) > 0 {
			continue // reported by the env check
		}
		pc.Sandbox.Env, pc.Lazy, pc.Logger, pc.Deny, pc.Trampoline = env, true, log, cfg.Secrets(), self
		pcs = append(pcs, pc)
	}
	errs := make([]error, len(pcs))
	var wg sync.WaitGroup
	for i, pc := range pcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := pluginhost.Start(ctx, pc) // lazy: started, read and stopped
			if err == nil {
				err = p.Shutdown(context.WithoutCancel(ctx))
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	var ps toolspec.Problems
	for i, err := range errs {
		var refused toolspec.Problems
		switch {
		case errors.As(err, &refused):
			ps = append(ps, refused...)
		case err != nil:
			ps.Add(pcs[i].Key, "%v", err)
		}
	}
	return ps
}

// startMCP starts the MCP bridge for the enabled mcp_servers: one process
// per node that has any (nearly always just "tools"), so that each bridge
// is a plain provider of one node, naming its tools uniquely on that node,
// which is where tool names must be unique. It starts after the other
// providers: it is told their tools' names on its node, and the configured
// remote tools', so that a server tool with a taken name is offered under
// its server's prefix instead of colliding.
func (s *Service) startMCP(ctx context.Context, self string, log hclog.Logger, env *agent.Env) error {
	cfg := s.Config
	var nodes []string
	byNode := map[string][]mcp.Server{}
	wait := map[string]time.Duration{}
	bound := map[string]pluginhost.Limits{}
	for _, name := range cfg.MCPServerOrder {
		sc := cfg.MCPServers[name]
		if sc.Disabled {
			continue
		}
		if _, ok := byNode[sc.Node]; !ok {
			nodes = append(nodes, sc.Node)
		}
		byNode[sc.Node] = append(byNode[sc.Node], mcpServer(sc))
		wait[sc.Node] = max(wait[sc.Node], sc.Timeout, mcp.DefaultTimeout)
		l, b := sc.ProviderSettings.Limits("mcp_servers"), bound[sc.Node]
		for _, d := range sc.ToolTimeouts {
			l.Timeout = max(l.Timeout, d)
		}
		bound[sc.Node] = pluginhost.Limits{Timeout: max(b.Timeout, l.Timeout+mcpTimeoutMargin), Key: l.Key,
			MaxArgumentBytes: max(b.MaxArgumentBytes, l.MaxArgumentBytes), MaxResultBytes: max(b.MaxResultBytes, l.MaxResultBytes)}
	}
	if len(nodes) == 0 {
		return nil
	}
	started := make([]*pluginhost.Plugin, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, node := range nodes {
		opts := mcp.Options{Servers: byNode[node], Taken: takenNames(ctx, env.Providers[node], cfg.RemoteTools, node),
			Vars: mcpVars(byNode[node], hostVars(cfg)), WireLog: os.Getenv(mcp.EnvWireLog)}
		raw, err := opts.Encode()
		if err != nil {
			return err
		}
		name := mcpName
		if len(nodes) > 1 {
			name = mcpName + ":" + node
		}
		// The bridge itself gets only the base environment and the host's
		// network: each server's own profile is applied when the bridge
		// starts it, and the values it may see travel with Configure.
		pc := pluginhost.Config{Name: name, Command: []string{self, "plugin", "mcp"}, Options: raw,
			Key: "mcp_servers", Deny: cfg.Secrets(), Trampoline: self,
			// It stops its servers (stdin closed, SIGTERM, SIGKILL, a second
			// each) before it exits; each server is the target of an init of
			// its own, which takes the server's processes along however it
			// ends.
			StopTimeout: 2*mcp.StopGrace + time.Second,
			Logger:      log, StartTimeout: wait[node] + 30*time.Second, Limits: bound[node]}
		wg.Add(1)
		go func() {
			defer wg.Done()
			started[i], errs[i] = pluginhost.Start(ctx, pc)
		}()
	}
	wg.Wait()
	var ps toolspec.Problems
	for i, node := range nodes {
		if errs[i] != nil {
			ps.Add("mcp_servers", "%v", errs[i])
			continue
		}
		s.providers = append(s.providers, started[i])
		s.process(started[i].Name(), started[i])
		env.Providers[node] = append(env.Providers[node], started[i])
	}
	if len(ps) > 0 {
		return ps
	}
	return nil
}

// mcpServer is a config entry as the bridge takes it. Its env is the
// profile's (provider_defaults' under the entry's), and each pass_env name
// becomes an env entry whose value travels in Options.Vars. Its limits are
// included: the bridge knows which server a tool belongs to, so it
// enforces them.
func mcpServer(sc config.MCPServer) mcp.Server {
	l := sc.ProviderSettings.Limits("")
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
	return mcp.Server{Name: sc.Name, Type: sc.Type, Command: sc.Command, Args: sc.Args, Env: env, Cwd: sc.Cwd,
		URL: sc.URL, Headers: sc.Headers, Timeout: sc.Timeout, AllowTools: sc.AllowTools, DenyTools: sc.DenyTools,
		MaxOutputBytes: sc.MaxOutputBytes, Sandbox: profile, ToolTimeouts: sc.ToolTimeouts,
		RequireApprovalAll: sc.RequireApproval.All, RequireApproval: sc.RequireApproval.Tools,
		MaxArgumentBytes: l.MaxArgumentBytes, MaxResultBytes: l.MaxResultBytes}
}

// mcpVars are the host variables the servers' ${VAR}s name, wherever in
// their expressions, with their values read by lookup: the values the
// bridge expands them with, as it has no other way to see them.
func mcpVars(servers []mcp.Server, lookup func(string) (string, bool)) map[string]string {
	vars := map[string]string{}
	for _, s := range servers {
		for _, k := range s.Vars() {
			if v, ok := lookup(k); ok {
				vars[k] = v
			}
		}
	}
	return vars
}

// hostVars looks a variable up in the host's environment, except the
// host's own secrets, which read as unset whatever a config that escaped
// the check names: no expansion ever reads them.
func hostVars(cfg *config.Config) func(string) (string, bool) {
	secrets := cfg.Secrets()
	return func(k string) (string, bool) {
		if slices.Contains(secrets, k) {
			return "", false
		}
		return os.LookupEnv(k)
	}
}

// expandEnv expands a profile's env, each value by the grammar of
// internal/expand; a problem's path is the variable's name.
func expandEnv(env map[string]string, lookup func(string) (string, bool)) (map[string]string, toolspec.Problems) {
	if env == nil {
		return nil, nil
	}
	var ps toolspec.Problems
	out := make(map[string]string, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v, err := expand.String(env[k], lookup)
		if err != nil {
			ps.Add(k, "%v", err)
			continue
		}
		out[k] = v
	}
	return out, ps
}

// envPath is the config path of the env where a provider entry's
// variable k is set: provider_defaults' when the entry has the default's
// value, else the entry's own.
func envPath(cfg *config.Config, entry string, env map[string]string, k string) string {
	if d, ok := cfg.SandboxDefaults.Env[k]; entry == "remote_tools" || ok && env[k] == d {
		return "provider_defaults.env"
	}
	return toolspec.Join(entry, "env")
}

// mcpTimeoutMargin is how much longer than its servers' timeouts the host
// waits for an MCP bridge: the bridge enforces each server's limits itself
// and says which one ran out; the host's bound is for a bridge that hangs.
const mcpTimeoutMargin = 5 * time.Second

// checkToolTimeouts reports each tool_timeouts entry naming a tool the
// provider does not have: a misspelt name would leave that tool on the
// default without a word.
// They name the provider's own tools, before any prefix.
func checkToolTimeouts(ctx context.Context, p sdk.Provider, path, prefix string, timeouts map[string]time.Duration, ps *toolspec.Problems) {
	if len(timeouts) == 0 {
		return
	}
	md, err := p.Metadata(ctx, sdk.MetadataRequest{})
	if err != nil {
		return
	}
	have := make([]string, len(md.Tools))
	for i, t := range md.Tools {
		have[i] = strings.TrimPrefix(t.Name, prefix)
	}
	for _, name := range slices.Sorted(maps.Keys(timeouts)) {
		if !slices.Contains(have, name) {
			ps.Add(path+".tool_timeouts."+name, "the provider has no tool %q (its tools: %s)", name, strings.Join(have, ", "))
		}
	}
}

// checkApprovals reports each require_approval name the provider does not
// have: a misspelt name would let that tool run unasked.
func checkApprovals(ctx context.Context, p sdk.Provider, path, prefix string, names []string, ps *toolspec.Problems) {
	if len(names) == 0 {
		return
	}
	md, err := p.Metadata(ctx, sdk.MetadataRequest{})
	if err != nil {
		ps.Add(path+".require_approval", "could not list the provider's tools to check the names: %v", err)
		return
	}
	have := make([]string, len(md.Tools))
	for i, t := range md.Tools {
		have[i] = strings.TrimPrefix(t.Name, prefix)
	}
	for i, name := range names {
		if !slices.Contains(have, name) {
			ps.Add(fmt.Sprintf("%s.require_approval[%d]", path, i), "the provider has no tool %q (its tools: %s)", name, strings.Join(have, ", "))
		}
	}
}

// takenNames are the tools a node has besides its MCP servers': its other
// providers' and its configured remote tools'.
func takenNames(ctx context.Context, providers []sdk.Provider, remoteTools []graph.RemoteToolConfig, node string) []string {
	var names []string
	for _, p := range providers {
		if md, err := p.Metadata(ctx, sdk.MetadataRequest{}); err == nil {
			for _, t := range md.Tools {
				names = append(names, t.Name)
			}
		}
	}
	for _, rt := range remoteTools {
		if rt.Node == node {
			names = append(names, rt.Name)
		}
	}
	return names
}

// checkEnv reports each ${VAR} of the config that cannot be expanded from
// the host's environment (a variable not set, with no default), at its
// config path, before anything starts: every provider's env, and each
// enabled MCP server's settings.
func checkEnv(cfg *config.Config, ps *toolspec.Problems) {
	vars := hostVars(cfg)
	seen := map[sdk.Problem]bool{}
	add := func(path, msg string) {
		if p := (sdk.Problem{Path: path, Message: msg}); !seen[p] {
			seen[p] = true
			ps.Add(path, "%s", msg)
		}
	}
	profiles := map[string]map[string]string{"remote_tools": cfg.SandboxDefaults.Env}
	if bt := cfg.BuiltinTools; bt != nil && len(bt.Enable) > 0 {
		profiles["builtin_tools"] = bt.Sandbox.Env
	}
	for i, pl := range cfg.Plugins {
		profiles[fmt.Sprintf("plugins[%d]", i)] = pl.Sandbox.Env
	}
	for _, entry := range slices.Sorted(maps.Keys(profiles)) {
		_, problems := expandEnv(profiles[entry], vars)
		for _, p := range problems {
			add(toolspec.Join(envPath(cfg, entry, profiles[entry], p.Path), p.Path), p.Message)
		}
	}
	for _, name := range cfg.MCPServerOrder {
		sc := cfg.MCPServers[name]
		if sc.Disabled {
			continue
		}
		entry := toolspec.Join("mcp_servers", name)
		_, problems := mcpServer(sc).Expanded(vars)
		for _, p := range problems {
			path := toolspec.Join(entry, p.Path)
			if k, ok := strings.CutPrefix(p.Path, "env."); ok {
				path = toolspec.Join(envPath(cfg, entry, sc.Sandbox.Env, k), k)
			}
			add(path, p.Message)
		}
	}
}

// DefaultLogger logs to stderr at the level named by TENXGRAPH_LOG_LEVEL
// (trace, debug, info, warn, error, off), warn when unset: quiet enough for a
// terminal conversation, loud enough to show a plugin in trouble.
func DefaultLogger() hclog.Logger {
	level := hclog.LevelFromString(os.Getenv("TENXGRAPH_LOG_LEVEL"))
	if level == hclog.NoLevel {
		level = hclog.Warn
	}
	return hclog.New(&hclog.LoggerOptions{Name: "tenxgraph", Level: level, Output: os.Stderr})
}

// ServePlugin serves one of the providers this binary holds, by name; it is
// what `tenxgraph plugin NAME` runs.
func ServePlugin(name string) error {
	switch name {
	case builtinName:
		sdk.Serve(sdk.Configured(func(_ context.Context, raw json.RawMessage) (sdk.Provider, error) {
			opts, err := builtin.ParseOptions(raw)
			if err != nil {
				return nil, fmt.Errorf("builtin tools options: %w", err)
			}
			return builtin.New(opts)
		}))
	case bridgeName:
		sdk.Serve(remote.New())
	case mcpName:
		log := hclog.New(&hclog.LoggerOptions{
			Level:      hclog.LevelFromString(os.Getenv("TENXGRAPH_PLUGIN_LOG_LEVEL")),
			Output:     os.Stderr,
			JSONFormat: true,
		})
		var bridge atomic.Pointer[mcp.Bridge]
		sdk.Serve(sdk.Configured(func(_ context.Context, raw json.RawMessage) (sdk.Provider, error) {
			opts, err := mcp.ParseOptions(raw)
			if err != nil {
				return nil, fmt.Errorf("MCP bridge options: %w", err)
			}
			b, err := mcp.New(opts, log)
			bridge.Store(b)
			return b, err
		}), sdk.WithLogger(log))
		// The host closed the connection: no server outlives the bridge.
		if b := bridge.Load(); b != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*mcp.StopGrace+time.Second)
			_ = b.Shutdown(ctx)
			cancel()
		}
	default:
		return fmt.Errorf("no provider named %q (this binary serves %s, %s and %s)", name, builtinName, bridgeName, mcpName)
	}
	return nil
}

// Profile is one provider process's effective sandbox profile, and the
// isolation the kernel gave it, as `tenxgraph tools` shows them.
type Profile struct {
	// Provider names the process ("builtin", "plugins[0] weather",
	// "mcp_servers.files").
	Provider string
	// Profile is what it may have, in one line.
	Profile string
	// Isolation is what the kernel gave the process (sandbox.Isolation),
	// in one line; for an MCP server, what its bridge gives it on this
	// host.
	Isolation string
	// Warnings say where that isolation is weak.
	Warnings []string
}

// process files a started provider process under its name in Profiles.
func (s *Service) process(name string, p *pluginhost.Plugin) {
	if s.processes == nil {
		s.processes = map[string]*pluginhost.Plugin{}
	}
	s.processes[name] = p
}

// Profiles lists the sandbox profile of every process the config starts,
// with provider_defaults applied, and the isolation each got.
func (s *Service) Profiles() []Profile {
	cfg := s.Config
	var out []Profile
	add := func(name string, p sandbox.Profile) {
		iso := sandbox.Predict(p)
		if pl := s.processes[name]; pl != nil {
			if got, ok := pl.Isolation(); ok {
				iso = got
			}
		}
		out = append(out, Profile{Provider: name, Profile: p.Describe(), Isolation: iso.String(), Warnings: iso.Warnings})
	}
	add(bridgeName, cfg.SandboxDefaults)
	if bt := cfg.BuiltinTools; bt != nil && len(bt.Enable) > 0 {
		add(builtinName, bt.Sandbox)
	}
	for i, p := range cfg.Plugins {
		add(fmt.Sprintf("plugins[%d] %s", i, p.Name), p.Sandbox)
	}
	var bridges []string
	for name := range s.processes {
		if name == mcpName || strings.HasPrefix(name, mcpName+":") {
			bridges = append(bridges, name)
		}
	}
	slices.Sort(bridges)
	for _, name := range bridges {
		add(name, sandbox.Profile{})
	}
	for _, name := range cfg.MCPServerOrder {
		sc := cfg.MCPServers[name]
		switch {
		case sc.Disabled:
		case sc.Type == "stdio":
			add("mcp_servers."+name, sc.Sandbox)
		default:
			out = append(out, Profile{Provider: "mcp_servers." + name, Profile: "reached at its url; no process of its own (its bridge: " + (sandbox.Profile{}).Describe() + ")"})
		}
	}
	return out
}

// IsolationWarnings groups the warnings of Profiles by text: each with
// the processes it concerns, in order.
func IsolationWarnings(ps []Profile) []string {
	var order []string
	who := map[string][]string{}
	for _, p := range ps {
		for _, w := range p.Warnings {
			if _, ok := who[w]; !ok {
				order = append(order, w)
			}
			who[w] = append(who[w], p.Provider)
		}
	}
	out := make([]string, len(order))
	for i, w := range order {
		out[i] = strings.Join(who[w], ", ") + ": " + w
	}
	return out
}

// providerNodes lists each provider entry's node with its config path.
func providerNodes(cfg *config.Config) (paths, nodes []string) {
	if bt := cfg.BuiltinTools; bt != nil && len(bt.Enable) > 0 {
		paths, nodes = append(paths, "builtin_tools.node"), append(nodes, bt.Node)
	}
	for _, name := range cfg.MCPServerOrder {
		if sc := cfg.MCPServers[name]; !sc.Disabled {
			paths, nodes = append(paths, toolspec.Join(toolspec.Join("mcp_servers", name), "node")), append(nodes, sc.Node)
		}
	}
	for i, pl := range cfg.Plugins {
		paths, nodes = append(paths, fmt.Sprintf("plugins[%d].node", i)), append(nodes, pl.Node)
	}
	return paths, nodes
}

// checkProviderNodes reports each provider entry whose node the graph does
// not have, or that is not a ToolNode, as AttachRemoteTools does for remote
// tools: the graph's builder takes only the providers of its own ToolNodes,
// and the tools of any other would vanish without a word.
func checkProviderNodes(g *graph.StateGraph, cfg *config.Config, ps *toolspec.Problems) {
	toolNodes := remotetool.ToolNodes(g)
	list := "none"
	if len(toolNodes) > 0 {
		list = strings.Join(toolNodes, ", ")
	}
	paths, nodes := providerNodes(cfg)
	for i, node := range nodes {
		switch {
		case slices.Contains(toolNodes, node):
		case g.Node(node) != nil:
			ps.Add(paths[i], "node %q is not a ToolNode (ToolNodes: %s)", node, list)
		default:
			ps.Add(paths[i], "graph %q has no node %q (ToolNodes: %s)", cfg.Agent, node, list)
		}
	}
}
