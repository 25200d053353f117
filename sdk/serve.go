package sdk

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"go.opentelemetry.io/otel"
	"google.golang.org/grpc"
)

// ServeOption adjusts Serve.
type ServeOption func(*serveConfig)

type serveConfig struct {
	logger hclog.Logger
}

// WithLogger replaces the default logger (hclog JSON on stderr, which the
// host reads and files under the provider's name), which is also what
// Logger returns in every call. Keep it on stderr: stdout belongs to the
// handshake.
func WithLogger(l hclog.Logger) ServeOption { return func(c *serveConfig) { c.logger = l } }

// Serve runs p as a tool provider plugin and returns when the host stops it.
// It is the whole main of a plugin:
//
//	func main() { sdk.Serve(myProvider) }
//
// Serve hides go-plugin: the handshake, gRPC with large message limits on
// both sides, logs to the host, and a watchdog that ends the plugin (and the
// processes it started) when the host is gone, however it went. Do the
// provider's expensive set-up lazily or after Serve starts: the host waits
// for the handshake.
func Serve(p Provider, opts ...ServeOption) {
	cfg := serveConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = hclog.New(&hclog.LoggerOptions{
			Level:      hclog.LevelFromString(os.Getenv("TENXGRAPH_PLUGIN_LOG_LEVEL")),
			Output:     os.Stderr,
			JSONFormat: true,
		})
	}
	end := ender(p, cfg.logger)
	lost := func() { end("the host is gone; shutting down") }
	stuck := func(tool string) {
		end(fmt.Sprintf("tool %q did not return within %s after its call was cancelled; ending this plugin so that the host starts a fresh one", tool, CancelGrace))
	}
	watchParent(lost)
	onTerminate(lost)
	// The process's global tracer provider is the plugin's, so spans a tool
	// starts with otel.Tracer join the host's trace like the call's own.
	t := newTracing()
	otel.SetTracerProvider(t.provider)
	otel.SetTextMapPropagator(propagator)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{1: {PluginName: &grpcPlugin{impl: p, onLost: lost, onStuck: stuck, log: cfg.logger, tracing: t}}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes),
				grpc.NumStreamWorkers(streamWorkers))
			return grpc.NewServer(opts...)
		},
		Logger: cfg.logger,
	})
}

// streamWorkers is how many long-lived goroutines serve the plugin's calls.
// gRPC otherwise starts a goroutine per call, whose stack grows (is copied)
// on the way down to the tool on every call: a sixth of a plugin's CPU per
// call. A call that finds every worker busy gets a goroutine of its own, as
// before. (grpc.NumStreamWorkers is marked experimental; were it removed,
// the build would say so.)
const streamWorkers = 16

// ender returns the one way a plugin ends on its own (its host is gone, or a
// handler ignored cancellation): give the provider a moment to release what
// it holds, end every process it started, exit. why is logged first.
func ender(p Provider, log hclog.Logger) func(why string) {
	var once sync.Once
	return func(why string) {
		once.Do(func() {
			// When the host is gone, its end of stderr is closed: a log line
			// would kill the plugin with SIGPIPE before it ends its children.
			ignoreBrokenPipes()
			log.Warn(why)
			if sd, ok := p.(Shutdowner); ok {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_ = sd.Shutdown(ctx)
				cancel()
			}
			// go-plugin's socket would outlive an exit that skips its
			// cleanup; the host made the folder for this plugin alone.
			if dir := os.Getenv("PLUGIN_UNIX_SOCKET_DIR"); dir != "" {
				_ = os.RemoveAll(dir)
				_ = os.Remove(filepath.Dir(dir)) // the host's folder, once empty
			}
			killGroup()
			os.Exit(0)
		})
	}
}

// watchParent notices the host dying on any platform: the parent pid
// changes when the parent exits and the plugin is re-parented.
func watchParent(lost func()) {
	ppid := os.Getppid()
	go func() {
		for range time.Tick(250 * time.Millisecond) {
			if os.Getppid() != ppid {
				lost()
			}
		}
	}()
}
