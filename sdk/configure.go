package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// ErrNotConfigured: a provider built from its options was called before
// the host sent them.
var ErrNotConfigured = errors.New("the provider has not been configured yet: the host sends its options with Configure first")

// Configured serves the provider that build makes from the options the host
// sends with Configure. Until then it lists no tools and refuses calls with
// ErrNotConfigured. Use it when a provider's tools depend on its options:
//
//	func main() { sdk.Serve(sdk.Configured(newProvider)) }
//
// The built provider's Shutdown and ToolsChanged are passed through.
func Configured(build func(ctx context.Context, options json.RawMessage) (Provider, error)) Provider {
	return &configured{build: build, ready: make(chan struct{})}
}

// NewConfigured is Configured with typed options: the options schema is
// derived from Options as NewTool derives a tool's parameters (properties
// under their JSON names, a jsonschema tag is a description, a field
// without omitempty is required, unknown keys are refused; refine it with
// WithProperty), declared in Metadata as OptionsSchema, and the options
// are decoded strictly into an Options for build:
//
//	type options struct {
//		Units string `json:"units,omitempty" jsonschema:"the default units: metric or imperial"`
//	}
//
//	p, err := sdk.NewConfigured(func(ctx context.Context, o options) (sdk.Provider, error) { ... },
//		sdk.WithProperty("units", `{"enum": ["metric", "imperial"]}`))
//
// The host checks the config's options against the schema before
// Configure, so `tenxgraph validate` names a bad option by its path and
// build sees only options the schema allows. As the schema is declared,
// the host always configures the provider: with {} when the config has no
// options, which suits an Options whose every field is optional.
func NewConfigured[Options any](build func(ctx context.Context, options Options) (Provider, error), refine ...ToolOption) (Provider, error) {
	if build == nil {
		return nil, errors.New("NewConfigured: nil build function")
	}
	var b toolBuild
	schema, err := typedSchema[Options](&b, refine)
	if err != nil {
		return nil, fmt.Errorf("options: %w", err)
	}
	if b.requiresApproval {
		return nil, errors.New("options: RequiresApproval marks a tool; options have no approval")
	}
	return &configured{schema: schema, ready: make(chan struct{}), build: func(ctx context.Context, raw json.RawMessage) (Provider, error) {
		var o Options
		if len(bytes.TrimSpace(raw)) == 0 {
			raw = json.RawMessage(`{}`)
		}
		if err := strictjson.Unmarshal(raw, &o); err != nil {
			return nil, fmt.Errorf("invalid options: %w", err)
		}
		return build(ctx, o)
	}}, nil
}

// MustConfigured is NewConfigured for a main function: it panics on an
// options type it cannot derive a schema from, at start, where the mistake
// is found at once.
func MustConfigured[Options any](build func(ctx context.Context, options Options) (Provider, error), refine ...ToolOption) Provider {
	p, err := NewConfigured(build, refine...)
	if err != nil {
		panic(err)
	}
	return p
}

type configured struct {
	build  func(context.Context, json.RawMessage) (Provider, error)
	schema json.RawMessage // the options schema, declared in Metadata; nil for Configured

	mu    sync.Mutex
	p     Provider
	ready chan struct{} // closed once p is set
}

func (c *configured) get() (Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p == nil {
		return nil, ErrNotConfigured
	}
	return c.p, nil
}

// Configure implements Configurer: it builds the provider once.
func (c *configured) Configure(ctx context.Context, req ConfigureRequest) error {
	c.mu.Lock()
	done := c.p != nil
	c.mu.Unlock()
	if done {
		return errors.New("the provider is already configured: options are sent once per process")
	}
	p, err := c.build(ctx, req.Options)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p != nil {
		return errors.New("the provider is already configured: options are sent once per process")
	}
	c.p = p
	close(c.ready)
	return nil
}

// Metadata implements Provider; before Configure it lists no tools. The
// options schema is declared before and after.
func (c *configured) Metadata(ctx context.Context, req MetadataRequest) (MetadataResponse, error) {
	p, err := c.get()
	if err != nil {
		return MetadataResponse{OptionsSchema: c.schema}, nil
	}
	md, err := p.Metadata(ctx, req)
	if err == nil && c.schema != nil {
		md.OptionsSchema = c.schema
	}
	return md, err
}

// CallTool implements Provider.
func (c *configured) CallTool(ctx context.Context, req CallToolRequest) (CallToolResponse, error) {
	p, err := c.get()
	if err != nil {
		return CallToolResponse{}, err
	}
	return p.CallTool(ctx, req)
}

// Shutdown implements Shutdowner for a built provider that does.
func (c *configured) Shutdown(ctx context.Context) error {
	p, err := c.get()
	if err != nil {
		return nil
	}
	if sd, ok := p.(Shutdowner); ok {
		return sd.Shutdown(ctx)
	}
	return nil
}

// ToolsChanged implements ToolsWatcher: configuring counts as a change,
// then the built provider's own changes follow.
func (c *configured) ToolsChanged() <-chan struct{} {
	c.mu.Lock()
	p, ready := c.p, c.ready
	c.mu.Unlock()
	if p == nil {
		return ready
	}
	if w, ok := p.(ToolsWatcher); ok {
		return w.ToolsChanged()
	}
	return nil // never fires
}

var (
	_ Configurer   = (*configured)(nil)
	_ Shutdowner   = (*configured)(nil)
	_ ToolsWatcher = (*configured)(nil)
)
