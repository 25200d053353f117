package pluginhost

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/tenxgraph/tenxgraph/internal/sandbox"
	"github.com/tenxgraph/tenxgraph/internal/supervise"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// Config says how to run one provider plugin.
type Config struct {
	// Name identifies the plugin in logs, errors and `tenxgraph tools`.
	Name string
	// Command is the program and its arguments.
	Command []string
	// SHA256, when set, pins the program's bytes: a binary that does not
	// match is refused before it runs.
	SHA256 string
	// Env is added to the plugin's environment, like Sandbox.Env.
	Env map[string]string
	// Sandbox is what the plugin's process may have: nothing of the
	// host's environment but what it names, and the limits, network and
	// account it sets (internal/sandbox).
	Sandbox sandbox.Profile
	// Key is the config path of the plugin's entry ("plugins[0]"), so a
	// profile the kernel refuses is reported at the key to change.
	Key string
	// Deny names host variables never passed to the plugin, whatever its
	// profile says: the API's tokens, the model key, the store's DSN.
	Deny []string
	// Trampoline is the executable that sandboxes the plugin and stays as
	// its init (the host's own; see sandbox.ExecArg). Without it the plugin
	// gets only its environment, process group and account.
	Trampoline string
	// Dir is the plugin's working directory ("" for the host's).
	Dir string
	// Prefix goes before each of the plugin's tool names as the host offers
	// them, and is taken off again in each call, so that two plugins
	// exporting one name can share a node. Limits keep the plugin's own
	// names.
	Prefix string
	// Options are sent to the plugin with Configure before any call but
	// GetMetadata, over the plugin protocol rather than the environment
	// its tools can read. When the plugin declares an options schema they
	// are checked against it first (nil then sends {}); otherwise nil
	// sends nothing.
	Options json.RawMessage
	// Lazy starts the process only when a tool is first called. The tool
	// list is still read at startup (the plugin is started, asked, and
	// stopped), so configuration mistakes surface at once.
	Lazy bool
	// Logger receives the plugin's logs, under the plugin's name.
	Logger hclog.Logger
	// StartTimeout bounds one start, handshake included (default 30s).
	StartTimeout time.Duration
	// StopTimeout bounds the provider's Shutdown when the host stops it,
	// and again its exit after that, before its process group is killed
	// (default 1s). A provider that stops processes of its own (the MCP
	// bridge) needs theirs.
	StopTimeout time.Duration
	// Limits bound each call (none when zero).
	Limits Limits
}

// client is what a dispensed plugin offers the host.
type client interface {
	sdk.Provider
	sdk.RunToolsProvider
	sdk.Shutdowner
	sdk.ToolsWatcher
	sdk.Configurer
	Watch(ctx context.Context) error
	Exited() <-chan struct{}
}

// instance is one process of a plugin.
type instance struct {
	pc        *plugin.Client
	c         client
	md        sdk.MetadataResponse // read when it started
	proc      *sandbox.Process     // the process, released on every exit path
	run       *procRunner          // its runner, which knows how it exited
	watching  context.Context      // done when the host stops watching it
	stopWatch context.CancelFunc
	// began and ready time its start (a trace shows a call that waited
	// for it); start counts the plugin's starts, restarts included.
	began, ready time.Time
	start        int64
}

// Plugin is a provider in a subprocess, supervised. It implements
// sdk.Provider, sdk.RunToolsProvider, sdk.Shutdowner and sdk.ToolsWatcher:
// a plugin whose tool list changes (it says so on its lifeline, or it
// restarts with other tools) is listed again, and the change announced.
type Plugin struct {
	cfg Config
	log hclog.Logger

	sup *supervise.Supervisor[*instance]

	mu       sync.Mutex
	md       sdk.MetadataResponse
	listed   bool          // md is set
	changed  chan struct{} // closed when md changes; nil until asked for
	closed   bool
	inflight sync.WaitGroup
	warnOnce sync.Once         // the sandbox's warnings are logged at the first start
	iso      sandbox.Isolation // the last process's, once started
	started  bool
	starts   atomic.Int64 // processes started, restarts included
}
