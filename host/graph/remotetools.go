package graph

import (
	"fmt"

	"github.com/tenxgraph/tenxgraph/host/remotetool"
)

// RemoteToolConfig declares a tool whose schema the server owns and whose
// implementation runs in the client: remotetool.Config, the type the config
// file's remote_tools entries are read into, so both are one type checked
// by one set of rules.
type RemoteToolConfig = remotetool.Config

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
