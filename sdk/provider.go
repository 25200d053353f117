// Package sdk is what a tool provider is written against: the Provider
// interface, the request and response types of each call, and helpers to
// build a provider from plain functions.
//
// The host talks to every provider (builtin tools, the MCP bridge, the remote
// bridge, third-party plugins) through Provider, whether the provider runs in
// the host's process or in a plugin subprocess. Code written against Provider
// does not change when a provider moves out of process.
package sdk

import (
	"context"
	"encoding/json"
)

// Provider is the one interface every tool provider implements.
//
// It is deliberately small: describe yourself, run a tool. Optional
// behaviour (a clean shutdown, live tool-list changes) is discovered through
// separate interfaces such as Shutdowner, in the manner of net/http's
// optional interfaces, so adding a capability never breaks an existing
// provider.
type Provider interface {
	// Metadata describes the provider and lists its tools. The host calls it
	// at startup and whenever it needs the tool list again; it must be cheap
	// and must not have side effects.
	Metadata(ctx context.Context, req MetadataRequest) (MetadataResponse, error)

	// CallTool runs one tool. ctx carries the caller's deadline and
	// cancellation; a provider that ignores ctx keeps a cancelled run's
	// resources busy. A tool failing is not an error: it is a response with
	// IsError set, which the model sees. An error return means the call could
	// not be made at all (unknown tool, provider gone).
	CallTool(ctx context.Context, req CallToolRequest) (CallToolResponse, error)
}

// Shutdowner is implemented by providers that hold resources (connections,
// child processes) and want to release them before the host exits.
type Shutdowner interface {
	Shutdown(ctx context.Context) error
}

// MetadataRequest is empty today; it exists so fields can be added without
// changing Provider's method set.
type MetadataRequest struct{}

// MetadataResponse names the provider and lists its tools.
type MetadataResponse struct {
	// Name identifies the provider in logs, errors and `tenxgraph tools`.
	Name string
	// Version is the provider's own version, free-form (semver advised).
	Version string
	// Capabilities lists optional features the provider supports, so a host
	// can use a newer feature only where it exists.
	Capabilities []string
	// Tools are the tools the provider serves.
	Tools []ToolSpec
	// OptionsSchema, when set, is the JSON Schema (an object schema) of
	// the options the provider takes with Configure. The host reads it
	// before Configure and checks the config's options against it, so a
	// misspelt or out-of-range option is reported by `tenxgraph validate`
	// with its path (plugins[0].options.units), and the provider never
	// sees options it refuses. A provider that declares one is always
	// configured, with {} when the config has no options. NewConfigured
	// derives it from an options struct.
	OptionsSchema json.RawMessage
}

// ToolSpec describes a tool to the model: its name, what it does, and a JSON
// Schema for its arguments (an object schema).
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	// RequiresApproval asks the host to have a person approve each call
	// of the tool before it runs: the run pauses with an approval request,
	// and the tool runs only once approved. A provider marks the tools that
	// act on the world in ways hard to undo; the host's config may require
	// approval of more tools, never of fewer.
	RequiresApproval bool `json:"requires_approval,omitempty"`
}

// CallToolRequest is one call of one tool.
type CallToolRequest struct {
	// Name is the tool to run.
	Name string
	// Arguments is the JSON object the model produced, already validated
	// against the tool's schema by the host.
	Arguments json.RawMessage
	// CallID is the host's id for this call, unique within the thread
	// (and across the thread's lives, if it is deleted and created again);
	// useful for logs and idempotency.
	CallID string
	// ThreadID names the conversation the call belongs to, uniquely among
	// the host's threads: the client's thread id, or, on a server with API
	// tokens, where each token has threads of its own, a tag standing for
	// the token (never its value or its name), "/" and the client's thread
	// id ("t3f2a9c01b7de/t1"). Key anything kept per conversation by it.
	ThreadID string
	// RunTool is set when the tool is one of the run's client tools (see
	// RunToolsProvider), so that a provider judging them keeps no per-run
	// state.
	RunTool *ToolSpec
}

// CallToolResponse is a tool's result.
type CallToolResponse struct {
	// Content is any JSON value; it becomes the tool_result's content.
	Content json.RawMessage
	// IsError marks a failure the model should see (bad input, a refused
	// operation) as opposed to an infrastructure error.
	IsError bool
	// Deferred says the tool runs in the client: the host pauses the graph
	// and hands the call over instead of using Content. Only the remote
	// bridge answers this way.
	Deferred bool
	// Attachments are images, sounds and files beside Content (see
	// Attachment and ToolResult). The host counts their bytes with
	// Content's against the provider's max_result_bytes (Size).
	Attachments []Attachment
}

// RunToolsProvider is implemented by providers whose tools include the run's
// own client tools: the remote bridge. The host asks it, once per run, which
// of the client's tools to offer; it answers without keeping state.
type RunToolsProvider interface {
	PrepareRun(ctx context.Context, req PrepareRunRequest) (PrepareRunResponse, error)
}

// PrepareRunRequest carries a run's client tools.
type PrepareRunRequest struct {
	// RunTools are the tools as the client sent them, flat or OpenAI shape.
	RunTools []json.RawMessage
	// Taken are the names the node already has; a client tool may not
	// shadow any of them.
	Taken []string
}

// PrepareRunResponse says which client tools a run offers.
type PrepareRunResponse struct {
	// Tools are offered to the model for this run.
	Tools []ToolSpec
	// Ignored were left out, each with the reason.
	Ignored []IgnoredTool
	// Problems make the run's tools invalid: the run must not start.
	Problems []Problem
}

// IgnoredTool is a client tool that was not offered.
type IgnoredTool struct {
	Name   string
	Reason string
}

// Problem is one thing wrong with an input, at a JSON path such as
// "remote_tools[1].parameters". It is the one problem type of the host and
// the SDK: package toolspec collects them.
type Problem struct {
	Path    string
	Message string
}

// String gives "path: message", or the message alone at the root.
func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// Configurer is implemented by providers that take options from the host's
// config. The host calls Configure once per process, before any other
// call, with the options over the plugin protocol: never through the
// environment, where the provider's tools, and whatever they start, could
// read them.
type Configurer interface {
	Configure(ctx context.Context, req ConfigureRequest) error
}

// ConfigureRequest carries a provider's options.
type ConfigureRequest struct {
	// Options are the provider's options as a JSON object.
	Options json.RawMessage
}

// Size is what a result counts against the provider's max_result_bytes:
// its content's bytes and its attachments' bytes together.
func (r CallToolResponse) Size() int64 {
	n := int64(len(r.Content))
	for _, a := range r.Attachments {
		n += int64(len(a.Data))
	}
	return n
}
