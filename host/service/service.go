// Package service turns a validated 10xgraph.json into a running graph: the
// model, the tool providers per node, the registered agent graph with the
// configured remote tools attached, and the checkpointer. The CLI and the
// HTTP server both start from here, so they can never disagree about what a
// config means.
package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/media"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/pluginhost"
	"github.com/tenxgraph/tenxgraph/host/remotetool"
	"github.com/tenxgraph/tenxgraph/host/telemetry"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/host/toolnode"
	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// Service is a config made live.
type Service struct {
	Config *config.Config
	Graph  *graph.StateGraph
	App    *thread.App
	Store  checkpoint.Checkpointer

	providers []sdk.Provider
	// processes are the provider processes by the name Profiles gives
	// them, for what their sandbox actually got.
	processes map[string]*pluginhost.Plugin
	// paths are the config paths of the processes' jobs, by name.
	paths     map[string]string
	ownsStore bool
	// startedProviders: New went as far as starting the providers (and
	// so checked the plugins' options).
	startedProviders bool
	sweeper          *sweeper // nil unless checkpointer.idle_ttl is set
}

// Options adjust how a service starts.
type Options struct {
	// Store, when set, is used instead of the configured checkpointer (the
	// validate command uses a memory store so that it writes nothing).
	Store checkpoint.Checkpointer
	// Logger receives the host's and the plugins' logs (default: stderr, at
	// the level in TENXGRAPH_LOG_LEVEL, warn when unset).
	Logger hclog.Logger
	// Executable serves the builtin providers with `plugin NAME` (default:
	// this program, which is how one binary holds them all).
	Executable string
}

// Load reads the config at path and starts the service.
func Load(ctx context.Context, path string, opts Options) (*Service, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	return New(ctx, cfg, opts)
}

// New starts the service for cfg. Problems that can only be seen with the
// graph built (a remote tool on a node that does not exist, or named like a
// server tool) come back as toolspec.Problems with config paths, like the
// config's own.
func New(ctx context.Context, cfg *config.Config, opts Options) (s *Service, err error) {
	s = &Service{Config: cfg}
	defer func() {
		if err != nil {
			_ = s.Shutdown(context.WithoutCancel(ctx))
		}
	}()
	var ps toolspec.Problems
	env := agent.Env{Providers: map[string][]sdk.Provider{}}
	if cfg.Model != nil {
		env.SystemPrompt, env.MaxSteps = cfg.Model.SystemPrompt, cfg.Model.MaxSteps
		m, err := newModel(cfg.Model)
		if err != nil {
			ps.Add("model", "%v", err)
		} else if telemetry.Enabled() {
			m = model.Traced(m, cfg.Model.Provider, cfg.Model.Model, cfg.Model.BaseURL)
		}
		env.Model = m
	}
	build, ok := agent.Lookup(cfg.Agent)
	if !ok {
		ps.Add("agent", "no graph is registered as %q (registered: %s)", cfg.Agent, join(agent.Names()))
	}
	checkEnv(cfg, &ps)
	if len(ps) > 0 {
		return s, ps
	}
	if err := s.startProviders(ctx, opts, &env); err != nil {
		return s, err
	}
	g, err := build(ctx, env)
	if err != nil {
		return s, toolspec.Problems{{Path: "agent", Message: fmt.Sprintf("building %q: %v", cfg.Agent, err)}}
	}
	if err := graphProblems(g, cfg, &ps); err != nil {
		return s, err
	}
	if len(ps) > 0 {
		return s, ps
	}
	s.Graph = g
	for _, name := range remotetool.ToolNodes(g) {
		if tn, ok := g.Node(name).(*toolnode.Node); ok {
			tn.SetRemoteTimeout(cfg.RemoteToolTimeout)
		}
	}
	s.Store = opts.Store
	if s.Store == nil {
		warnNewStore(opts.Logger, cfg.Checkpointer)
		if s.Store, err = openStore(ctx, cfg.Checkpointer); err != nil {
			return s, err
		}
		s.ownsStore = true
		s.sweeper = startSweeper(s.Store, cfg.Checkpointer.IdleTTL, opts.Logger)
	}
	var gopts []thread.Option
	if cfg.Cache.MaxBytes > 0 {
		gopts = append(gopts, thread.WithCacheBytes(cfg.Cache.MaxBytes))
	}
	gopts = append(gopts, thread.WithLease(cfg.Checkpointer.Lease), thread.WithDurability(cfg.Checkpointer.Durability))
	mc, err := media.New(media.Policy{Types: cfg.Media.AllowedTypes, MaxBlobBytes: cfg.Media.MaxBlobBytes, MaxRequestBytes: cfg.Media.MaxRequestBytes,
		MaxImagePixels: cfg.Media.MaxImagePixels, FetchHosts: cfg.Media.FetchAllowHosts, FetchTimeout: cfg.Media.FetchTimeout})
	if err != nil {
		return s, toolspec.Problems{{Path: "media", Message: err.Error()}}
	}
	gopts = append(gopts, thread.WithMedia(mc))
	if s.App, err = thread.Compile(g, s.Store, gopts...); err != nil {
		return s, err
	}
	return s, nil
}

