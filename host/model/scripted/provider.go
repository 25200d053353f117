package scripted

import "github.com/tenxgraph/tenxgraph/host/model"

// The scripted provider of model.provider: rules from a script file, for
// demos and tests that must run offline.
func init() {
	model.Register(model.ProviderInfo{
		Name:    "scripted",
		Rank:    30,
		Summary: "rules from a script file, for demos and tests",
		Needs:   []string{"script"},
		Settle: func(c *model.Config, b model.Block) {
			if c.Script != "" {
				c.Script = b.Resolve(c.Script)
			}
		},
		New: func(c *model.Config) (model.ChatModel, error) { return model.Built(Load(c.Script)) },
	})
}
