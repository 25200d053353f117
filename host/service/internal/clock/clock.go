// Package clock is a provider kind written the way a new one is (see
// docs/contributing.md, "A new provider kind"): the key "clock" offers the
// builtin current_time tool at a node, under a provider of its own. It
// exists for the service's tests, which link it with one import line.
package clock

import (
	"context"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/kind"
	"github.com/tenxgraph/tenxgraph/host/pluginhost"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// Key is the kind's key in 10xgraph.json.
const Key = "clock"

func init() {
	kind.Register(kind.Kind{Key: Key, Schema: schema, Read: read, Entries: entries, Jobs: jobs})
}

// Config is the clock block.
type Config struct {
	// Node is the ToolNode offering the tool.
	Node string `json:"node"`
	// Tool is the builtin tool it offers.
	Tool string `json:"tool"`
}

// Of is cfg's clock, nil when the file has none.
func Of(cfg *config.Config) *Config { return kind.Value[*Config](cfg, Key) }

func schema() *jsonschema.Schema {
	return config.Object("A clock for the model.",
		config.Property("node", config.NodeSchema()),
		config.Property("tool", config.WithDefault(config.Enum("The tool it offers.", "current_time"), "current_time")))
}

func read(r *config.Reader) any {
	if !r.Present() || r.Refused() {
		return nil
	}
	c := &Config{Node: config.DefaultNode, Tool: "current_time"}
	r.Decode(c)
	return c
}

func entries(v any) []kind.Entry {
	return []kind.Entry{{Path: Key, Node: v.(*Config).Node, Label: Key}}
}

func jobs(_ context.Context, v any, h kind.Host) ([]kind.Job, toolspec.Problems) {
	c := v.(*Config)
	raw, _ := json.Marshal(map[string][]string{"enable": {c.Tool}})
	return []kind.Job{{Label: Key, Path: Key, Node: c.Node,
		Config: pluginhost.Config{Name: Key, Command: []string{h.Self, "plugin", "builtin"}, Options: raw, Key: Key}}}, nil
}
