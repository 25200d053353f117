// Command bench measures what the MCP bridge costs, and prints markdown
// tables for docs/benchmarks.md:
//
//   - connect + initialize: a stdio MCP server started and its handshake
//     done (and its tools listed), by the official Go SDK directly, by the
//     bridge in-process, and by the host (pluginhost.Start of the bridge
//     plugin, which starts the bridge process, which starts the server);
//   - the latency of one `echo` tool call, serially, by the SDK calling the
//     server directly, by the bridge in-process, and through the host's
//     path: pluginhost → gRPC → bridge process → stdio server. The paths take
//     turns in blocks, so that the machine's drift falls on all alike.
//
// Run it from the repository root, after `npm ci` in
// plugins/mcp/testdata/npm:
//
//	go run ./bench/mcpbench
//	go run ./bench/mcpbench -server go   # the Go SDK test server instead of server-everything
//
// The program is also the bridge plugin: it re-executes itself as `bench
// plugin mcp` (service.ServePlugin, what `tenxgraph plugin mcp` runs).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tenxgraph/tenxgraph/host/pluginhost"
	"github.com/tenxgraph/tenxgraph/host/service"
	"github.com/tenxgraph/tenxgraph/plugins/mcp"
	"github.com/tenxgraph/tenxgraph/sdk"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "plugin" {
		if err := service.ServePlugin(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	which := flag.String("server", "everything", `the stdio server: "everything" (node server-everything) or "go" (plugins/mcp/internal/testserver, built with the Go SDK)`)
	connects := flag.Int("connects", 10, "timed connects per path")
	warmup := flag.Int("warmup", 500, "untimed calls per path")
	calls := flag.Int("calls", 5000, "timed calls per path")
	block := flag.Int("block", 250, "calls per path per turn")
	flag.Parse()
	if err := run(*which, *connects, *warmup, *calls, *block); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(which string, connects, warmup, calls, block int) error {
	srv, args, tool, err := server(which)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("server: %s %s; %s, %d CPUs\n\n", srv.Command, strings.Join(srv.Args, " "), runtime.Version(), runtime.NumCPU())

	// Connect + initialize.
	paths := []struct {
		name string
		f    func() (func(), error)
	}{
		{"SDK directly: start, initialize, list tools", func() (func(), error) {
			cs, err := direct(srv)
			if err != nil {
				return nil, err
			}
			if _, err := cs.ListTools(context.Background(), nil); err != nil {
				return nil, err
			}
			return func() { _ = cs.Close() }, nil
		}},
		{"bridge in-process: `mcp.New` until `Metadata` returns", func() (func(), error) {
			b, err := mcp.New(mcp.Options{Servers: []mcp.Server{srv}}, nil)
			if err != nil {
				return nil, err
			}
			if _, err := b.Metadata(context.Background(), sdk.MetadataRequest{}); err != nil {
				return nil, err
			}
			return func() { _ = b.Shutdown(context.Background()) }, nil
		}},
		{"host: `pluginhost.Start` of the bridge plugin (process + server + tool list)", func() (func(), error) {
			p, err := hostBridge(self, srv)
			if err != nil {
				return nil, err
			}
			return func() { _ = p.Shutdown(context.Background()) }, nil
		}},
	}
	fmt.Println("| connect + initialize | p50 ms | min ms | max ms |")
	fmt.Println("|---|---|---|---|")
	for _, p := range paths {
		var ds []time.Duration
		for range connects + 1 {
			t0 := time.Now()
			stop, err := p.f()
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			ds = append(ds, time.Since(t0))
			stop()
		}
		ds = ds[1:] // the first warms caches
		slices.Sort(ds)
		fmt.Printf("| %s | %.1f | %.1f | %.1f |\n", p.name, ms(pct(ds, 50)), ms(ds[0]), ms(ds[len(ds)-1]))
	}

	// Calls.
	cs, err := direct(srv)
	if err != nil {
		return err
	}
	defer cs.Close()
	b, err := mcp.New(mcp.Options{Servers: []mcp.Server{srv}}, nil)
	if err != nil {
		return err
	}
	defer b.Shutdown(context.Background())
	if _, err := b.Metadata(context.Background(), sdk.MetadataRequest{}); err != nil {
		return err
	}
	host, err := hostBridge(self, srv)
	if err != nil {
		return err
	}
	defer host.Shutdown(context.Background())
	raw := json.RawMessage(args)
	ctx := context.Background()
	progress := sdk.WithProgress(ctx, func(sdk.Progress) {})
	callers := []struct {
		name string
		f    func() error
	}{
		{"a. SDK directly: `ClientSession.CallTool`", func() error {
			res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: tool, Arguments: raw})
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error")
			}
			return err
		}},
		{"b. bridge in-process: `(*mcp.Bridge).CallTool`", func() error { return check(b.CallTool(ctx, sdk.CallToolRequest{Name: tool, Arguments: raw})) }},
		{"c. host → bridge plugin → server: `(*pluginhost.Plugin).CallTool`", func() error {
			return check(host.CallTool(ctx, sdk.CallToolRequest{Name: tool, Arguments: raw}))
		}},
		{"d. as c, with a progress listener (a streamed run: CallToolStream)", func() error {
			return check(host.CallTool(progress, sdk.CallToolRequest{Name: tool, Arguments: raw}))
		}},
	}
	samples := make([][]time.Duration, len(callers))
	for i, c := range callers {
		for range warmup {
			if err := c.f(); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
		}
		samples[i] = make([]time.Duration, 0, calls)
	}
	for done := 0; done < calls; done += block {
		for i, c := range callers {
			for range min(block, calls-done) {
				t0 := time.Now()
				if err := c.f(); err != nil {
					return fmt.Errorf("%s: %w", c.name, err)
				}
				samples[i] = append(samples[i], time.Since(t0))
			}
		}
	}
	fmt.Printf("\n`%s` %s, %d timed calls per path (after %d untimed), in turns of %d:\n\n", tool, args, calls, warmup, block)
	fmt.Println("| path | p50 µs | p90 µs | p99 µs | p50 over a |")
	fmt.Println("|---|---|---|---|---|")
	base := pct(sorted(samples[0]), 50)
	for i, c := range callers {
		s := sorted(samples[i])
		p50 := pct(s, 50)
		over := "—"
		if i > 0 {
			over = fmt.Sprintf("%+.0f µs", us(p50-base))
		}
		fmt.Printf("| %s | %.0f | %.0f | %.0f | %s |\n", c.name, us(p50), us(pct(s, 90)), us(pct(s, 99)), over)
	}
	return nil
}

