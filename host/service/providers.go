package service

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/pluginhost"
	"github.com/tenxgraph/tenxgraph/host/toolspec"
	"github.com/tenxgraph/tenxgraph/plugins/builtin"
	"github.com/tenxgraph/tenxgraph/plugins/mcp"
	"github.com/tenxgraph/tenxgraph/plugins/remote"
	"github.com/tenxgraph/tenxgraph/sdk"
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
		path string // config path for errors
		node string // "" for the bridge
		cfg  pluginhost.Config
	}
	jobs := []job{{path: "remote_tools", cfg: pluginhost.Config{Name: bridgeName, Command: []string{self, "plugin", "remote"}}}}
	if bt := cfg.BuiltinTools; bt != nil && len(bt.Enable) > 0 {
		raw, err := json.Marshal(builtin.Options{Enable: bt.Enable, WorkspaceRoot: bt.Workspace.Root,
			HTTPFetch: builtin.HTTPFetchOptions{AllowedHosts: bt.HTTPFetch.AllowHosts, MaxBytes: bt.HTTPFetch.MaxBytes, Timeout: bt.HTTPFetch.Timeout}})
		if err != nil {
			return fmt.Errorf("builtin_tools: %w", err)
		}
		jobs = append(jobs, job{path: "builtin_tools", node: bt.Node, cfg: pluginhost.Config{Name: builtinName,
			Command: []string{self, "plugin", "builtin"}, Env: map[string]string{builtin.EnvOptions: string(raw)},
			Limits: limits(bt.ProviderSettings, "builtin_tools")}})
	}
	var ps toolspec.Problems
	for i, pl := range cfg.Plugins {
		if pl.Name == builtinName || pl.Name == bridgeName || pl.Name == mcpName {
			ps.Add(fmt.Sprintf("plugins[%d].name", i), "%q is the name of a provider tenxgraph serves itself; choose another", pl.Name)
			continue
		}
		path := fmt.Sprintf("plugins[%d]", i)
		jobs = append(jobs, job{path: path, node: pl.Node, cfg: pluginhost.Config{
			Name: pl.Name, Command: pl.Command, SHA256: pl.SHA256, Env: pl.Env, Lazy: pl.Start == "lazy",
			Limits: limits(pl.ProviderSettings, path)}})
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
			started[i], errs[i] = pluginhost.Start(ctx, j.cfg)
		}()
	}
	wg.Wait()
	for i, j := range jobs {
		if errs[i] != nil {
			ps.Add(j.path, "%v", errs[i])
			continue
		}
		s.providers = append(s.providers, started[i])
		checkToolTimeouts(ctx, started[i], j.path, j.cfg.Limits.ToolTimeouts, &ps)
		if j.node == "" {
			env.Bridge = started[i]
		} else {
			env.Providers[j.node] = append(env.Providers[j.node], started[i])
		}
	}
	if len(ps) > 0 {
		return ps
	}
	return s.startMCP(ctx, self, log, env)
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
		l, b := limits(sc.ProviderSettings, "mcp_servers"), bound[sc.Node]
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
		opts := mcp.Options{Servers: byNode[node], Taken: takenNames(ctx, env.Providers[node], cfg.RemoteTools, node)}
		kv, err := opts.Environ()
		if err != nil {
			return err
		}
		k, v, _ := strings.Cut(kv, "=")
		name := mcpName
		if len(nodes) > 1 {
			name = mcpName + ":" + node
		}
		pc := pluginhost.Config{Name: name, Command: []string{self, "plugin", "mcp"}, Env: map[string]string{k: v},
			Logger: log, StartTimeout: wait[node] + 30*time.Second, Limits: bound[node]}
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
		env.Providers[node] = append(env.Providers[node], started[i])
	}
	if len(ps) > 0 {
		return ps
	}
	return nil
}

