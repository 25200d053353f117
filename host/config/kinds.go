package config

import (
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tenxgraph/tenxgraph/internal/sandbox"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// A provider kind (builtin_tools, mcp_servers, plugins, or one of its own
// a program adds) is a package of its own, above this one: it owns its
// key, the type its entries decode into, their schema and their checks,
// and registers them once with RegisterProvider (package host/kind does
// it along with how the entries start). This package holds what a kind
// reads generically, by its key, and knows no kind by name.

// RegisterProvider registers a provider kind's section: its top-level key,
// its JSON Schema, and read, which decodes and checks the key's value and
// returns what Config.Provider gives back for the key (nil for nothing to
// keep). Call it from an init, before any config is read. The provider
// kinds are listed together, by key, where the schema lists providers.
// A key registered twice panics.
func RegisterProvider(key string, schema func() *jsonschema.Schema, read func(r *Reader) any) {
	register(Section{Key: key, Schema: schema, provider: true,
		read: func(c *checker, path string, v *value, cfg *Config) {
			if got := read(&Reader{c: c, path: path, v: v}); got != nil {
				cfg.SetProvider(key, got)
			}
		}})
}

// Provider is what the provider kind registered under key read from the
// file (nil when the file has none): the kind's own type, which the
// kind's package returns typed.
func (cfg *Config) Provider(key string) any { return cfg.providers[key] }

// SetProvider sets the value Provider returns for key, for a program or a
// test that builds or adjusts a Config in code.
func (cfg *Config) SetProvider(key string, v any) {
	if cfg.providers == nil {
		cfg.providers = map[string]any{}
	}
	cfg.providers[key] = v
}

// A Reader is a value of the file at its path, as a provider kind's read
// gets it: already judged by the schema, to decode, check further and
// report on, in the words and with the paths of every other check.
type Reader struct {
	c    *checker
	path string
	v    *value
}

// Path is the value's config path ("mcp_servers.files").
func (r *Reader) Path() string { return r.path }

// Present reports whether the file has the value.
func (r *Reader) Present() bool { return r.v != nil }

// Refused reports whether the schema refused the value or one holding it:
// the schema said why, and a refused value is best left at its default.
func (r *Reader) Refused() bool { return r.c.refused(r.path) }

// Covered reports whether a problem is already reported at, under or
// above the value, so that a check does not say the same thing twice.
func (r *Reader) Covered() bool { return r.c.covered(r.path) }

// IsObject and IsArray report the value's JSON type.
func (r *Reader) IsObject() bool { return r.v != nil && r.v.kind == kindObject }

// IsArray reports whether the value is a JSON array.
func (r *Reader) IsArray() bool { return r.v != nil && r.v.kind == kindArray }

// Keys are an object's keys in file order.
func (r *Reader) Keys() []string {
	if !r.IsObject() {
		return nil
	}
	return slices.Clone(r.v.keys)
}

// Field is the value of an object's key, which may be absent.
func (r *Reader) Field(key string) *Reader {
	return &Reader{c: r.c, path: toolspec.Join(r.path, pathKey(key)), v: r.v.field(key)}
}

// Items are an array's items, in order.
func (r *Reader) Items() []*Reader {
	if !r.IsArray() {
		return nil
	}
	out := make([]*Reader, len(r.v.items))
	for i := range r.v.items {
		out[i] = r.Index(i)
	}
	return out
}

// Index is item i of an array, which may be absent.
func (r *Reader) Index(i int) *Reader {
	var it *value
	if r.IsArray() && i >= 0 && i < len(r.v.items) {
		it = r.v.items[i]
	}
	return &Reader{c: r.c, path: toolspec.Join(r.path, toolspec.Index(i)), v: it}
}

// String is the value when it is a JSON string.
func (r *Reader) String() (string, bool) {
	if r.v == nil || r.v.kind != kindString {
		return "", false
	}
	return r.v.text, true
}

// Decode sets *dst from the value by dst's json tags, as every section is
// read (see the package's contributing guide): what the schema refused is
// left as it was, so set defaults first.
func (r *Reader) Decode(dst any) { r.c.decode(r.path, r.v, dst) }

// Problem reports a problem at the value's path.
func (r *Reader) Problem(format string, args ...any) { r.c.add(r.path, format, args...) }

// Resolve makes a path of the file absolute against the file's folder.
func (r *Reader) Resolve(p string) string { return r.c.resolve(p) }

// Dir is the config file's folder.
func (r *Reader) Dir() string { return r.c.dir }

// Settings puts provider_defaults' call limits under an entry's decoded
// ones and reads its require_approval: every provider entry does.
func (r *Reader) Settings(s *ProviderSettings) { r.c.settings(r.path, r.v, s) }

// Env drops the variables of the entry's env whose names no environment
// can hold, reporting each.
func (r *Reader) Env(env map[string]string) map[string]string {
	return r.c.envKeys(toolspec.Join(r.path, "env"), env)
}

// Profile checks an entry's decoded sandbox profile, makes its paths
// absolute, records its env and pass_env for the secrets check, and puts
// it on top of provider_defaults'.
func (r *Reader) Profile(p sandbox.Profile) sandbox.Profile { return r.c.profile(r.path, r.v, p) }

// Hosts keeps the entries of an allow_hosts list (the value) that follow
// http_fetch's rules and reports the others.
func (r *Reader) Hosts(list []string) []string { return r.c.hosts(r.path, list) }

// Expression has the value s, a string the provider expands with ${VAR}s,
// checked once the whole file is read: its syntax, no host secret named
// in it and, for argv (a command line), no credential in it.
func (r *Reader) Expression(s string, argv bool) {
	r.c.exprs = append(r.c.exprs, exprAt{path: r.path, s: s, argv: argv})
}
