package model

import (
	"fmt"

	"github.com/tenxgraph/tenxgraph/internal/registry"
)

// A model provider (a value of model.provider: openai, anthropic,
// scripted, or one a program adds) is a package of its own below package
// config: it owns its name, what it says of itself, the keys of the model
// block it needs and those only it takes, its defaults and checks, and how
// its ChatModel is made. It registers once, from its package's init:
//
//	func init() { model.Register(model.ProviderInfo{Name: "mine", ...}) }
//
// and a program links it with one import line (host/service imports the
// providers it serves). Package config reads the model block by the
// registered providers and package service makes the model by them;
// neither names one.

// ProviderInfo is one model provider: what it registers.
type ProviderInfo struct {
	// Name is the value of model.provider.
	Name string
	// Rank orders the providers where messages and the schema list them
	// (then the name): the registry keeps a stable order whatever order
	// the packages' inits run in.
	Rank int
	// Summary says what it is, after its name, in the schema and in the
	// messages that list the providers.
	Summary string
	// Needs are the keys of the model block it cannot run without.
	Needs []string
	// Own are the keys only it takes: another provider's block with one
	// is refused at the key, and reads without it.
	Own []string
	// Refuse words the problem of another provider's block (other, its
	// provider) holding key, one of Own; nil says only this provider
	// takes it.
	Refuse func(key, other string) string
	// KeyEnv is api_key_env when the block leaves it out, "" for none.
	KeyEnv string
	// Settle fills in its defaults and checks what the schema cannot say,
	// once the keys every provider shares are read and checked; nil for
	// nothing more.
	Settle func(c *Config, b Block)
	// New makes the ChatModel of a settled block.
	New func(c *Config) (ChatModel, error)
}

// Refusal is the problem of a block of provider other holding key, one of
// p's Own.
func (p ProviderInfo) Refusal(key, other string) string {
	if p.Refuse != nil {
		return p.Refuse(key, other)
	}
	return fmt.Sprintf("only the %s provider takes %s", p.Name, key)
}

// A Block is the model block of a config file as a provider's Settle sees
// it: which keys the file sets, and where its problems go, at the keys'
// config paths, beside every other check's.
type Block interface {
	// Has reports whether the file sets key.
	Has(key string) bool
	// Checked reports whether the file sets key to a value that passed
	// the checks every provider shares (a base_url that is an http URL).
	Checked(key string) bool
	// Problem reports a problem at key.
	Problem(key, format string, args ...any)
	// Resolve makes a path of the file absolute against its folder.
	Resolve(path string) string
}

// providers are the registered providers.
var providers = registry.List[ProviderInfo]{What: "model provider",
	Name: func(p ProviderInfo) string { return p.Name }, Rank: func(p ProviderInfo) int { return p.Rank }}

// Register adds a model provider. Call it from the provider package's
// init. A name registered twice panics: one provider's checks would
// silently win.
func Register(p ProviderInfo) {
	if p.New == nil {
		panic(fmt.Sprintf("model.Register: provider %q has no New", p.Name))
	}
	providers.Add(p)
}

// Providers are the registered providers, by Rank, then name.
func Providers() []ProviderInfo { return providers.All() }

// Lookup is the provider registered under name.
func Lookup(name string) (ProviderInfo, bool) { return providers.Find(name) }

// Built is what a provider's New returns from its package's own
// constructor, m, err: a failed one gives a nil ChatModel, never a typed
// nil.
func Built[M ChatModel](m M, err error) (ChatModel, error) {
	if err != nil {
		return nil, err
	}
	return m, nil
}