// server returns the server to measure, and its echo tool and arguments.
func server(which string) (mcp.Server, string, string, error) {
	switch which {
	case "everything":
		entry, err := filepath.Abs("plugins/mcp/testdata/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
		if err != nil {
			return mcp.Server{}, "", "", err
		}
		if _, err := os.Stat(entry); err != nil {
			return mcp.Server{}, "", "", fmt.Errorf("%w: run `npm ci` in plugins/mcp/testdata/npm, from the repository root", err)
		}
		return mcp.Server{Name: "everything", Type: "stdio", Command: "node", Args: []string{entry, "stdio"}}, `{"message":"hello"}`, "echo", nil
	case "go":
		bin := filepath.Join(os.TempDir(), "tenxgraph-mcp-bench-testserver")
		if out, err := exec.Command("go", "build", "-o", bin, "./plugins/mcp/internal/testserver").CombinedOutput(); err != nil {
			return mcp.Server{}, "", "", fmt.Errorf("build the test server: %v\n%s", err, out)
		}
		return mcp.Server{Name: "go", Type: "stdio", Command: bin}, `{"text":"hello"}`, "echo", nil
	}
	return mcp.Server{}, "", "", fmt.Errorf("unknown server %q", which)
}

// direct connects with the official SDK the way the bridge does (pinned
// protocol version, no roots), over its own stdio transport.
func direct(srv mcp.Server) (*mcpsdk.ClientSession, error) {
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "bench", Version: "1"}, &mcpsdk.ClientOptions{Capabilities: &mcpsdk.ClientCapabilities{}})
	return c.Connect(context.Background(), &mcpsdk.CommandTransport{Command: exec.Command(srv.Command, srv.Args...), TerminateDuration: time.Second},
		&mcpsdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// hostBridge starts the bridge as the host does.
func hostBridge(self string, srv mcp.Server) (*pluginhost.Plugin, error) {
	raw, err := json.Marshal(mcp.Options{Servers: []mcp.Server{srv}, Vars: map[string]string{}})
	if err != nil {
		return nil, err
	}
	return pluginhost.Start(context.Background(), pluginhost.Config{Name: "mcp", Command: []string{self, "plugin", "mcp"},
		Options: raw, Logger: hclog.NewNullLogger()})
}

func check(resp sdk.CallToolResponse, err error) error {
	if err == nil && resp.IsError {
		err = fmt.Errorf("tool error: %s", resp.Content)
	}
	return err
}

func sorted(d []time.Duration) []time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s
}

func pct(s []time.Duration, p int) time.Duration { return s[(len(s)-1)*p/100] }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
