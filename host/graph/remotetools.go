package graph

import (
	"encoding/json"
	"fmt"
	"time"
)

// RemoteToolConfig declares a tool whose schema the server owns and whose
// implementation runs in the client. It is the code-first twin of an entry
// of remote_tools in 10xgraph.json and is validated by the same rules
// (the ToolNode's: see RemoteToolNode).
type RemoteToolConfig struct {
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

// RemoteToolNode is implemented by nodes that can offer remote tools: a
// ToolNode. AttachRemoteTools refuses nodes that don't implement it.
type RemoteToolNode interface {
	Node
	// CheckRemoteTools reports what is wrong with tools (a bad name or
	// schema, a name the node already serves), at paths "[i]..." where i
	// is the entry's index in the whole list, indexes[k] for tools[k].
	CheckRemoteTools(tools []RemoteToolConfig, indexes []int) Problems
	// AttachRemoteTools adds tools already checked.
	AttachRemoteTools(tools []RemoteToolConfig)
}

func index(i int) string { return fmt.Sprintf("[%d]", i) }

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
