// Package mcp is the MCP bridge: a tool provider that connects to the MCP
// servers configured for one ToolNode (stdio, Streamable HTTP or legacy
// SSE), offers their tools through sdk.Provider, and keeps the connections
// alive. The host serves it with `tenxgraph plugin mcp`, one process per
// node that has MCP servers.
//
// What it adds to the official Go SDK (github.com/modelcontextprotocol/go-sdk),
// whose defaults do not suit a long-running host:
//
//   - the protocol version pinned to 2025-11-25 (no server/discover probe)
//     and no roots capability advertised;
//   - what it reads of one message from a server bounded by the server's
//     max_result_bytes on every transport (the SDK reads an HTTP answer
//     whole, however large): a larger message is refused as it arrives,
//     and the connection made again;
//   - a timeout on every call, reset by progress, with
//     notifications/cancelled when it runs out;
//   - connections made again when a server exits or an HTTP session ends,
//     and read-only or idempotent calls retried once;
//   - tool names that fit model APIs and never collide (server prefix on a
//     collision, mapped back on the call);
//   - results truncated with a marker past max_output_bytes, and progress
//     bounded per call.
package mcp

// Name is the provider's name.
const Name = "mcp"

// Version is the bridge's version, reported in its metadata and to the
// servers as the client's.
const Version = "1.0.0"
