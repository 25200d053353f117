package sdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tenxgraph/tenxgraph/sdk"
)

func ExampleNewTool() {
	type shoutArgs struct {
		Text  string `json:"text" jsonschema:"what to shout"`
		Times int    `json:"times,omitempty" jsonschema:"how many times (default 1)"`
	}
	tool, err := sdk.NewTool("shout", "Shout some text.",
		func(ctx context.Context, in shoutArgs) (string, error) {
			return strings.Repeat(strings.ToUpper(in.Text)+"! ", max(in.Times, 1)), nil
		},
		sdk.WithProperty("times", `{"minimum": 1, "maximum": 3}`))
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s\n", tool.Spec.Parameters)

	resp, _ := tool.Handler.CallTool(context.Background(), sdk.CallToolRequest{
		Name: "shout", Arguments: json.RawMessage(`{"text": "hi", "times": 2}`)})
	fmt.Printf("%s\n", resp.Content)

	resp, _ = tool.Handler.CallTool(context.Background(), sdk.CallToolRequest{
		Name: "shout", Arguments: json.RawMessage(`{"text": "hi", "volume": 11}`)})
	fmt.Printf("%s is_error=%v\n", resp.Content, resp.IsError)
	// Output:
	// {"type":"object","properties":{"text":{"type":"string","description":"what to shout"},"times":{"type":"integer","description":"how many times (default 1)","minimum":1,"maximum":3}},"required":["text"],"additionalProperties":false}
	// "HI! HI! "
	// "invalid arguments: volume: unknown key" is_error=true
}
