// Package remotetool is the type of a declared remote tool, shared by the
// config loader, code-first graph.AttachRemoteTools and the ToolNode (its
// rules are toolnode/remotespec's). It sits below all of them and imports
// nothing, so the config reads remote_tools without the engine, and the
// engine declares them without any tool package.
package remotetool

import (
	"encoding/json"
	"time"
)

// Config declares a tool whose schema the server owns and whose
// implementation runs in the client. It is the code-first twin of an entry
// of remote_tools in 10xgraph.json and is validated by the same rules
// (remotespec.Check's, which the config loader and the ToolNode both apply).
type Config struct {
	// Node is the ToolNode that offers the tool.
	Node string
	// Name is the tool's name; the client registers its handler under it.
	Name string
	// Description tells the model what the tool does.
	Description string
	// Parameters is the JSON Schema of the arguments (an object schema);
	// nil means the tool takes no arguments.
	Parameters json.RawMessage
	// Timeout is how long a call waits for the client's result before it
	// expires and the model is given an error result instead (0: the
	// node's default, see toolnode.DefaultRemoteTimeout).
	Timeout time.Duration
}
