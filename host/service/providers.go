package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/kind"
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

// Names of the providers this binary serves itself (`tenxgraph plugin
// NAME`); a plugins[] entry may not take them (package host/kind/plugins).
const (
	builtinName = builtin.Name
	bridgeName  = remote.Name
	mcpName     = mcp.Name
)

// startProviders starts every provider of the config at once (start time
// is that of the slowest, not the sum) and files them by node: the
// registered kinds' jobs, then the late kinds', which are told the tools
// their nodes have by then. The remote bridge always runs: any run may
// bring client tools.
func (s *Service) startProviders(ctx context.Context, opts Options, env *agent.Env) error {
	s.startedProviders = true
	s.paths = map[string]string{}
	cfg := s.Config
	h, log, err := host(cfg, opts)
	if err != nil {
		return err
	}
	bridge := kind.Job{Label: bridgeName, Path: "remote_tools", Config: pluginhost.Config{Name: bridgeName, Command: []string{h.Self, "plugin", "remote"},
		Sandbox: cfg.SandboxDefaults, Key: "provider_defaults"}}
	h.Taken = func(node string) []string { return takenNames(ctx, env.Providers[node], cfg.RemoteTools, node) }
	for _, late := range []bool{false, true} {
		var jobs []kind.Job
		var ps toolspec.Problems
		if !late {
			jobs = append(jobs, bridge)
		}
		for _, k := range kind.All() {
			if v := cfg.Provider(k.Key); v != nil && k.Late == late {
				js, problems := k.Jobs(ctx, v, h)
				jobs, ps = append(jobs, js...), append(ps, problems...)
			}
		}
		if err := s.start(ctx, h, log, jobs, ps, env); err != nil {
			return err
		}
	}
	return nil
}

// host is what the kinds' jobs are given, without Taken, and the logger.
func host(cfg *config.Config, opts Options) (kind.Host, hclog.Logger, error) {
	self := opts.Executable
	if self == "" {
		exe, err := os.Executable()
		if err != nil {
			return kind.Host{}, nil, fmt.Errorf("find this program to serve the builtin providers: %w", err)
		}
		self = exe
	}
	log := opts.Logger
	if log == nil {
		log = DefaultLogger()
	}
	return kind.Host{Config: cfg, Self: self, Vars: hostVars(cfg)}, log, nil
}

// start starts jobs in parallel, after expanding each one's env from the
// host's environment (the launcher sets literal values), and files each
// started provider at its node, with its approvals; ps are problems found
// so far, which stop it before anything starts.
func (s *Service) start(ctx context.Context, h kind.Host, log hclog.Logger, jobs []kind.Job, ps toolspec.Problems, env *agent.Env) error {
	for i := range jobs {
		expanded, problems := expandEnv(jobs[i].Config.Sandbox.Env, h.Vars)
		for _, p := range problems {
			ps.Add(toolspec.Join(h.EnvPath(jobs[i].Path, jobs[i].Config.Sandbox.Env, p.Path), p.Path), "%s", p.Message)
		}
		jobs[i].Config.Sandbox.Env = expanded
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
			j.Config.Logger = log
			j.Config.Deny, j.Config.Trampoline = h.Config.Secrets(), h.Self
			started[i], errs[i] = pluginhost.Start(ctx, j.Config)
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
			ps.Add(j.Path, "%v", errs[i])
			continue
		}
		s.providers = append(s.providers, started[i])
		s.process(j.Label, started[i])
		s.paths[j.Label] = j.Path
		checkToolTimeouts(ctx, started[i], j.Path, j.Config.Prefix, j.Config.Limits.ToolTimeouts, &ps)
		var p sdk.Provider = started[i]
		if j.Approve.Set() {
			// Names are the plugin's own, like tool_timeouts'; the node
			// knows its tools by their prefixed names.
			checkApprovals(ctx, started[i], j.Path, j.Config.Prefix, j.Approve.Tools, &ps)
			var names []string
			for _, n := range j.Approve.Tools {
				names = append(names, j.Config.Prefix+n)
			}
			p = toolnode.RequireApproval(p, names)
		}
		if j.Node == "" {
			env.Bridge = started[i]
		} else {
			env.Providers[j.Node] = append(env.Providers[j.Node], p)
		}
	}
	if len(ps) > 0 {
		return ps
	}
	return nil
}

