package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

// mcpBigArgs: mcp_big answers mb MiB once together calls of it are in
// flight (1 when left out), so that the calls are answered at once on one
// connection however the host spreads them.
type mcpBigArgs struct {
	MB       int `json:"mb"`
	Together int `json:"together,omitempty"`
}

// mcpBigText is what mcp_big returns to the SDK, and what bigWriter sends
// mb MiB of text in place of.
const mcpBigText = "mcp_big sends %d MiB in place of this text"

// addMCPBig adds the MCP server's mcp_big, which returns mb MiB of text in
// one message, whatever the client's bounds.
func addMCPBig(s *mcpsdk.Server) {
	var (
		mu      sync.Mutex
		waiting int
		all     = make(chan struct{})
	)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "mcp_big", Description: "Returns mb MiB of text once together calls of it are in flight."},
		func(ctx context.Context, _ *mcpsdk.CallToolRequest, in mcpBigArgs) (*mcpsdk.CallToolResult, any, error) {
			if in.MB < 1 {
				return nil, nil, fmt.Errorf("want {\"mb\": N}, N >= 1")
			}
			mu.Lock()
			ch := all
			if waiting++; waiting >= in.Together {
				close(all)
				waiting, all = 0, make(chan struct{})
			}
			mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				mu.Lock()
				if all == ch { // not answered: it no longer waits
					waiting--
				}
				mu.Unlock()
				return nil, nil, ctx.Err()
			}
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: fmt.Sprintf(mcpBigText, in.MB)}}}, nil, nil
		})
}

// bigWriter is the MCP server's stdout. It passes each message the SDK
// writes, but for mcp_big's result, in place of which it writes the
// response with mb MiB of text, a piece at a time: the client receives
// the same bytes as if the SDK had marshalled that much text, without the
// server making them first. Made whole, three results of 100 MiB took the
// server seconds of CPU and 2 GB, long enough on a loaded machine to run
// into the call's timeout before the first byte was sent.
type bigWriter struct{ w io.Writer }

func (b bigWriter) Write(p []byte) (int, error) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	var mb int
	if json.Unmarshal(p, &msg) != nil || len(msg.ID) == 0 || len(msg.Result.Content) != 1 {
		return b.w.Write(p)
	}
	if n, _ := fmt.Sscanf(msg.Result.Content[0].Text, mcpBigText, &mb); n != 1 {
		return b.w.Write(p)
	}
	if _, err := fmt.Fprintf(b.w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, msg.ID); err != nil {
		return 0, err
	}
	piece := bytes.Repeat([]byte{'x'}, 1<<20)
	for range mb {
		if _, err := b.w.Write(piece); err != nil {
			return 0, err
		}
	}
	if _, err := io.WriteString(b.w, `"}]}}`+"\n"); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (bigWriter) Close() error { return nil }
