package config

import (
	"maps"
	"slices"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/internal/expand"
	"github.com/tenxgraph/tenxgraph/internal/sandbox"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// profile checks an entry's decoded sandbox profile p (the entry, or
// provider_defaults, at path, whose value is v), makes its paths absolute,
// records its env and pass_env for the secrets check, and puts it on top
// of provider_defaults'.
func (c *checker) profile(path string, v *value, p sandbox.Profile) sandbox.Profile {
	if len(p.Env) > 0 {
		c.envs = append(c.envs, envAt{toolspec.Join(path, "env"), p.Env})
	}
	c.passEnv = append(c.passEnv, passEnvAt{toolspec.Join(path, "pass_env"), p.PassEnv})
	if fs := p.Filesystem; fs != nil {
		fs.Read, fs.Write = c.resolveAll(fs.Read), c.resolveAll(fs.Write)
	}
	if p.Group != "" && p.User == "" && v.field("user") == nil {
		c.add(toolspec.Join(path, "group"), "set user too: a group alone does not change the account a provider runs as")
	}
	return withDefaults(c.sandboxDefaults, p)
}

// withDefaults is an entry's profile on top of provider_defaults': the
// entry's env adds to the default's, its pass_env joins the default's,
// and each limit, the network and the account it sets replace the
// default's.
func withDefaults(def, p sandbox.Profile) sandbox.Profile {
	out := def
	if len(def.Env)+len(p.Env) > 0 {
		out.Env = map[string]string{}
		for k, v := range def.Env {
			out.Env[k] = v
		}
		for k, v := range p.Env {
			out.Env[k] = v
		}
	}
	out.PassEnv = slices.Clone(def.PassEnv)
	for _, k := range p.PassEnv {
		if !slices.Contains(out.PassEnv, k) {
			out.PassEnv = append(out.PassEnv, k)
		}
	}
	set := func(dst *int64, v int64) {
		if v > 0 {
			*dst = v
		}
	}
	set(&out.Limits.MemoryMB, p.Limits.MemoryMB)
	set(&out.Limits.CPUSeconds, p.Limits.CPUSeconds)
	set(&out.Limits.OpenFiles, p.Limits.OpenFiles)
	set(&out.Limits.Processes, p.Limits.Processes)
	if p.Network != "" {
		out.Network = p.Network
	}
	if p.User != "" {
		out.User, out.Group = p.User, p.Group
	}
	if p.Filesystem != nil {
		// The entry's paths join the default's.
		fs := &sandbox.Filesystem{}
		if def.Filesystem != nil {
			fs.Read = slices.Clone(def.Filesystem.Read)
			fs.Write = slices.Clone(def.Filesystem.Write)
		}
		fs.Read = append(fs.Read, p.Filesystem.Read...)
		fs.Write = append(fs.Write, p.Filesystem.Write...)
		out.Filesystem = fs
	}
	return out
}

// Secrets are the host's environment variables that hold its own secrets:
// the API's bearer tokens, the model key, the store's DSN and, for a
// postgres store, the libpq variables that carry its password (the driver
// reads them when the DSN has none). No provider is ever given them: a
// profile or an expression naming one is refused here, and the launcher
// drops them whatever it is told.
func (cfg *Config) Secrets() []string {
	var out []string
	if cfg.Server.Auth != nil {
		out = append(out, cfg.Server.Auth.TokensEnv...)
	}
	if cfg.Model != nil && cfg.Model.APIKeyEnv != "" {
		out = append(out, cfg.Model.APIKeyEnv)
	}
	if k, ok := checkpoint.LookupKind(cfg.Checkpointer.Type); ok && k.Secrets != nil {
		out = append(out, k.Secrets(cfg.Checkpointer)...)
	}
	return out
}

// checkSecrets refuses every profile that passes one of the host's
// secrets to a provider by pass_env, and checks every expression (every
// provider's env, and what a kind records with Reader.Expression, such as
// an MCP server's command, args, cwd, url and headers) with the one rule of internal/expand: its syntax, no host secret named
// anywhere in it, no credential on a command line. Each problem is
// reported at its path.
func (c *checker) checkSecrets(cfg *Config) {
	secrets := cfg.Secrets()
	for _, pe := range c.passEnv {
		for i, k := range pe.names {
			if slices.Contains(secrets, k) {
				c.add(toolspec.Join(pe.path, toolspec.Index(i)), "%s holds a secret of the host (an API token, the model key or the store's credentials) and is never given to a provider; give the provider a credential of its own", k)
			}
		}
	}
	check := func(path, v string, argv bool) {
		for _, err := range expand.Check(v, expand.Rule{Secrets: secrets, Argv: argv}) {
			c.add(path, "%v", err)
		}
	}
	for _, at := range c.envs {
		for _, k := range slices.Sorted(maps.Keys(at.vars)) {
			check(toolspec.Join(at.path, pathKey(k)), at.vars[k], false)
		}
	}
	for _, e := range c.exprs {
		check(e.path, e.s, e.argv)
	}
}
