// Package sdktest tests a tool provider the way the host will run it, in a
// few lines of an ordinary Go test.
//
// In process, through the real gRPC adapter and protobuf encoding:
//
//	func TestTools(t *testing.T) {
//		p := sdktest.Serve(t, newProvider())
//		resp := sdktest.Call(t, p, "current_weather", map[string]any{"city": "Paris"})
//		got := sdktest.Decode[Weather](t, resp)
//		...
//	}
//
// As a real plugin subprocess, started over go-plugin as the host starts
// one (the handshake, gRPC, Configure, the Watch lifeline), without the
// host's supervisor:
//
//	func TestPlugin(t *testing.T) {
//		t.Setenv("WEATHER_API_URL", srv.URL) // the plugin inherits the environment
//		p := sdktest.Start(t, sdktest.Build(t, "."))
//		resp := sdktest.Call(t, p, "forecast", map[string]any{"city": "Paris", "days": 2})
//		...
//	}
//
// Both also check every tool's spec as the host does when it loads a
// provider, and Call checks the arguments against the tool's schema as the
// host does before each call, and the result's attachments as the host
// does after it, so a test sees what a model would see. A result's images
// and files are in its Attachments, in order:
//
//	resp := sdktest.Call(t, p, "screenshot", map[string]any{"url": srv.URL})
//	if len(resp.Attachments) != 1 || resp.Attachments[0].MimeType != "image/png" { ... }
//	cfg, err := png.DecodeConfig(bytes.NewReader(resp.Attachments[0].Data))
//
// CallContext takes the call's context: wrap it with sdk.WithProgress to
// see a tool's progress, or cancel it to test that the tool stops.
// Everything started is stopped when the test ends.
package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// shutdownTimeout bounds the provider's Shutdown at the end of a test: the
// host allows a plugin 5s, a test is more patient on a loaded machine.
const shutdownTimeout = 10 * time.Second

// Serve runs p behind the real go-plugin gRPC server and client, in this
// process, and returns the host's side of the connection. Every call goes
// through protobuf encoding and back, as it does between the host and a
// plugin. When the test ends, the provider is shut down (its Shutdown
// method, if it has one, is called as the host would) and the connection
// closed.
//
// The returned provider also implements sdk.RunToolsProvider and
// sdk.Shutdowner. Unlike the host, the in-process connection keeps gRPC's
// default 4 MiB message limit; use Start to test larger results. A
// provider that declares an options schema (sdk.NewConfigured) is
// configured with {}, as the host configures it when the config gives no
// options; ServeConfigured sends options of your choosing.
func Serve(t testing.TB, p sdk.Provider) sdk.Provider {
	t.Helper()
	return serve(t, p, nil)
}

// ServeConfigured is Serve for a provider that takes options: checked
// against its options schema, if it declares one, then sent with
// Configure, as the host does (see StartConfigured).
func ServeConfigured(t testing.TB, options any, p sdk.Provider) sdk.Provider {
	t.Helper()
	raw, err := json.Marshal(options)
	if err != nil {
		t.Fatalf("sdktest.ServeConfigured: options: %v", err)
	}
	return serve(t, p, raw)
}

func serve(t testing.TB, p sdk.Provider, options json.RawMessage) sdk.Provider {
	t.Helper()
	// go-plugin's own lines (its debug lines about stdio streams) go to the
	// test's log, as Start's do, not to the test binary's stderr.
	logs := &testLog{t: t}
	t.Cleanup(logs.stop) // runs last: after the server has stopped
	log := hclog.New(&hclog.LoggerOptions{Name: "sdktest", Output: logs, Level: hclog.Debug})
	ctx, cancel := context.WithCancel(context.Background())
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	go plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: sdk.Handshake,
		Plugins:         sdk.PluginSet(p),
		GRPCServer:      plugin.DefaultGRPCServer,
		Logger:          log,
		Test:            &plugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed},
	})
	var rc *plugin.ReattachConfig
	select {
	case rc = <-reattach:
	case <-closed:
		cancel()
		t.Fatal("sdktest.Serve: the in-process plugin server did not start (see the log)")
	}
	// The server is this process: the client waits for it to close, not
	// for a process to exit.
	rc.ReattachFunc = func() (runner.AttachedRunner, error) { return inProcess(closed), nil }
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		Plugins:          sdk.PluginSet(p),
		Reattach:         rc,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           log,
	})
	var rpc plugin.ClientProtocol
	stop := func() {
		defer cancel()
		if rpc != nil {
			_ = rpc.Close() // asks the server to stop itself, which it does
		}
		wait := time.NewTimer(shutdownTimeout)
		defer wait.Stop()
		select {
		case <-closed:
		case <-wait.C: // it did not: close its listener under it
			cancel()
			<-closed
		}
	}
	var err error
	rpc, err = client.Client()
	if err != nil {
		stop()
		t.Fatalf("sdktest.Serve: %v", err)
	}
	raw, err := rpc.Dispense(sdk.PluginName)
	if err != nil {
		stop()
		t.Fatalf("sdktest.Serve: %v", err)
	}
	remote := raw.(sdk.Provider)
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer scancel()
		if sd, ok := remote.(sdk.Shutdowner); ok {
			if err := sd.Shutdown(sctx); err != nil {
				t.Errorf("sdktest.Serve: shutting the provider down: %v", err)
			}
		}
		stop()
	})
	configure(t, "sdktest.Serve", remote, options)
	checkTools(t, "sdktest.Serve", remote)
	return remote
}

