package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// Bridge is the MCP bridge provider. It implements sdk.Provider,
// sdk.Shutdowner and sdk.ToolsWatcher.
type Bridge struct {
	log     hclog.Logger
	servers []*server
	taken   map[string]bool
	wire    *wireLog
	ready   chan struct{} // closed once every server's first connection attempt ended
	done    chan struct{} // closed at Shutdown
	stop    sync.Once

	mu       sync.RWMutex
	startErr error
	routes   map[string]route
	specs    []sdk.ToolSpec
	changed  chan struct{}
	reported map[string]bool // collisions and left-out tools already logged
}

// route maps a tool's name on the node back to its server and its name
// there.
type route struct {
	srv  *server
	tool *mcpsdk.Tool
}

// New starts a bridge for opts: it expands each enabled server's ${VAR}s
// (an unset variable is an error naming it) and starts connecting to every
// server at once, in the background; Metadata waits for those first
// connections. log receives the bridge's and the servers' logs (nil: none).
func New(opts Options, log hclog.Logger) (*Bridge, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	b := &Bridge{log: log, taken: map[string]bool{}, ready: make(chan struct{}), done: make(chan struct{}),
		changed: make(chan struct{}), reported: map[string]bool{}}
	for _, n := range opts.Taken {
		b.taken[n] = true
	}
	var lookup func(string) (string, bool)
	if opts.Vars != nil {
		lookup = func(k string) (string, bool) { v, ok := opts.Vars[k]; return v, ok }
	}
	var errs []string
	for _, cfg := range opts.Servers {
		if cfg.Disabled {
			continue
		}
		exp, ps := cfg.Expanded(lookup)
		for _, p := range ps {
			errs = append(errs, fmt.Sprintf("mcp_servers.%s.%s: %s", cfg.Name, p.Path, p.Message))
		}
		switch {
		case exp.Type == "stdio" && exp.Command == "":
			errs = append(errs, fmt.Sprintf("mcp_servers.%s: no command to start", cfg.Name))
		case exp.Type != "stdio" && exp.Type != "http" && exp.Type != "sse":
			errs = append(errs, fmt.Sprintf("mcp_servers.%s: unknown type %q (want stdio, http or sse)", cfg.Name, exp.Type))
		case len(ps) == 0 && exp.Type != "stdio" && !strings.HasPrefix(exp.URL, "http://") && !strings.HasPrefix(exp.URL, "https://"):
			// The URL as written: its expanded form may hold a token.
			errs = append(errs, fmt.Sprintf("mcp_servers.%s.url: %q is not an http or https URL once expanded", cfg.Name, cfg.URL))
		}
		b.servers = append(b.servers, newServer(exp, cfg, log.Named(cfg.Name), b.done, b.retitle))
	}
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "\n"))
	}
	path := opts.WireLog
	if opts.Vars == nil {
		path = os.Getenv(EnvWireLog)
	}
	if path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvWireLog, err)
		}
		b.wire = &wireLog{w: f}
	}
	for _, s := range b.servers {
		s.wire = b.wire
		go s.relister()
	}
	go b.connectAll()
	return b, nil
}

// unknownApprovals reports each require_approval name that a connected
// server does not have: a misspelt name would leave that tool ungated
// without a word.
func (b *Bridge) unknownApprovals() []error {
	var errs []error
	for _, s := range b.servers {
		if _, live := s.sup.Current(); !live || len(s.cfg.RequireApproval) == 0 {
			continue
		}
		s.mu.Lock()
		var have []string
		for _, t := range s.tools {
			have = append(have, t.Name)
		}
		s.mu.Unlock()
		for i, name := range s.cfg.RequireApproval {
			if !slices.Contains(have, name) {
				errs = append(errs, fmt.Errorf("mcp_servers.%s.require_approval[%d]: the server has no tool %q (its tools: %s)", s.cfg.Name, i, name, strings.Join(have, ", ")))
			}
		}
	}
	return errs
}

// connectAll makes every server's first connection, concurrently, so the
// bridge is ready when the slowest server is.
func (b *Bridge) connectAll() {
	errs := make([]error, len(b.servers))
	var wg sync.WaitGroup
	for i, s := range b.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.connectTimeout()+5*time.Second)
			defer cancel()
			if _, err := s.session(ctx); err != nil {
				errs[i] = fmt.Errorf("mcp_servers.%s: %v", s.cfg.Name, err)
			}
		}()
	}
	wg.Wait()
	b.retitle()
	errs = append(errs, b.unknownApprovals()...)
	b.mu.Lock()
	b.startErr = errors.Join(errs...)
	b.mu.Unlock()
	close(b.ready)
}