// optionProblems checks the options of each job whose options are the
// user's (a plugins[] entry's), and that has no problem so far, against
// the options schema its plugin declares, for a config whose providers are
// not started because of other mistakes: each such plugin is started,
// asked for its schema, checked, and stopped, so that validate still lists
// every mistake in one pass. A plugin that fails to start says so at its
// entry. Late kinds are left out: their jobs need the other providers.
func optionProblems(ctx context.Context, cfg *config.Config, opts Options, have toolspec.Problems) toolspec.Problems {
	h, log, _ := host(cfg, opts)
	var pcs []pluginhost.Config
	for _, k := range kind.All() {
		v := cfg.Provider(k.Key)
		if v == nil || k.Late {
			continue
		}
		jobs, _ := k.Jobs(ctx, v, h)
		for _, j := range jobs {
			if !j.CheckOptions || slices.ContainsFunc(have, func(p sdk.Problem) bool {
				return p.Path == j.Path || strings.HasPrefix(p.Path, j.Path+".") || strings.HasPrefix(p.Path, j.Path+"[")
			}) {
				continue
			}
			pc := j.Config
			env, problems := expandEnv(pc.Sandbox.Env, h.Vars)
			if len(problems) > 0 {
				continue // reported by the env check
			}
			pc.Sandbox.Env, pc.Lazy, pc.Logger, pc.Deny, pc.Trampoline = env, true, log, cfg.Secrets(), h.Self
			pcs = append(pcs, pc)
		}
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
// config path, before anything starts: every provider's env, and what
// each kind that checks its own (CheckEnv) expands.
func checkEnv(cfg *config.Config, ps *toolspec.Problems) {
	h := kind.Host{Config: cfg, Vars: hostVars(cfg)}
	seen := map[sdk.Problem]bool{}
	add := func(path, msg string) {
		if p := (sdk.Problem{Path: path, Message: msg}); !seen[p] {
			seen[p] = true
			ps.Add(path, "%s", msg)
		}
	}
	profiles := map[string]map[string]string{"remote_tools": cfg.SandboxDefaults.Env}
	var own []toolspec.Problems
	for _, k := range kind.All() {
		v := cfg.Provider(k.Key)
		switch {
		case v == nil:
		case k.CheckEnv != nil:
			own = append(own, k.CheckEnv(v, h))
		default:
			for _, e := range k.Entries(v) {
				profiles[e.Path] = e.Profile.Env
			}
		}
	}
	for _, entry := range slices.Sorted(maps.Keys(profiles)) {
		_, problems := expandEnv(profiles[entry], h.Vars)
		for _, p := range problems {
			add(toolspec.Join(h.EnvPath(entry, profiles[entry], p.Path), p.Path), p.Message)
		}
	}
	for _, problems := range own {
		for _, p := range problems {
			add(p.Path, p.Message)
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
// what `tenxgraph plugin NAME` runs, on one processor (oneProcessor).
func ServePlugin(name string) error {
	oneProcessor()
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

// oneProcessor has the Go runtime run this process's goroutines on one
// processor, unless its environment sets GOMAXPROCS (provider_defaults.env,
// an entry's own env). The providers this binary ships do little CPU work
// per call, and a runtime with an idle processor wakes a thread to look
// for work each time a call arrives, which on a virtual machine costs more
// than the call: at 100 round trips in flight it was a fifth to a third of
// their CPU (docs/benchmarks.md). One call's work still runs at full
// speed; only calls that compute at the same moment share the processor.
// MCP servers the bridge starts are not affected: it is not an
// environment variable.
func oneProcessor() {
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		runtime.GOMAXPROCS(1)
	}
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

// sectionProcesses are the started processes of a kind that stand for its
// whole section rather than one entry (an MCP bridge), by name.
func (s *Service) sectionProcesses(k kind.Kind, entries []kind.Entry) []string {
	var out []string
	for name, path := range s.paths {
		if path == k.Key && !slices.ContainsFunc(entries, func(e kind.Entry) bool { return e.Label == name }) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Profiles lists the sandbox profile of every process the config starts,
// with provider_defaults applied, and the isolation each got: the remote
// bridge's, then each kind's (the late ones last), its processes that are
// not entries of the file (an MCP bridge) before its entries.
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
	for _, late := range []bool{false, true} {
		for _, k := range kind.All() {
			v := cfg.Provider(k.Key)
			if v == nil || k.Late != late {
				continue
			}
			entries := k.Entries(v)
			for _, name := range s.sectionProcesses(k, entries) {
				add(name, sandbox.Profile{})
			}
			for _, e := range entries {
				if e.Remote != "" {
					out = append(out, Profile{Provider: e.Label, Profile: e.Remote})
				} else {
					add(e.Label, e.Profile)
				}
			}
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
	for _, k := range kind.All() {
		if v := cfg.Provider(k.Key); v != nil {
			for _, e := range k.Entries(v) {
				paths, nodes = append(paths, toolspec.Join(e.Path, "node")), append(nodes, e.Node)
			}
		}
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
