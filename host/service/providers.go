package service

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/pluginhost"
	"github.com/tenxgraph/tenxgraph/host/toolspec"
	"github.com/tenxgraph/tenxgraph/plugins/builtin"
	"github.com/tenxgraph/tenxgraph/plugins/remote"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// Names of the providers this binary serves itself; plugins may not take
// them.
const (
	builtinName = builtin.Name
	bridgeName  = remote.Name
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
			Command: []string{self, "plugin", "builtin"}, Env: map[string]string{builtin.EnvOptions: string(raw)}}})
	}
	var ps toolspec.Problems
	for i, pl := range cfg.Plugins {
		if pl.Name == builtinName || pl.Name == bridgeName {
			ps.Add(fmt.Sprintf("plugins[%d].name", i), "%q is the name of a provider tenxgraph serves itself; choose another", pl.Name)
			continue
		}
		jobs = append(jobs, job{path: fmt.Sprintf("plugins[%d]", i), node: pl.Node, cfg: pluginhost.Config{
			Name: pl.Name, Command: pl.Command, SHA256: pl.SHA256, Env: pl.Env, Lazy: pl.Start == "lazy"}})
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
		if j.node == "" {
			env.Bridge = started[i]
		} else {
			env.Providers[j.node] = append(env.Providers[j.node], started[i])
		}
	}
	if len(ps) > 0 {
		return ps
	}
	return nil
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
	default:
		return fmt.Errorf("no provider named %q (this binary serves %s and %s)", name, builtinName, bridgeName)
	}
	return nil
}
