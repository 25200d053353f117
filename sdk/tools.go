package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"sort"
)

// Handler runs one tool. It mirrors net/http's Handler: one method, with
// HandlerFunc to use a plain function.
type Handler interface {
	CallTool(ctx context.Context, req CallToolRequest) (CallToolResponse, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req CallToolRequest) (CallToolResponse, error)

// CallTool implements Handler.
func (f HandlerFunc) CallTool(ctx context.Context, req CallToolRequest) (CallToolResponse, error) {
	return f(ctx, req)
}

// Tool is a spec and the handler that runs it.
type Tool struct {
	Spec    ToolSpec
	Handler Handler
}

// Func builds a Tool from a function taking raw JSON arguments. The
// function's error becomes an error result the model can read, not a failed
// call: a tool that cannot do what was asked is ordinary tool output. The
// exception is an error after the call's context ended, which is returned as
// the context's error: the caller cancelled, and nobody reads the result.
// parameters may be nil for a tool without arguments.
func Func(name, description string, parameters json.RawMessage, fn func(ctx context.Context, args json.RawMessage) (any, error)) Tool {
	if len(parameters) == 0 {
		parameters = EmptyObjectSchema
	}
	return Tool{
		Spec: ToolSpec{Name: name, Description: description, Parameters: parameters},
		Handler: HandlerFunc(func(ctx context.Context, req CallToolRequest) (CallToolResponse, error) {
			v, err := fn(ctx, req.Arguments)
			switch {
			case err != nil && ctx.Err() != nil:
				// The caller gave up: that is not the tool failing, and
				// no one is waiting for a result the model would read.
				return CallToolResponse{}, ctx.Err()
			case err != nil:
				return ErrorResult(err), nil
			}
			return Result(v)
		}),
	}
}

// EmptyObjectSchema is the parameters schema of a tool that takes nothing.
var EmptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// Result encodes v as a successful tool result. A ToolResult (or a
// pointer to one) gives its Content encoded and its Attachments, which are
// checked as the host checks them (CheckAttachments).
func Result(v any) (CallToolResponse, error) {
	var atts []Attachment
	switch r := v.(type) {
	case ToolResult:
		v, atts = r.Content, r.Attachments
	case *ToolResult:
		if r != nil {
			v, atts = r.Content, r.Attachments
		}
	}
	if err := CheckAttachments(atts); err != nil {
		return CallToolResponse{}, fmt.Errorf("tool result: %w", err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return CallToolResponse{}, fmt.Errorf("encode tool result: %w", err)
	}
	return CallToolResponse{Content: raw, Attachments: atts}, nil
}

// ErrorResult turns err into a result the model sees with is_error set.
func ErrorResult(err error) CallToolResponse {
	raw, _ := json.Marshal(err.Error()) // a string always encodes
	return CallToolResponse{Content: raw, IsError: true}
}

// ErrUnknownTool is returned by CallTool for a name the provider does not
// serve. Hosts use errors.Is to tell it from a tool that ran and failed.
var ErrUnknownTool = errors.New("unknown tool")

// ToolNamePattern is the rule every tool name follows: what OpenAI,
// Anthropic and MCP clients all accept.
var ToolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Tools is a Provider serving a fixed set of tools in-process. It is the
// in-process adapter: embed it in a program, hand it to a ToolNode, or serve
// it as a plugin, and the tools behave the same.
type Tools struct {
	name, version string
	specs         []ToolSpec
	byName        map[string]Handler
}

// NewTools builds a provider from tools. It refuses empty or invalid names,
// duplicates and missing handlers, like a registry that refuses to be
// ambiguous.
func NewTools(name, version string, tools ...Tool) (*Tools, error) {
	p := &Tools{name: name, version: version, byName: make(map[string]Handler, len(tools))}
	var errs []error
	for i, t := range tools {
		switch {
		case !ToolNamePattern.MatchString(t.Spec.Name):
			errs = append(errs, fmt.Errorf("tool %d: name %q must match %s", i, t.Spec.Name, ToolNamePattern))
			continue
		case t.Handler == nil:
			errs = append(errs, fmt.Errorf("tool %q: no handler", t.Spec.Name))
			continue
		}
		if _, dup := p.byName[t.Spec.Name]; dup {
			errs = append(errs, fmt.Errorf("tool %q: defined twice", t.Spec.Name))
			continue
		}
		if len(t.Spec.Parameters) == 0 {
			t.Spec.Parameters = EmptyObjectSchema
		}
		p.byName[t.Spec.Name] = t.Handler
		p.specs = append(p.specs, t.Spec)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("provider %q: %w", name, err)
	}
	sort.Slice(p.specs, func(i, j int) bool { return p.specs[i].Name < p.specs[j].Name })
	return p, nil
}

// MustTools is NewTools for static tool sets known to be valid; it panics
// otherwise, at init time, where the mistake is found at once.
func MustTools(name, version string, tools ...Tool) *Tools {
	p, err := NewTools(name, version, tools...)
	if err != nil {
		panic(err)
	}
	return p
}

// Metadata implements Provider.
func (p *Tools) Metadata(context.Context, MetadataRequest) (MetadataResponse, error) {
	return MetadataResponse{Name: p.name, Version: p.version, Tools: append([]ToolSpec(nil), p.specs...)}, nil
}

// CallTool implements Provider. A handler that panics gives an error result
// naming the panic instead of taking the host down with it, and the panic
// is logged with its stack (see Logger).
func (p *Tools) CallTool(ctx context.Context, req CallToolRequest) (resp CallToolResponse, err error) {
	h, ok := p.byName[req.Name]
	if !ok {
		return CallToolResponse{}, fmt.Errorf("provider %q: %w %q", p.name, ErrUnknownTool, req.Name)
	}
	defer recoverTool(ctx, req.Name, &resp, &err)
	if len(req.Arguments) == 0 {
		req.Arguments = json.RawMessage(`{}`)
	}
	return h.CallTool(ctx, req)
}

var _ Provider = (*Tools)(nil)

// recoverTool turns a panic of tool's handler into an error result the
// model reads (the panic's value, which is all it can act on) and logs the
// panic with its stack, which is what its author needs. Deferred by every
// place that calls a handler.
func recoverTool(ctx context.Context, tool string, resp *CallToolResponse, err *error) {
	r := recover()
	if r == nil {
		return
	}
	Logger(ctx).Error("tool panicked", "tool", tool, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	*resp, *err = ErrorResult(fmt.Errorf("tool %q panicked: %v", tool, r)), nil
}