// inProcess is the go-plugin runner of a server in this process, which
// ends when closed is.
type inProcess <-chan struct{}

func (c inProcess) Wait(ctx context.Context) error {
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (inProcess) Kill(context.Context) error { return nil } // the server stops itself when the client closes
func (inProcess) ID() string                 { return "in-process" }

// PluginToHost and HostToPlugin keep addresses as they are: both sides
// are this process.
func (inProcess) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (inProcess) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// Build compiles the main package pkg, a path such as "." or
// "./cmd/myplugin" relative to the test's package directory (or an import
// path), into a temporary directory removed when the test ends, and returns
// the binary's path. It skips the test when the go command is not
// available.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("sdktest.Build: skipping: building %s needs the go command: %v", pkg, err)
	}
	bin := filepath.Join(t.TempDir(), binaryName(pkg))
	cmd := exec.Command(gobin, "build", "-o", bin, pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sdktest.Build: go build -o %s %s: %v\n%s", bin, pkg, err, out)
	}
	return bin
}

// binaryName names the binary after the package's directory, as go build
// does.
func binaryName(pkg string) string {
	name := path.Base(pkg)
	if pkg == "." || pkg == ".." || strings.HasPrefix(pkg, "./") || strings.HasPrefix(pkg, "../") || filepath.IsAbs(pkg) {
		if abs, err := filepath.Abs(pkg); err == nil {
			name = filepath.Base(abs)
		}
	}
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	return name
}

// Start runs command (a plugin binary and its arguments, such as Build's
// result) as a plugin subprocess, as the host runs one: the go-plugin
// handshake, gRPC with the host's message limits, the Watch lifeline, and on
// cleanup the provider's Shutdown, then the end of the process and of any
// process it started. It does not restart a plugin that dies: a test wants to
// see that. The plugin is named after the binary. Its logs, and anything it
// prints, go to the test's log.
//
// The plugin inherits the test's environment: set what it reads with
// t.Setenv before calling Start. (The host gives a plugin only what its
// sandbox profile allows; test that with the host.)
func Start(t testing.TB, command ...string) sdk.Provider {
	t.Helper()
	return start(t, nil, command)
}

// StartConfigured is Start for a plugin that takes options (sdk.Configured):
// options, marshalled to JSON, are sent with Configure before any call but
// GetMetadata, as the host sends a provider's options from its config. A
// plugin that declares an options schema has them checked against it
// first, as the host does: a mismatch fails the test with each problem's
// path. (Start configures such a plugin with {}, as the host does when
// the config gives no options.)
func StartConfigured(t testing.TB, options any, command ...string) sdk.Provider {
	t.Helper()
	raw, err := json.Marshal(options)
	if err != nil {
		t.Fatalf("sdktest.StartConfigured: options: %v", err)
	}
	return start(t, raw, command)
}

