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
}

// ToolSpec describes a tool to the model: its name, what it does, and a JSON
// Schema for its arguments (an object schema).
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// CallToolRequest is one call of one tool.
type CallToolRequest struct {
	// Name is the tool to run.
	Name string
	// Arguments is the JSON object the model produced, already validated
	// against the tool's schema by the host.
	Arguments json.RawMessage
	// CallID is the model's id for this call; useful for logs and idempotency.
	CallID string
	// ThreadID is the conversation the call belongs to.
	ThreadID string
}

// CallToolResponse is a tool's result.
type CallToolResponse struct {
	// Content is any JSON value; it becomes the tool_result's content.
	Content json.RawMessage
	// IsError marks a failure the model should see (bad input, a refused
	// operation) as opposed to an infrastructure error.
	IsError bool
}
