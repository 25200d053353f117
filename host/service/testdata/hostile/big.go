package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tenxgraph/tenxgraph/sdk"
)

type bigArgs struct {
	MB int `json:"mb"`
}

var (
	bigMu   sync.Mutex
	bigJSON = map[int][]byte{} // a JSON string of that many MiB, built once
)

// bigResult is a JSON string of mb MiB: the same bytes for every call, so
// that the plugin's own memory is what gRPC copies to send it, not more.
func bigResult(mb int) []byte {
	bigMu.Lock()
	defer bigMu.Unlock()
	if b, ok := bigJSON[mb]; ok {
		return b
	}
	b := make([]byte, mb<<20)
	for i := range b {
		b[i] = 'x'
	}
	b[0], b[len(b)-1] = '"', '"'
	bigJSON[mb] = b
	return b
}

// bigTool returns mb MiB, whatever the host's max_result_bytes.
func bigTool() sdk.Tool {
	return sdk.Tool{
		Spec: sdk.ToolSpec{Name: "big", Description: "Returns mb MiB of text.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"mb":{"type":"integer"}}}`)},
		Handler: sdk.HandlerFunc(func(_ context.Context, req sdk.CallToolRequest) (sdk.CallToolResponse, error) {
			var in bigArgs
			if err := json.Unmarshal(req.Arguments, &in); err != nil || in.MB < 1 {
				return sdk.CallToolResponse{}, fmt.Errorf("want {\"mb\": N}, N >= 1: %v", err)
			}
			return sdk.CallToolResponse{Content: bigResult(in.MB)}, nil
		}),
	}
}

// addMCPBig adds the MCP server's mcp_big, which returns mb MiB of text in
// one message, whatever the client's bounds.
func addMCPBig(s *mcpsdk.Server) {
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "mcp_big", Description: "Returns mb MiB of text."},
		func(_ context.Context, _ *mcpsdk.CallToolRequest, in bigArgs) (*mcpsdk.CallToolResult, any, error) {
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: strings.Repeat("x", in.MB<<20)}}}, nil, nil
		})
}
