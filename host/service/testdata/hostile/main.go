// Command hostile is a tool provider plugin that misbehaves on purpose, to
// test the sandbox with a real process: it reads its environment, forks
// children, spins the CPU, eats memory and dials the network. Run with the
// argument "mcp" it is instead a stdio MCP server that starts a child.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tenxgraph/tenxgraph/sdk"
)

type noArgs struct{}

type forkArgs struct {
	N     int  `json:"n"`
	Crash bool `json:"crash,omitempty"`
}

type dialArgs struct {
	Addr string `json:"addr"`
}

type pathArgs struct {
	Path string `json:"path"`
}

// child starts a long sleep marked with the test's marker, so the test can
// find every process this plugin started.
func child() (*exec.Cmd, error) {
	cmd := exec.Command("sleep", "1000")
	cmd.Args[0] = "sleep" // the marker is in the environment
	cmd.Env = append(os.Environ(), "HOSTILE_CHILD=1")
	return cmd, cmd.Start()
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "mcp" {
		serveMCP()
		return
	}
	sdk.Serve(sdk.MustTools("hostile", "1",
		sdk.MustTool("environ", "Its environment.", func(context.Context, noArgs) ([]string, error) {
			return os.Environ(), nil
		}),
		sdk.MustTool("ok", "Answers ok.", func(context.Context, noArgs) (string, error) {
			return "ok pid " + strconv.Itoa(os.Getpid()), nil
		}),
		sdk.MustTool("fork", "Starts n children, then crashes if asked.", func(_ context.Context, in forkArgs) (int, error) {
			for range in.N {
				if _, err := child(); err != nil {
					return 0, err
				}
			}
			if in.Crash {
				os.Exit(3)
			}
			return in.N, nil
		}),
		sdk.MustTool("forkbomb", "Starts children until it cannot, then crashes.", func(context.Context, noArgs) (int, error) {
			n := 0
			for ; n < 100000; n++ {
				if _, err := child(); err != nil {
					fmt.Fprintf(os.Stderr, "fork %d failed: %v\n", n, err)
					os.Exit(4)
				}
			}
			return n, nil
		}),
		sdk.MustTool("spin", "Spins the CPU.", func(context.Context, noArgs) (int, error) {
			x := 0
			for {
				x++
			}
		}),
		sdk.MustTool("hog", "Allocates memory until it cannot.", func(context.Context, noArgs) (int, error) {
			var keep [][]byte
			for {
				b := make([]byte, 16<<20)
				for i := range b {
					b[i] = 1
				}
				keep = append(keep, b)
				if len(keep) > 1<<20 {
					return len(keep), nil
				}
			}
		}),
		sdk.MustTool("readfile", "Reads a file.", func(_ context.Context, in pathArgs) (string, error) {
			b, err := os.ReadFile(in.Path)
			return string(b), err
		}),
		sdk.MustTool("writefile", "Writes a file.", func(_ context.Context, in pathArgs) (string, error) {
			return "written", os.WriteFile(in.Path, []byte("pwned"), 0o644)
		}),
		sdk.MustTool("dial", "Connects to a TCP address.", func(_ context.Context, in dialArgs) (string, error) {
			c, err := net.DialTimeout("tcp", in.Addr, 2*time.Second)
			if err != nil {
				return "", err
			}
			c.Close()
			return "connected", nil
		}),
		bigTool(),
	))
}

// serveMCP is a stdio MCP server that starts a child, and whose tool
// "crash" exits (leaving the child behind, were nobody to end it).
func serveMCP() {
	if _, err := child(); err != nil {
		panic(err)
	}
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "hostile", Version: "1"}, nil)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "mcp_environ", Description: "Its environment."},
		func(context.Context, *mcpsdk.CallToolRequest, noArgs) (*mcpsdk.CallToolResult, any, error) {
			raw, _ := json.Marshal(os.Environ())
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: string(raw)}}}, nil, nil
		})
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "mcp_crash", Description: "Exits."},
		func(context.Context, *mcpsdk.CallToolRequest, noArgs) (*mcpsdk.CallToolResult, any, error) {
			os.Exit(5)
			return nil, nil, nil
		})
	addMCPBig(s)
	_ = s.Run(context.Background(), &mcpsdk.StdioTransport{})
}
