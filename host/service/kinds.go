package service

// The provider kinds this host serves: each registers itself (package
// host/kind), and a new kind is one more line here.
import (
	_ "github.com/tenxgraph/tenxgraph/host/kind/builtintools"
	_ "github.com/tenxgraph/tenxgraph/host/kind/mcpservers"
	_ "github.com/tenxgraph/tenxgraph/host/kind/plugins"
)
