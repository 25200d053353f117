// Package echo is a model provider written the way a new one is (see
// docs/contributing.md, "A new model provider or store kind"): the
// provider "echo" answers with the last user message, as written
// (model "plain") or upper-cased (model "loud"). It exists for the
// service's tests, which link it with one import line.
package echo

import (
	"context"
	"slices"
	"strings"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
)

// Name is the provider's value of model.provider.
const Name = "echo"

func init() {
	model.Register(model.ProviderInfo{
		Name:    Name,
		Rank:    100,
		Summary: "the last user message back, for tests",
		Needs:   []string{"model"},
		Settle:  settle,
		New:     func(c *model.Config) (model.ChatModel, error) { return Model{Loud: c.Model == "loud"}, nil },
	})
}

// settle checks the one thing the schema cannot: which models echo has.
func settle(c *model.Config, b model.Block) {
	if b.Has("model") && !slices.Contains([]string{"plain", "loud"}, c.Model) {
		b.Problem("model", "echo has the models \"plain\" and \"loud\", not %q", c.Model)
	}
}

// Model is the echo ChatModel.
type Model struct {
	// Loud upper-cases the answer.
	Loud bool
}

// Generate answers with the last user message's text.
func (m Model) Generate(_ context.Context, req model.Request) (model.Response, error) {
	var text string
	for _, msg := range req.Messages {
		if msg.Role == message.RoleUser {
			text = msg.Text()
		}
	}
	if m.Loud {
		text = strings.ToUpper(text)
	}
	return model.Response{Message: message.Text(message.RoleAssistant, text)}, nil
}