// mcpTimeoutMargin is how much longer than its servers' timeouts the host
// waits for an MCP bridge: the bridge enforces each server's limits itself
// and says which one ran out; the host's bound is for a bridge that hangs.
const mcpTimeoutMargin = 5 * time.Second

// mcpServer is a config entry as the bridge takes it, limits included: the
// bridge knows which server a tool belongs to, so it enforces them.
func mcpServer(sc config.MCPServer) mcp.Server {
	l := limits(sc.ProviderSettings, "")
	return mcp.Server{Name: sc.Name, Type: sc.Type, Command: sc.Command, Args: sc.Args, Env: sc.Env, Cwd: sc.Cwd,
		URL: sc.URL, Headers: sc.Headers, Timeout: sc.Timeout, AllowTools: sc.AllowTools, DenyTools: sc.DenyTools,
		MaxOutputBytes: sc.MaxOutputBytes, ToolTimeouts: sc.ToolTimeouts,
		MaxArgumentBytes: l.MaxArgumentBytes, MaxResultBytes: l.MaxResultBytes}
}

// limits are a provider entry's settings as the plugin host enforces them,
// with the defaults filled in; key is the entry's config path.
func limits(s config.ProviderSettings, key string) pluginhost.Limits {
	return pluginhost.Limits{
		Timeout:          cmp.Or(s.Timeout, config.DefaultTimeout),
		ToolTimeouts:     s.ToolTimeouts,
		MaxArgumentBytes: cmp.Or(s.MaxArgumentBytes, config.DefaultMaxArgumentBytes),
		MaxResultBytes:   cmp.Or(s.MaxResultBytes, config.DefaultMaxResultBytes),
		Key:              key,
	}
}

// checkToolTimeouts reports each tool_timeouts entry naming a tool the
// provider does not have: a misspelt name would leave that tool on the
// default without a word.
func checkToolTimeouts(ctx context.Context, p sdk.Provider, path string, timeouts map[string]time.Duration, ps *toolspec.Problems) {
	if len(timeouts) == 0 {
		return
	}
	md, err := p.Metadata(ctx, sdk.MetadataRequest{})
	if err != nil {
		return
	}
	have := make([]string, len(md.Tools))
	for i, t := range md.Tools {
		have[i] = t.Name
	}
	for _, name := range slices.Sorted(maps.Keys(timeouts)) {
		if !slices.Contains(have, name) {
			ps.Add(path+".tool_timeouts."+name, "the provider has no tool %q (its tools: %s)", name, strings.Join(have, ", "))
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

// checkMCPEnv reports each ${VAR} of an enabled MCP server that is not
// set, at its config path, before anything starts.
func checkMCPEnv(cfg *config.Config, ps *toolspec.Problems) {
	for _, name := range cfg.MCPServerOrder {
		sc := cfg.MCPServers[name]
		if sc.Disabled {
			continue
		}
		_, problems := mcpServer(sc).Expanded(nil)
		for _, p := range problems {
			ps.Add("mcp_servers."+name+"."+p.Path, "%s", p.Message)
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
		opts, err := builtin.OptionsFromEnv()
		if err != nil {
			return err
		}
		p, err := builtin.New(opts)
		if err != nil {
			return err
		}
		sdk.Serve(p)
	case bridgeName:
		sdk.Serve(remote.New())
	case mcpName:
		opts, err := mcp.OptionsFromEnv()
		if err != nil {
			return err
		}
		log := hclog.New(&hclog.LoggerOptions{
			Level:      hclog.LevelFromString(os.Getenv("TENXGRAPH_PLUGIN_LOG_LEVEL")),
			Output:     os.Stderr,
			JSONFormat: true,
		})
		b, err := mcp.New(opts, log)
		if err != nil {
			return err
		}
		sdk.Serve(b, sdk.WithLogger(log))
	default:
		return fmt.Errorf("no provider named %q (this binary serves %s, %s and %s)", name, builtinName, bridgeName, mcpName)
	}
	return nil
}
