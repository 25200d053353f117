package service

// The provider kinds this host serves: each registers itself (package
// host/kind), and a new kind is one more line here.
import (
	_ "github.com/tenxgraph/tenxgraph/host/kind/builtintools"
	_ "github.com/tenxgraph/tenxgraph/host/kind/mcpservers"
	_ "github.com/tenxgraph/tenxgraph/host/kind/plugins"
)

// The model providers this host serves: each registers itself (package
// host/model), and a new provider is one more line here.
import (
	_ "github.com/tenxgraph/tenxgraph/host/model/anthropic"
	_ "github.com/tenxgraph/tenxgraph/host/model/openai"
	_ "github.com/tenxgraph/tenxgraph/host/model/scripted"
)
