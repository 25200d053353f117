package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	hostconfig "github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/pluginhost"
	"github.com/tenxgraph/tenxgraph/plugins/builtin"
	"github.com/tenxgraph/tenxgraph/plugins/remote"
	"github.com/tenxgraph/tenxgraph/sdk"
	pb "github.com/tenxgraph/tenxgraph/sdk/proto/toolprovider/v1"
)

// echoArgs is the trivial tool call's arguments: a small JSON object.
var echoArgs = []byte(`{"text":"hello, world","n":42,"ok":true}`)

// echoTools is the echo provider of paths (a) and (c): an sdk.Tools whose
// one tool returns its arguments as they came.
func echoTools() *sdk.Tools {
	return sdk.MustTools("echo", "1.0.0", sdk.Tool{
		Spec: sdk.ToolSpec{Name: "echo", Description: "Returns its arguments."},
		Handler: sdk.HandlerFunc(func(_ context.Context, req sdk.CallToolRequest) (sdk.CallToolResponse, error) {
			return sdk.CallToolResponse{Content: req.Arguments}, nil
		}),
	})
}

// serveSDK is `pluginbench serve-sdk`: path (c)'s plugin.
func serveSDK() { sdk.Serve(echoTools()) }

// bareName is the name the bare plugin is dispensed under.
const bareName = "echo"

// bareServer is the least a toolprovider.v1 server can be: CallTool returns
// the request's arguments_json, nothing else is implemented.
type bareServer struct {
	pb.UnimplementedToolProviderServer
}

func (bareServer) CallTool(_ context.Context, req *pb.CallTool_Request) (*pb.CallTool_Response, error) {
	return &pb.CallTool_Response{ContentJson: req.ArgumentsJson}, nil
}

// barePlugin joins bareServer to go-plugin; its client side is the raw
// generated client.
type barePlugin struct {
	plugin.NetRPCUnsupportedPlugin
}

func (barePlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterToolProviderServer(s, bareServer{})
	return nil
}

func (barePlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pb.NewToolProviderClient(c), nil
}

// serveBare is `pluginbench serve-bare`: path (b)'s plugin, plugin.Serve
// with go-plugin's default gRPC server. It exits if the benchmark dies
// (go-plugin alone would leave it running).
func serveBare() {
	ppid := os.Getppid()
	go func() {
		for range time.Tick(250 * time.Millisecond) {
			if os.Getppid() != ppid {
				os.Exit(1)
			}
		}
	}()
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: sdk.Handshake,
		Plugins:         plugin.PluginSet{bareName: barePlugin{}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}

// envProfile names the file a re-executed echo plugin writes its CPU
// profile to.
const envProfile = "PLUGINBENCH_CPUPROFILE"

// withProfile runs a plugin's serve function, under a CPU profile when the
// host asked for one. The profile is written when Serve returns, which is
// how both go-plugin and sdk.Serve end on a graceful stop.
func withProfile(serve func()) {
	path := os.Getenv(envProfile)
	if path == "" {
		serve()
		return
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pluginbench:", err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "pluginbench:", err)
		os.Exit(1)
	}
	serve()
	pprof.StopCPUProfile()
	_ = f.Close()
}

// bareClient is the host side of path (b): go-plugin's client with its
// default runner, no AutoMTLS, and the generated client.
type bareClient struct {
	pc  *plugin.Client
	c   pb.ToolProviderClient
	pid int
}

// startBare starts the bare plugin and makes its first call.
func (b *bench) startBare(ctx context.Context, profile string) (*bareClient, error) {
	cmd := exec.Command(b.self, "serve-bare")
	if profile != "" {
		cmd.Env = append(os.Environ(), envProfile+"="+profile)
	}
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		Plugins:          plugin.PluginSet{bareName: barePlugin{}},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           b.log.Named("bare"),
	})
	rpc, err := pc.Client()
	if err != nil {
		pc.Kill()
		return nil, fmt.Errorf("start the bare plugin: %w", err)
	}
	bc := &bareClient{pc: pc}
	bc.pid, _ = strconv.Atoi(pc.ID())
	raw, err := rpc.Dispense(bareName)
	if err != nil {
		pc.Kill()
		return nil, fmt.Errorf("bare plugin: %w", err)
	}
	bc.c = raw.(pb.ToolProviderClient)
	if err := bc.call(ctx); err != nil {
		pc.Kill()
		return nil, fmt.Errorf("bare plugin: first call: %w", err)
	}
	if bc.pid == 0 {
		pc.Kill()
		return nil, errors.New("bare plugin: no pid")
	}
	return bc, nil
}