func start(t testing.TB, options json.RawMessage, command []string) sdk.Provider {
	t.Helper()
	if len(command) == 0 {
		t.Fatal("sdktest.Start: no command")
	}
	logs := &testLog{t: t}
	t.Cleanup(logs.stop) // runs last: after the plugin is shut down
	name := strings.TrimSuffix(filepath.Base(command[0]), ".exe")
	log := hclog.New(&hclog.LoggerOptions{Name: name, Output: logs, Level: hclog.Debug})
	var run *procRunner
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		VersionedPlugins: sdk.HostPlugins(),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		RunnerFunc: func(l hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
			// spec carries go-plugin's variables after the test's
			// environment.
			cmd := exec.Command(command[0], command[1:]...)
			cmd.Env = spec.Env
			var err error
			run, err = newRunner(l, cmd)
			return run, err
		},
		Logger:     log,
		SyncStdout: logs,
		SyncStderr: logs,
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(sdk.MaxMessageBytes), grpc.MaxCallSendMsgSize(sdk.MaxMessageBytes))},
	})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			client.Kill()
			if run != nil {
				_ = run.Kill(context.Background())
			}
		})
	}
	rpc, err := client.Client()
	if err != nil {
		stop()
		t.Fatalf("sdktest.Start %s: %v", name, startError(err, run))
	}
	raw, err := rpc.Dispense(sdk.PluginName)
	if err != nil {
		stop()
		t.Fatalf("sdktest.Start %s: %v", name, err)
	}
	p := raw.(sdk.Provider)
	// The lifeline, as the host holds it: a plugin built with sdk.Serve
	// ends itself when it breaks.
	watchCtx, cancelWatch := context.WithCancel(context.Background())
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		if w, ok := raw.(interface{ Watch(context.Context) error }); ok {
			_ = w.Watch(watchCtx)
		}
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if sd, ok := p.(sdk.Shutdowner); ok {
			if err := sd.Shutdown(ctx); err != nil {
				t.Errorf("sdktest.Start: shutting plugin %q down: %v", name, err)
			}
		}
		cancelWatch()
		stop()
		<-watchDone
	})
	configure(t, "sdktest.Start "+name, p, options)
	checkTools(t, "sdktest.Start", p)
	return p
}

// configure sends the options as the host does: a plugin that declares an
// options schema has the options checked against it first (a mismatch
// fails the test, each problem with its path), and is configured even
// without options, with {}.
func configure(t testing.TB, who string, p sdk.Provider, options json.RawMessage) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	md, err := p.Metadata(ctx, sdk.MetadataRequest{})
	if err != nil {
		t.Fatalf("%s: reading its metadata: %v", who, err)
	}
	if len(md.OptionsSchema) > 0 {
		s, err := toolspec.Compile(md.OptionsSchema)
		if err != nil {
			t.Fatalf("%s: the host would refuse its options schema: %v", who, err)
		}
		if options == nil {
			options = json.RawMessage(`{}`)
		}
		if ps := toolspec.CheckValue(s, "options", options); len(ps) > 0 {
			t.Fatalf("%s: the options do not match the provider's options schema:\n%v", who, ps)
		}
	}
	if options == nil {
		return
	}
	c, ok := p.(sdk.Configurer)
	if !ok {
		t.Fatalf("%s: the provider cannot take options", who)
	}
	if err := c.Configure(ctx, sdk.ConfigureRequest{Options: options}); err != nil {
		t.Fatalf("%s: the provider refused its options: %v", who, err)
	}
}

// testLog writes log lines to the test's log until the test is over: a
// plugin can still log while it stops, and the testing package panics on a
// log after the test has returned.
type testLog struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (l *testLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Log(strings.TrimRight(string(b), "\n"))
	}
	return len(b), nil
}

func (l *testLog) stop() {
	l.mu.Lock()
	l.done = true
	l.mu.Unlock()
}

var _ io.Writer = (*testLog)(nil)

// checkTools reports the tools the host would refuse to load.
func checkTools(t testing.TB, who string, p sdk.Provider) {
	t.Helper()
	md, err := p.Metadata(context.Background(), sdk.MetadataRequest{})
	if err != nil {
		t.Fatalf("%s: reading the provider's tools: %v", who, err)
	}
	for _, spec := range md.Tools {
		if ps := toolspec.Check(spec); len(ps) > 0 {
			t.Errorf("%s: the host would refuse tool %q: %s", who, spec.Name, strings.ReplaceAll(ps.Error(), "\n", "; "))
		}
	}
}

var callIDs atomic.Int64

