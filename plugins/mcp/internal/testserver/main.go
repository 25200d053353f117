// Command testserver is a small MCP server built with the official Go SDK,
// for the bridge's tests and benchmark: a real server (stdio, or Streamable
// HTTP with -http) whose tool list changes at run time, which the npm
// servers cannot do on demand.
//
//	testserver            serve on stdin/stdout
//	testserver -http ADDR serve Streamable HTTP at ADDR/mcp; prints the address
//	  -json               answer each call with a JSON body, not an SSE stream
//	  -sse                serve the legacy HTTP+SSE transport at ADDR/sse instead
//	testserver -meta      also have a tool "meta" that answers the request's
//	                      params._meta as JSON
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"what to send back"`
}

type addArgs struct {
	Name string `json:"name" jsonschema:"the new tool's name"`
}

type sleepArgs struct {
	MS      int    `json:"ms" jsonschema:"how long to sleep, in milliseconds"`
	Message string `json:"message,omitempty" jsonschema:"the message of each progress report"`
}

type bigArgs struct {
	Bytes int `json:"bytes" jsonschema:"how many bytes of text to return"`
}

// withMeta adds the tool "meta" (flag -meta).
var withMeta bool

func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "1.0.0"}, nil)
	if withMeta {
		mcp.AddTool(s, &mcp.Tool{Name: "meta", Description: "Answer the request's params._meta."},
			func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				b, err := json.Marshal(req.Params.Meta)
				if err != nil {
					return nil, nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
			})
	}
	echo := func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Send the text back.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, echo)
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Add an echo tool with the given name."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: in.Name, Description: "Added at run time; sends the text back."}, echo)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added " + in.Name}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Sleep, reporting progress every 100ms."},
		func(ctx context.Context, req *mcp.CallToolRequest, in sleepArgs) (*mcp.CallToolResult, any, error) {
			end := time.Now().Add(time.Duration(in.MS) * time.Millisecond)
			for i := 1; time.Now().Before(end); i++ {
				select {
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				case <-time.After(min(100*time.Millisecond, time.Until(end))):
				}
				if tok := req.Params.GetProgressToken(); tok != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Message: in.Message})
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Return that many bytes of text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in bigArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", in.Bytes)}}}, nil, nil
		})
	return s
}

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP on this address (host:port) instead of stdio")
	jsonBodies := flag.Bool("json", false, "with -http: answer each call with a JSON body rather than an SSE stream")
	sse := flag.Bool("sse", false, "with -http: serve the legacy HTTP+SSE transport at /sse instead")
	flag.BoolVar(&withMeta, "meta", false, `also have a tool "meta" that answers the request's params._meta`)
	flag.Parse()
	if *addr == "" {
		if err := newServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	if *sse {
		fmt.Fprintf(os.Stdout, "http://%s/sse\n", ln.Addr())
		mux.Handle("/sse", mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return newServer() }, nil))
	} else {
		fmt.Fprintf(os.Stdout, "http://%s/mcp\n", ln.Addr())
		mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newServer() },
			&mcp.StreamableHTTPOptions{JSONResponse: *jsonBodies}))
	}
	log.Fatal(http.Serve(ln, mux))
}