func (bc *bareClient) call(ctx context.Context) error {
	resp, err := bc.c.CallTool(ctx, &pb.CallTool_Request{Name: "echo", ArgumentsJson: echoArgs})
	if err != nil {
		return err
	}
	if !bytes.Equal(resp.ContentJson, echoArgs) || resp.IsError {
		return fmt.Errorf("echo returned %q (is_error %v)", resp.ContentJson, resp.IsError)
	}
	return nil
}

// quickstartBuiltin is the quickstart's builtin_tools, as host/service hands
// them to the builtin plugin.
var quickstartBuiltin = builtin.Options{Enable: []string{"calculator", "current_time"}}

// providerConfigs are the pluginhost configs host/service builds for the
// quickstart: builtin and the remote bridge, both served by this binary.
func (b *bench) providerConfigs() (bc, rc pluginhost.Config, err error) {
	raw, err := json.Marshal(quickstartBuiltin)
	if err != nil {
		return bc, rc, err
	}
	bc = pluginhost.Config{Name: builtin.Name, Command: []string{b.self, "plugin", "builtin"},
		Options: raw, Logger: b.log, Sandbox: b.profile, Trampoline: b.self}
	rc = pluginhost.Config{Name: remote.Name, Command: []string{b.self, "plugin", "remote"}, Logger: b.log,
		Sandbox: b.profile, Trampoline: b.self}
	return bc, rc, nil
}

// providers is a started builtin + remote pair.
type providers struct {
	builtin, remote *pluginhost.Plugin
}

// startProviders starts builtin and remote concurrently, as host/service
// does, and says how long each Start and the pair took.
func (b *bench) startProviders(ctx context.Context) (pr providers, total, tb, tr time.Duration, err error) {
	bcfg, rcfg, err := b.providerConfigs()
	if err != nil {
		return pr, 0, 0, 0, err
	}
	var errB, errR error
	var wg sync.WaitGroup
	wg.Add(2)
	t0 := time.Now()
	go func() {
		defer wg.Done()
		pr.builtin, errB = pluginhost.Start(ctx, bcfg)
		tb = time.Since(t0)
	}()
	go func() {
		defer wg.Done()
		pr.remote, errR = pluginhost.Start(ctx, rcfg)
		tr = time.Since(t0)
	}()
	wg.Wait()
	total = time.Since(t0)
	if err := errors.Join(errB, errR); err != nil {
		_, _ = pr.shutdown()
		return providers{}, 0, 0, 0, err
	}
	if err := pr.check(); err != nil {
		_, _ = pr.shutdown()
		return providers{}, 0, 0, 0, err
	}
	return pr, total, tb, tr, nil
}

// check verifies the tool lists read at start are the quickstart's.
func (pr providers) check() error {
	md, _ := pr.builtin.Metadata(context.Background(), sdk.MetadataRequest{})
	var names []string
	for _, t := range md.Tools {
		names = append(names, t.Name)
	}
	if !slices.Equal(names, quickstartBuiltin.Enable) {
		return fmt.Errorf("builtin lists tools %v, want %v", names, quickstartBuiltin.Enable)
	}
	md, _ = pr.remote.Metadata(context.Background(), sdk.MetadataRequest{})
	if !slices.Contains(md.Capabilities, sdk.CapabilityRemote) {
		return fmt.Errorf("remote announces capabilities %v, want %q among them", md.Capabilities, sdk.CapabilityRemote)
	}
	if pr.builtin.PID() == 0 || pr.remote.PID() == 0 {
		return errors.New("a started provider has no process")
	}
	return nil
}

// shutdown stops both concurrently; nil members are skipped.
func (pr providers) shutdown() (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs [2]error
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, p := range []*pluginhost.Plugin{pr.builtin, pr.remote} {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.Shutdown(ctx)
		}()
	}
	wg.Wait()
	return time.Since(t0), errors.Join(errs[:]...)
}

// startup holds the start-up measurements, in the order they were taken.
type startup struct {
	floor, bare, bareKill, pair, builtin, remote, pairStop []time.Duration
	firstPair                                              time.Duration // the untimed first start
}

