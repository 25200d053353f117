package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
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

type configured struct {
	build func(context.Context, json.RawMessage) (Provider, error)

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

// Metadata implements Provider; before Configure it lists no tools.
func (c *configured) Metadata(ctx context.Context, req MetadataRequest) (MetadataResponse, error) {
	p, err := c.get()
	if err != nil {
		return MetadataResponse{}, nil
	}
	return p.Metadata(ctx, req)
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