// Call calls tool with args as the host does, and returns the result.
//
// args is encoded with encoding/json: pass a struct, a map, or a
// json.RawMessage to send exact bytes; nil sends {}. As the host does, Call
// first checks args against the tool's parameters schema: arguments that
// fail it give the error result the model would get, without calling the
// provider. A result whose content is not JSON, or whose attachments the
// host refuses (sdk.CheckAttachments), fails the test. Call fails the test when the provider has no such tool or the
// call itself fails (the provider is gone, say); a tool that fails is not a
// failed call but a result with IsError set (see ErrorText).
//
// Like t.Fatal, call it from the test's goroutine. The call's context is
// the test's (t.Context()); see CallContext to pass another.
func Call(t testing.TB, p sdk.Provider, tool string, args any) sdk.CallToolResponse {
	t.Helper()
	return CallContext(t.Context(), t, p, tool, args)
}

// CallContext is Call with the call's context, which the tool receives as
// the host's call would give it: wrap it with sdk.WithProgress to receive
// the tool's progress reports (through the plugin protocol when p is a
// plugin), give it a deadline, or cancel it to test that the tool stops.
// A call cut short by ctx fails the test unless ctx is done: then the error
// is returned as an error result whose text is the context's error, so a
// test can check that the tool gave up.
func CallContext(ctx context.Context, t testing.TB, p sdk.Provider, tool string, args any) sdk.CallToolResponse {
	t.Helper()
	raw := json.RawMessage(`{}`)
	if args != nil {
		var err error
		if raw, err = json.Marshal(args); err != nil {
			t.Fatalf("sdktest.Call %s: encoding the arguments: %v", tool, err)
		}
	}
	md, err := p.Metadata(context.WithoutCancel(ctx), sdk.MetadataRequest{})
	if err != nil {
		t.Fatalf("sdktest.Call %s: reading the provider's tools: %v", tool, err)
	}
	var spec *sdk.ToolSpec
	names := make([]string, len(md.Tools))
	for i := range md.Tools {
		names[i] = md.Tools[i].Name
		if md.Tools[i].Name == tool {
			spec = &md.Tools[i]
		}
	}
	if spec == nil {
		t.Fatalf("sdktest.Call: provider %q has no tool %q (tools: %s)", md.Name, tool, strings.Join(names, ", "))
	}
	schema, err := toolspec.Compile(spec.Parameters)
	if err != nil {
		t.Fatalf("sdktest.Call %s: the host would refuse the tool's parameters: %v", tool, err)
	}
	if err := schema.Validate(raw); err != nil {
		// The result the host's ToolNode gives the model.
		msg, _ := json.Marshal(fmt.Sprintf("tool %q: %v. Fix the arguments and call it again.", tool, err))
		return sdk.CallToolResponse{Content: msg, IsError: true}
	}
	resp, err := p.CallTool(ctx, sdk.CallToolRequest{
		Name:      tool,
		Arguments: raw,
		CallID:    fmt.Sprintf("sdktest-%d", callIDs.Add(1)),
		ThreadID:  "sdktest",
	})
	if err != nil && ctx.Err() != nil {
		msg, _ := json.Marshal(fmt.Sprintf("tool %q: %v", tool, ctx.Err()))
		return sdk.CallToolResponse{Content: msg, IsError: true}
	}
	if err != nil {
		t.Fatalf("sdktest.Call %s: %v", tool, err)
	}
	if len(resp.Content) > 0 && !json.Valid(resp.Content) {
		t.Errorf("sdktest.Call %s: the result is not valid JSON, which the host replaces with an error: %q", tool, resp.Content)
	}
	if err := sdk.CheckAttachments(resp.Attachments); err != nil {
		t.Errorf("sdktest.Call %s: the host refuses the result's attachments, and gives the model an error instead: %v", tool, err)
	}
	return resp
}

// Decode decodes a successful result into a T, failing the test if the
// tool reported an error or the content does not decode.
func Decode[T any](t testing.TB, resp sdk.CallToolResponse) T {
	t.Helper()
	var v T
	if resp.IsError {
		t.Fatalf("sdktest.Decode: the tool reported an error: %s", resp.Content)
	}
	if err := json.Unmarshal(resp.Content, &v); err != nil {
		t.Fatalf("sdktest.Decode: %s into %T: %v", resp.Content, v, err)
	}
	return v
}

// ErrorText returns the message of an error result, as the model reads it,
// failing the test if the tool succeeded.
func ErrorText(t testing.TB, resp sdk.CallToolResponse) string {
	t.Helper()
	if !resp.IsError {
		t.Fatalf("sdktest.ErrorText: the tool succeeded: %s", resp.Content)
	}
	var s string
	if json.Unmarshal(resp.Content, &s) != nil {
		return string(resp.Content) // an error result that is not a string
	}
	return s
}