// Metadata implements sdk.Provider. It waits for the first connections; a
// server that could not be reached makes it fail with the reason, so a
// broken entry stops the host at startup rather than missing tools later.
func (b *Bridge) Metadata(ctx context.Context, _ sdk.MetadataRequest) (sdk.MetadataResponse, error) {
	select {
	case <-b.ready:
	case <-ctx.Done():
		return sdk.MetadataResponse{}, fmt.Errorf("waiting for the MCP servers to connect: %w", ctx.Err())
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.startErr != nil {
		return sdk.MetadataResponse{}, b.startErr
	}
	return sdk.MetadataResponse{Name: Name, Version: Version, Capabilities: []string{sdk.CapabilityToolsChanged},
		Tools: append([]sdk.ToolSpec(nil), b.specs...)}, nil
}

// ToolsChanged implements sdk.ToolsWatcher: closed when a server's tools
// changed (tools/list_changed, or a reconnection listing others).
func (b *Bridge) ToolsChanged() <-chan struct{} {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.changed
}

// retitle names every server's tools for the node and, when the list
// differs from the last one, announces the change.
func (b *Bridge) retitle() {
	type entry struct {
		srv  *server
		tool *mcpsdk.Tool
		spec sdk.ToolSpec
	}
	var entries []entry
	var refs []toolRef
	var notes []string
	for _, s := range b.servers {
		s.mu.Lock()
		tools := s.tools
		s.mu.Unlock()
		for _, t := range tools {
			spec, err := specOf(t)
			if err != nil {
				notes = append(notes, fmt.Sprintf("%s: tool %q is left out: %v", s.describe(), t.Name, err))
				continue
			}
			entries = append(entries, entry{s, t, spec})
			refs = append(refs, toolRef{server: s.cfg.Name, tool: t.Name})
		}
	}
	names, collisions := assignNames(refs, b.taken)
	routes := make(map[string]route, len(entries))
	specs := make([]sdk.ToolSpec, len(entries))
	for i, e := range entries {
		e.spec.Name = names[i]
		e.spec.RequiresApproval = e.srv.cfg.approves(e.tool.Name)
		specs[i] = e.spec
		routes[names[i]] = route{srv: e.srv, tool: e.tool}
	}
	for _, c := range collisions {
		notes = append(notes, c.String())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range notes {
		if !b.reported[n] {
			b.reported[n] = true
			b.log.Warn(n)
		}
	}
	if reflect.DeepEqual(specs, b.specs) {
		b.routes = routes // the same names; the tools behind them may be new
		return
	}
	b.specs, b.routes = specs, routes
	close(b.changed)
	b.changed = make(chan struct{})
}

// specOf describes an MCP tool to the model, with the checks the host
// applies to every tool (an object schema, valid JSON Schema).
func specOf(t *mcpsdk.Tool) (sdk.ToolSpec, error) {
	params := sdk.EmptyObjectSchema
	if t.InputSchema != nil {
		raw, err := json.Marshal(t.InputSchema)
		if err != nil {
			return sdk.ToolSpec{}, fmt.Errorf("its input schema: %w", err)
		}
		params = raw
	}
	if _, err := toolspec.Compile(params); err != nil {
		return sdk.ToolSpec{}, fmt.Errorf("its input schema: %w", err)
	}
	desc := t.Description
	if desc == "" && t.Title != "" {
		desc = t.Title
	}
	return sdk.ToolSpec{Description: desc, Parameters: params}, nil
}

// CallTool implements sdk.Provider: it maps the name back to its server and
// tool, calls it, and turns the CallToolResult into the tool result (see
// toolResult): text truncated past the server's max_output_bytes, media
// as attachments. A tool that
// failed, timed out or lost its server gives an error result the model can
// read; a server that cannot be reached gives an error.
func (b *Bridge) CallTool(ctx context.Context, req sdk.CallToolRequest) (sdk.CallToolResponse, error) {
	b.mu.RLock()
	r, ok := b.routes[req.Name]
	b.mu.RUnlock()
	if !ok {
		return sdk.CallToolResponse{}, fmt.Errorf("MCP bridge: %w %q", sdk.ErrUnknownTool, req.Name)
	}
	args := json.RawMessage(bytes.TrimSpace(req.Arguments))
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`) // "arguments": null is refused by servers
	}
	cfg := r.srv.cfg
	if n := int64(len(args)); cfg.MaxArgumentBytes > 0 && n > cfg.MaxArgumentBytes {
		return sdk.ErrorResult(fmt.Errorf("the arguments of tool %q are %d bytes, over the limit of %d (%s); the tool was not called",
			req.Name, n, cfg.MaxArgumentBytes, cfg.key("max_argument_bytes"))), nil
	}
	res, err := r.srv.call(ctx, r.tool, args)
	var f *failure
	switch {
	case errors.As(err, &f):
		return sdk.ErrorResult(f), nil
	case err != nil:
		return sdk.CallToolResponse{}, err
	}
	resp, truncated, err := toolResult(res, cfg)
	if err != nil {
		return sdk.ErrorResult(fmt.Errorf("%s: tool %q: %w", r.srv.describe(), r.tool.Name, err)), nil
	}
	if truncated {
		traceLog(ctx, r.srv.log).Info("result truncated", "tool", r.tool.Name, "max_output_bytes", cfg.maxOutput(), "max_result_bytes", cfg.MaxResultBytes)
	}
	if n := resp.Size(); cfg.MaxResultBytes > 0 && n > cfg.MaxResultBytes {
		return sdk.ErrorResult(fmt.Errorf("tool %q returned %d bytes, over the limit of %d (%s); the result was dropped",
			req.Name, n, cfg.MaxResultBytes, cfg.key("max_result_bytes"))), nil
	}
	return resp, nil
}

// Shutdown implements sdk.Shutdowner: every server's connection is closed at
// once (a stdio server gets its stdin closed, then SIGTERM, then SIGKILL).
func (b *Bridge) Shutdown(ctx context.Context) error {
	b.stop.Do(func() { close(b.done) })
	var wg sync.WaitGroup
	for _, s := range b.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.shutdown(ctx)
		}()
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-ctx.Done():
		return fmt.Errorf("MCP servers still stopping: %w", ctx.Err())
	}
	if b.wire != nil {
		_ = b.wire.w.Close()
	}
	return nil
}

var (
	_ sdk.Provider     = (*Bridge)(nil)
	_ sdk.Shutdowner   = (*Bridge)(nil)
	_ sdk.ToolsWatcher = (*Bridge)(nil)
)
