// Command hostile is a tool provider plugin that misbehaves on purpose, to
// test the sandbox with a real process: it reads its environment, forks
// children, spins the CPU, eats memory and dials the network. Run with the
// argument "mcp" it is instead a stdio MCP server that starts a child.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tenxgraph/tenxgraph/sdk"
)

type noArgs struct{}

// instance tells this process from an earlier one with the same pid (in
// a PID namespace of its own, every start gets the same).
var instance = strconv.FormatInt(time.Now().UnixNano(), 36)

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
	if len(os.Args) > 1 && os.Args[1] == "escapee" {
		escapee()
		return
	}
	sdk.Serve(sdk.MustTools("hostile", "1", append([]sdk.Tool{
		sdk.MustTool("environ", "Its environment.", func(context.Context, noArgs) ([]string, error) {
			return os.Environ(), nil
		}),
		sdk.MustTool("ok", "Answers ok.", func(context.Context, noArgs) (string, error) {
			return "ok pid " + strconv.Itoa(os.Getpid()) + " " + instance, nil
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
	}, append(moreTools(), attachTools()...)...)...))
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
	_ = s.Run(context.Background(), &mcpsdk.IOTransport{Reader: os.Stdin, Writer: bigWriter{os.Stdout}})
}

// moreTools are the attacks on the sandbox's defaults: reading every
// process it can see, escaping its process group and session, and memory
// that RLIMIT_DATA does not count.
func moreTools() []sdk.Tool {
	return []sdk.Tool{
		sdk.MustTool("snoop", "Reads /proc/*/environ and /proc/*/cmdline of every process it can see, and its own environment, looking for the strings of find.", snoop),
		sdk.MustTool("escape", "Starts n children that leave its process group and session (setsid, double fork), then crashes if asked.", func(_ context.Context, in forkArgs) (int, error) {
			for range in.N {
				self, _ := os.Executable()
				cmd := exec.Command(self, "escapee")
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
				if err := cmd.Run(); err != nil { // it starts the grandchild, then exits
					return 0, err
				}
			}
			if in.Crash {
				os.Exit(6)
			}
			return in.N, nil
		}),
		sdk.MustTool("shm", "Maps mb MiB of shared anonymous memory and touches every page.", func(_ context.Context, in shmArgs) (string, error) {
			size := in.MB << 20
			mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_ANONYMOUS)
			if err != nil {
				return "", err
			}
			for i := 0; i < size; i += 4096 {
				mem[i] = 1
			}
			return fmt.Sprintf("touched %d MiB of shared memory", in.MB), nil
		}),
	}
}

type shmArgs struct {
	MB int `json:"mb"`
}

type snoopArgs struct {
	Find []string `json:"find"`
}

// snoopResult is what snoop saw: how many processes, how many of their
// environments it could read, and where each string of find turned up.
type snoopResult struct {
	Seen     int      `json:"seen"`
	Environs int      `json:"environs"`
	Found    []string `json:"found"`
}

func snoop(_ context.Context, in snoopArgs) (snoopResult, error) {
	var r snoopResult
	look := func(where string, text []byte) {
		for _, f := range in.Find {
			if f != "" && bytes.Contains(text, []byte(f)) {
				r.Found = append(r.Found, f+" in "+where)
			}
		}
	}
	look("its own environment", []byte(strings.Join(os.Environ(), "\x00")))
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return r, err
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		r.Seen++
		if env, err := os.ReadFile("/proc/" + e.Name() + "/environ"); err == nil {
			r.Environs++
			look("/proc/"+e.Name()+"/environ", env)
		}
		if cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil {
			look("/proc/"+e.Name()+"/cmdline", cmd)
		}
	}
	return r, nil
}

// escapee is a child of the escape tool: it starts a grandchild in a
// session of its own, marked HOSTILE_ESCAPEE=1, and exits, so that the
// grandchild is an orphan outside the plugin's process group.
func escapee() {
	cmd := exec.Command("sleep", "1000")
	cmd.Env = append(os.Environ(), "HOSTILE_ESCAPEE=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		os.Exit(1)
	}
}
