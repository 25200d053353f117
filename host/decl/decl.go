// Package decl holds the plain values a config file or a code-first program
// declares to a graph: today a remote tool. It has no behaviour and
// imports nothing of the host, so the engine that takes these values
// (graph.RemoteToolConfig is decl.RemoteTool) and the config loader that
// reads them share one type without importing each other; their rules are
// package remotetool/declared's.
package decl

import (
	"encoding/json"
	"time"
)

// RemoteTool declares a tool whose schema the server owns and whose
// implementation runs in the client: an entry of remote_tools in
// 10xgraph.json, or what a code-first program passes to
// graph.StateGraph.AttachRemoteTools.
type RemoteTool struct {
	// Node is the ToolNode that offers the tool.
	Node string `json:"node"`
	// Name is the tool's name; the client registers its handler under it.
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description"`
	// Parameters is the JSON Schema of the arguments (an object schema);
	// nil means the tool takes no arguments.
	Parameters json.RawMessage `json:"parameters"`
	// Timeout is how long a call waits for the client's result before it
	// expires and the model is given an error result instead (0: the
	// node's default, see toolnode.DefaultRemoteTimeout).
	Timeout time.Duration `json:"timeout"`
}