// measureStartup times, b.cfg.starts times each after one untimed start:
// exec of this binary (the floor: fork, exec, Go runtime and package
// inits, exit); the bare plugin from NewClient to its first call answered;
// and builtin + remote started concurrently through pluginhost.Start.
func (b *bench) measureStartup(ctx context.Context) (*startup, error) {
	st := &startup{}
	n := b.cfg.starts
	for i := range n + 1 {
		t0 := time.Now()
		if out, err := exec.CommandContext(ctx, b.self, "noop").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("exec floor: %w: %s", err, out)
		}
		if i > 0 {
			st.floor = append(st.floor, time.Since(t0))
		}
	}
	for i := range n + 1 {
		t0 := time.Now()
		bc, err := b.startBare(ctx, "")
		if err != nil {
			return nil, err
		}
		d := time.Since(t0)
		t1 := time.Now()
		bc.pc.Kill()
		if i > 0 {
			st.bare = append(st.bare, d)
			st.bareKill = append(st.bareKill, time.Since(t1))
		}
	}
	for i := range n + 1 {
		pr, total, tb, tr, err := b.startProviders(ctx)
		if err != nil {
			return nil, err
		}
		stop, err := pr.shutdown()
		if err != nil {
			return nil, fmt.Errorf("shut down builtin and remote: %w", err)
		}
		if i == 0 {
			st.firstPair = total
			continue
		}
		st.pair = append(st.pair, total)
		st.builtin = append(st.builtin, tb)
		st.remote = append(st.remote, tr)
		st.pairStop = append(st.pairStop, stop)
	}
	return st, nil
}

// longLived are the plugins that stay up for the call and memory
// measurements.
type longLived struct {
	tools *sdk.Tools
	bare  *bareClient
	echo  *pluginhost.Plugin // path (c)
	pr    providers
	rss   []rssRow
}

type rssRow struct {
	name       string
	pid        int
	start, end mem
}

// startLongLived starts builtin + remote, the bare echo plugin and the sdk
// echo plugin, and reads their memory once they are ready.
func (b *bench) startLongLived(ctx context.Context) (*longLived, error) {
	lp := &longLived{tools: echoTools()}
	pr, _, _, _, err := b.startProviders(ctx)
	if err != nil {
		return nil, fmt.Errorf("builtin and remote: %w", err)
	}
	b.onClose(func() error { _, err := pr.shutdown(); return err })
	lp.pr = pr

	var bareProf, sdkProf string
	if b.cfg.pluginProf != "" {
		bareProf = filepath.Join(b.cfg.pluginProf, "bare.pprof")
		sdkProf = filepath.Join(b.cfg.pluginProf, "sdk.pprof")
	}
	bc, err := b.startBare(ctx, bareProf)
	if err != nil {
		return nil, err
	}
	b.onClose(func() error { bc.pc.Kill(); return nil })
	lp.bare = bc

	// The limits host/service gives every provider by default.
	cfg := pluginhost.Config{Name: "echo", Command: []string{b.self, "serve-sdk"}, Logger: b.log,
		Limits: pluginhost.Limits{Timeout: hostconfig.DefaultTimeout, MaxArgumentBytes: hostconfig.DefaultMaxArgumentBytes, MaxResultBytes: hostconfig.DefaultMaxResultBytes}}
	if sdkProf != "" {
		cfg.Env = map[string]string{envProfile: sdkProf}
	}
	echo, err := pluginhost.Start(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("sdk echo plugin: %w", err)
	}
	b.onClose(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return echo.Shutdown(ctx)
	})
	lp.echo = echo

	lp.rss = []rssRow{
		{name: "builtin (`plugin builtin`, quickstart tools)", pid: pr.builtin.PID()},
		{name: "remote (`plugin remote`)", pid: pr.remote.PID()},
		{name: "bare echo (`serve-bare`, path b)", pid: bc.pid},
		{name: "sdk echo (`serve-sdk`, path c)", pid: echo.PID()},
	}
	return lp, lp.readRSS(true)
}

// readRSS records every long-lived plugin's resident memory.
func (lp *longLived) readRSS(atStart bool) error {
	for i := range lp.rss {
		r := &lp.rss[i]
		m, err := readMem(r.pid)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		if atStart {
			r.start = m
		} else {
			r.end = m
		}
	}
	return nil
}

// callPath is one way to make the trivial tool call.
type callPath struct {
	short, name string
	call        func(context.Context) error
	lat         []time.Duration // serial latencies
	tput        []float64       // calls/s per entry of cfg.concs
}

// paths are the three ways the echo call is measured.
func (lp *longLived) paths() []*callPath {
	req := sdk.CallToolRequest{Name: "echo", Arguments: echoArgs}
	check := func(resp sdk.CallToolResponse, err error) error {
		if err != nil {
			return err
		}
		if !bytes.Equal(resp.Content, echoArgs) || resp.IsError {
			return fmt.Errorf("echo returned %q (is_error %v)", resp.Content, resp.IsError)
		}
		return nil
	}
	return []*callPath{
		{short: "a", name: "a. in-process: `(*sdk.Tools).CallTool`",
			call: func(ctx context.Context) error { return check(lp.tools.CallTool(ctx, req)) }},
		{short: "b", name: "b. bare go-plugin echo RPC",
			call: lp.bare.call},
		{short: "c", name: "c. host → plugin: `(*pluginhost.Plugin).CallTool`",
			call: func(ctx context.Context) error { return check(lp.echo.CallTool(ctx, req)) }},
	}
}
