package openai

import "github.com/tenxgraph/tenxgraph/host/model"

// The openai provider of model.provider: any OpenAI-compatible endpoint.
func init() {
	model.Register(model.ProviderInfo{
		Name:    "openai",
		Rank:    10,
		Summary: "any OpenAI-compatible endpoint",
		Needs:   []string{"model"},
		KeyEnv:  model.DefaultAPIKeyEnv,
		New:     func(c *model.Config) (model.ChatModel, error) { return model.Built(FromConfig(c)) },
	})
}
