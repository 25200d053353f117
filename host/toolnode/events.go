package toolnode

import "time"

// Event types a ToolNode emits through graph.Run.Emit. The payload of each
// is the type named in its comment.
const (
	// EventToolStarted and EventToolFinished: ToolEvent, server tools.
	EventToolStarted  = "tool_started"
	EventToolFinished = "tool_finished"
	// EventToolProgress: ToolProgress, a running server tool's report.
	EventToolProgress = "tool_progress"
	// EventToolIgnored: ToolIgnored, a per-run tool that was not offered.
	EventToolIgnored = "tool_ignored"
	// EventRemoteCallExpired: RemoteCallExpired, a remote call the client
	// did not answer in time, now answered with an error result. It is
	// emitted by the run that expires the call (thread.App.Expire), which
	// has no client: observers (thread.App.Observe) and metrics see it.
	EventRemoteCallExpired = "remote_call_expired"
)

// RemoteCallExpired reports a remote call that expired unanswered.
type RemoteCallExpired struct {
	Node string `json:"node"`
	ID   string `json:"id"`
	Name string `json:"name"`
	// Timeout is how long the call waited.
	Timeout time.Duration `json:"timeout_ns"`
}

// ToolEvent reports a server tool call.
type ToolEvent struct {
	Node     string        `json:"node"`
	ID       string        `json:"id"`
	Name     string        `json:"name"`
	Provider string        `json:"provider"`
	IsError  bool          `json:"is_error,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
}

// ToolProgress is what a running server tool reported (an MCP server's
// progress notification, or sdk.ReportProgress in a provider), between its
// tool_started and tool_finished.
type ToolProgress struct {
	Node     string `json:"node"`
	ID       string `json:"id"`
	Name     string `json:"name"`
	Provider string `json:"provider"`
	// Progress goes up with each report; Total is 0 when unknown.
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// ToolIgnored says a per-run tool was not offered and why; also a server
// tool that a provider added while running but the node could not take.
type ToolIgnored struct {
	Node   string `json:"node"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
}