// graphProblems adds what is wrong with cfg given the graph: remote tools
// and provider entries on nodes the graph lacks (the remote tools are
// attached when there is nothing wrong with them). Other errors are
// returned.
func graphProblems(g *graph.StateGraph, cfg *config.Config, ps *toolspec.Problems) error {
	if err := g.AttachRemoteTools(cfg.RemoteTools); err != nil {
		var aps toolspec.Problems
		if !errors.As(err, &aps) {
			return err
		}
		for _, p := range aps {
			ps.Add(toolspec.Join("remote_tools", p.Path), "%s", p.Message)
		}
	}
	checkProviderNodes(g, cfg, ps)
	return nil
}

// Validate checks the config at path as the validate command does, and
// returns every problem in one pass. A file with problems of its own is
// still checked against its graph, built without starting a provider, so
// that remote tools and provider entries on missing nodes are reported
// beside, say, a bad sha256. A file without any is started as New starts
// it, which also checks the providers and their tools: the service is
// returned, for the caller to shut down.
func Validate(ctx context.Context, path string, opts Options) (*Service, error) {
	cfg, ps, err := config.LoadPartial(path)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return nil, ps
	}
	if len(ps) == 0 {
		s, err := New(ctx, cfg, opts)
		var nps toolspec.Problems
		switch {
		case err == nil:
			return s, nil
		case s.startedProviders || !errors.As(err, &nps):
			return nil, err
		}
		// New stopped short of the providers (the model or the agent is
		// wrong): their options are still checked.
		return nil, dedupe(append(nps, optionProblems(ctx, cfg, opts, nps)...))
	}
	ps = append(ps, optionProblems(ctx, cfg, opts, ps)...)
	build, ok := agent.Lookup(cfg.Agent)
	if !ok || cfg.Agent == "" {
		return nil, ps // the file's own problems name the agent
	}
	// The graph's shape, with no provider started and a model that is
	// never called: only its nodes are looked at.
	env := agent.Env{Providers: map[string][]sdk.Provider{}}
	if cfg.Model != nil {
		env.Model = shapeOnly{}
	}
	g, err := build(ctx, env)
	if err != nil {
		ps.Add("agent", "building %q: %v", cfg.Agent, err)
		return nil, dedupe(ps)
	}
	if err := graphProblems(g, cfg, &ps); err != nil {
		return nil, err
	}
	return nil, dedupe(ps)
}

// shapeOnly stands in for the model while Validate builds a graph only to
// look at its nodes.
type shapeOnly struct{}

func (shapeOnly) Generate(context.Context, model.Request) (model.Response, error) {
	return model.Response{}, errors.New("the graph was built only to be checked")
}

