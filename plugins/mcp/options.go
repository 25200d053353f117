package mcp

import (
	"slices"
	"time"

	"github.com/tenxgraph/tenxgraph/internal/sandbox"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// EnvWireLog, when set to a file path, makes the bridge append every
// JSON-RPC message it exchanges with its servers to that file, each line
// prefixed with the server's name: the first thing to look at when a server
// misbehaves.
const EnvWireLog = "TENXGRAPH_MCP_WIRE_LOG"

// Defaults for what a server entry leaves out.
const (
	// DefaultTimeout bounds a call that neither answers nor reports
	// progress, and a connection that does not complete its handshake; it
	// is the TypeScript SDK's default.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxOutputBytes is the largest tool result handed to the model
	// (1 MiB); a larger one is truncated, with a marker saying so.
	DefaultMaxOutputBytes = 1 << 20
)

// Options configure one bridge: the MCP servers of one ToolNode. The host
// sends them with Configure as their JSON (encoding/json), which
// ParseOptions reads; keys and durations are spelt as in the config.
type Options struct {
	// Servers in config order; their tools are listed in this order.
	Servers []Server `json:"servers"`
	// Taken are the names of the node's other tools (other providers',
	// configured remote tools). A server tool with such a name is offered
	// with the server's prefix, so it never collides.
	Taken []string `json:"taken,omitempty"`
	// Vars are the values of the host variables the servers' ${VAR}s
	// reference and their pass_env names, sent by the host: the bridge's
	// own environment holds none of them. Nil expands from the
	// environment (a bridge run in-process).
	Vars map[string]string `json:"vars,omitempty"`
	// WireLog is EnvWireLog's file, as the host's environment sets it.
	WireLog string `json:"wire_log,omitempty"`
}

// Server is one entry of mcp_servers, as the host read it from the config:
// ${VAR} references are still unexpanded (the bridge expands them from
// Options.Vars).
type Server struct {
	// Name is the entry's key; it prefixes the server's tools on a name
	// collision.
	Name string `json:"name"`
	// Type is "stdio", "http" (Streamable HTTP) or "sse" (the legacy
	// HTTP+SSE transport).
	Type    string            `json:"type"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Timeout bounds a call for as long as the server neither answers nor
	// reports progress (0: DefaultTimeout), and the connection's start and
	// handshake (at least MinConnectTimeout).
	Timeout sdk.Duration `json:"timeout,omitzero"`
	// AllowTools, when set, are the only tools offered; DenyTools are
	// hidden. Both name the server's own tool names.
	AllowTools []string `json:"allow_tools,omitempty"`
	DenyTools  []string `json:"deny_tools,omitempty"`
	// ToolTimeouts override Timeout for the tools they name (their names
	// on the server, as AllowTools).
	ToolTimeouts map[string]sdk.Duration `json:"tool_timeouts,omitempty"`
	// MaxOutputBytes caps a result (0: DefaultMaxOutputBytes).
	MaxOutputBytes int64 `json:"max_output_bytes,omitempty"`
	// MaxArgumentBytes bounds a call's arguments: a larger call is not
	// sent to the server (0: no limit).
	MaxArgumentBytes int64 `json:"max_argument_bytes,omitempty"`
	// MaxResultBytes bounds a result after truncation to MaxOutputBytes: a
	// larger one is an error result (0: no limit).
	MaxResultBytes int64 `json:"max_result_bytes,omitempty"`
	// Disabled entries are skipped.
	Disabled bool `json:"disabled,omitempty"`
	// RequireApprovalAll has a person approve every call of the server's
	// tools before it runs; RequireApproval names the server's own tools
	// (its names, not the node's) whose calls need it.
	RequireApprovalAll bool     `json:"require_approval_all,omitempty"`
	RequireApproval    []string `json:"require_approval,omitempty"`
	// Sandbox is what a stdio server's process may have besides Env:
	// limits, network, account. Its Env and PassEnv are left empty (the
	// host resolves pass_env into Env and Vars).
	Sandbox sandbox.Profile `json:"sandbox,omitzero"`
}

// approves reports whether calls of the server's tool need approval.
func (s Server) approves(tool string) bool {
	return s.RequireApprovalAll || slices.Contains(s.RequireApproval, tool)
}

func (s Server) timeout() time.Duration {
	if s.Timeout > 0 {
		return time.Duration(s.Timeout)
	}
	return DefaultTimeout
}

// toolTimeout is the timeout of one tool's calls and the config key that
// sets it, which the error of a call cut off by it names.
func (s Server) toolTimeout(tool string) (time.Duration, string) {
	if d := s.ToolTimeouts[tool]; d > 0 {
		return time.Duration(d), s.key("tool_timeouts." + tool)
	}
	return s.timeout(), s.key("timeout")
}

// key is the config path of one of the server's keys.
func (s Server) key(name string) string { return "mcp_servers." + s.Name + "." + name }

// MinConnectTimeout is the least time a connection gets to start and
// complete its handshake, whatever the timeout: a server run through npx
// may first download its package.
const MinConnectTimeout = 30 * time.Second

func (s Server) connectTimeout() time.Duration { return max(s.timeout(), MinConnectTimeout) }

func (s Server) maxOutput() int {
	if s.MaxOutputBytes > 0 && s.MaxOutputBytes < 1<<40 {
		return int(s.MaxOutputBytes)
	}
	return DefaultMaxOutputBytes
}

// ParseOptions decodes Options strictly: unknown keys and trailing data are
// errors.
func ParseOptions(raw []byte) (Options, error) {
	var o Options
	if err := sdk.UnmarshalStrict(raw, &o); err != nil {
		return Options{}, err
	}
	return o, nil
}
