package thread_test

import (
	"context"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
)

// say is a node that appends "<name>" as assistant text.
func say(name string) graph.Node {
	return graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, name)}}, nil
	})
}

func texts(ms []message.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Text())
	}
	return out
}

func user(s string) []message.Message { return []message.Message{message.Text(message.RoleUser, s)} }
