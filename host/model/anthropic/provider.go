package anthropic

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/tenxgraph/tenxgraph/host/model"
)

// The anthropic provider of model.provider: Anthropic's Messages API,
// which alone takes max_tokens (it requires one).
func init() {
	model.Register(model.ProviderInfo{
		Name:    "anthropic",
		Rank:    20,
		Summary: "Anthropic's Messages API",
		Needs:   []string{"model"},
		Own:     []string{"max_tokens"},
		Refuse: func(key, other string) string {
			return fmt.Sprintf("only the anthropic provider takes %s (the Messages API requires one); the %s provider leaves the output limit to the model", key, other)
		},
		KeyEnv: model.DefaultAnthropicAPIKeyEnv,
		Settle: settle,
		New:    func(c *model.Config) (model.ChatModel, error) { return model.Built(FromConfig(c)) },
	})
}

// settle gives max_tokens its default and refuses a base_url ending in
// /v1, which the provider appends itself.
func settle(c *model.Config, b model.Block) {
	if !b.Has("max_tokens") {
		c.MaxTokens = DefaultMaxTokens
	}
	if !b.Checked("base_url") {
		return
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return
	}
	if p := strings.TrimRight(u.Path, "/"); p == "/v1" || strings.HasSuffix(p, "/v1") {
		b.Problem("base_url", "the anthropic provider's base_url is the API root, without /v1 (it appends /v1/messages): use %q", strings.TrimSuffix(strings.TrimRight(c.BaseURL, "/"), "/v1"))
	}
}