// dedupe drops a problem reported twice (the file's checks and the graph's
// both check remote tools), keeping the first.
func dedupe(ps toolspec.Problems) toolspec.Problems {
	var out toolspec.Problems
	for _, p := range ps {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// newModel makes the model of m by its provider (package model's
// registry).
func newModel(m *config.Model) (model.ChatModel, error) {
	p, ok := model.Lookup(m.Provider)
	if !ok {
		var names []string
		for _, p := range model.Providers() {
			names = append(names, `"`+p.Name+`"`)
		}
		return nil, fmt.Errorf("provider %q is not available in this build (use %s)", m.Provider, config.OrList(names))
	}
	return p.New(m)
}

// warnNewStore says loudly when the SQLite store the config names is not
// there (or is an empty file), so a new empty store is about to be created
// in its place: after a wrong path or a lost file, threads would otherwise
// vanish without a word.
func warnNewStore(log hclog.Logger, c config.Checkpointer) {
	if c.Path == "" {
		return // a store without a file
	}
	if log == nil {
		log = DefaultLogger()
	}
	fi, err := os.Stat(c.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		log.Warn("checkpointer: no SQLite file at checkpointer.path: creating a new, empty store; threads of earlier runs are not in it (check the path if you expected them)", "path", c.Path)
	case err == nil && fi.Size() == 0:
		log.Warn("checkpointer: the SQLite file at checkpointer.path is empty (0 bytes): starting a new, empty store in it; if it held threads, it was truncated: restore it from a backup", "path", c.Path)
	}
}

// storeOptions are the checkpointer options c sets.
func storeOptions(c config.Checkpointer) []checkpoint.Option {
	keep := config.DefaultKeepHistory
	if c.KeepHistory != nil {
		keep = *c.KeepHistory
	}
	return []checkpoint.Option{checkpoint.KeepHistory(keep)}
}

// OpenStore opens the checkpointer c describes, as the service does, for
// commands that work on the store alone (tenxgraph store compact).
func OpenStore(ctx context.Context, c config.Checkpointer) (checkpoint.Checkpointer, error) {
	return openStore(ctx, c)
}

// openStore opens the store c describes by its kind (package
// checkpoint's registry).
func openStore(ctx context.Context, c config.Checkpointer) (checkpoint.Checkpointer, error) {
	k, ok := checkpoint.LookupKind(c.Type)
	if !ok {
		var names []string
		for _, k := range checkpoint.Kinds() {
			names = append(names, k.Name)
		}
		return nil, fmt.Errorf("checkpointer.type: %q is not supported (use %s)", c.Type, config.OrList(names))
	}
	return k.Open(ctx, c, storeOptions(c)...)
}

// ToolInfo is one tool of one node, as `tenxgraph tools` lists it.
type ToolInfo struct {
	Node        string        `json:"node"`
	Name        string        `json:"name"`
	Provider    string        `json:"provider"`
	Kind        toolnode.Kind `json:"kind"`
	Description string        `json:"description"`
	// NeedsApproval: a person approves each call before it runs, because
	// the tool says so or its provider's require_approval does.
	NeedsApproval bool `json:"needs_approval,omitempty"`
}

// Tools lists every ToolNode's tools, by node then name.
func (s *Service) Tools() []ToolInfo {
	var out []ToolInfo
	for _, name := range remotetool.ToolNodes(s.Graph) {
		tn, ok := s.Graph.Node(name).(*toolnode.Node)
		if !ok {
			continue
		}
		for _, t := range tn.Tools() {
			out = append(out, ToolInfo{Node: name, Name: t.Spec.Name, Provider: t.Provider, Kind: t.Kind, Description: t.Spec.Description, NeedsApproval: t.NeedsApproval})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Shutdown releases providers and the store. The providers are drained
// until ctx is done and stopped all at once, so a stop costs the slowest
// provider's, not the sum. It is safe to call on a service that failed to
// start, and again (not concurrently): a second call has nothing left to
// release.
func (s *Service) Shutdown(ctx context.Context) error {
	errs := make([]error, len(s.providers)+1)
	var wg sync.WaitGroup
	for i, p := range s.providers {
		if sd, ok := p.(sdk.Shutdowner); ok {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = sd.Shutdown(ctx)
			}()
		}
	}
	wg.Wait()
	if len(s.providers) > 0 {
		pluginhost.Cleanup()
	}
	s.providers = nil
	s.sweeper.stop()
	s.sweeper = nil
	if s.ownsStore && s.Store != nil {
		errs[len(errs)-1] = s.Store.Close()
		s.ownsStore = false
	}
	return errors.Join(errs...)
}

func join(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	out := names[0]
	for _, n := range names[1:] {
		out += ", " + n
	}
	return out
}
