// Package pluginhost runs tool providers as plugin subprocesses and keeps
// them running: it verifies the binary, starts it, restarts it when it dies,
// drains and stops it on shutdown, and makes sure nothing it started
// outlives the host. Each plugin is an sdk.Provider to the rest of the host,
// so a ToolNode cannot tell a plugin from an in-process provider.
//
// go-plugin supplies the handshake and the gRPC connection; what it lacks
// (restart, orphan protection, process groups, draining, stdin isolation) is
// here.
package pluginhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"os/user"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/tenxgraph/tenxgraph/internal/sandbox"
	"github.com/tenxgraph/tenxgraph/internal/supervise"
	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// ErrClosed: the plugin was shut down.
var ErrClosed = errors.New("plugin is shut down")

// Start verifies and starts a plugin and reads its tool list. A plugin that
// cannot start, or whose binary does not match its pinned sha256, is an error
// here, at host startup.
func Start(ctx context.Context, cfg Config) (*Plugin, error) {
	if len(cfg.Command) == 0 {
		return nil, fmt.Errorf("plugin %q: no command", cfg.Name)
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = defaultStopTimeout
	}
	cfg.Command = append([]string(nil), cfg.Command...)
	p := &Plugin{cfg: cfg, log: cfg.Logger.Named(cfg.Name)}
	p.sup = supervise.New(supervise.Config[*instance]{
		Start:   p.spawn,
		Done:    func(inst *instance) <-chan struct{} { return inst.c.Exited() },
		Stop:    p.stop,
		Started: func(inst *instance) { p.mu.Lock(); p.setMetadata(inst, inst.md); p.mu.Unlock() }, // a restart may bring other tools
		Ended:   p.crashed,
		// A first crash is restarted at once, then from 100ms doubling to
		// 30s while crashes go on; a plugin that ran a minute is well again.
		// A call waits out a backoff of up to 2s, like an MCP server's.
		First: 100 * time.Millisecond, Max: 30 * time.Second, Reset: time.Minute, Hold: 2 * time.Second,
	})
	path, err := exec.LookPath(cfg.Command[0])
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %w", cfg.Name, err)
	}
	p.cfg.Command[0] = path
	inst, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	if cfg.Lazy {
		p.sup.StopCurrent(ctx, inst)
	}
	return p, nil
}

// Metadata implements sdk.Provider with the tool list read at start, or
// since re-read after a change. The provider's own name is kept as
// reported, but the host knows the plugin by its configured name.
func (p *Plugin) Metadata(context.Context, sdk.MetadataRequest) (sdk.MetadataResponse, error) {
	p.mu.Lock()
	md := p.md
	p.mu.Unlock()
	md.Name = p.cfg.Name
	if p.cfg.Prefix != "" {
		md.Tools = slices.Clone(md.Tools)
		for i := range md.Tools {
			md.Tools[i].Name = p.cfg.Prefix + md.Tools[i].Name
		}
	}
	return md, nil
}

// ToolsChanged implements sdk.ToolsWatcher: the channel is closed once the
// plugin's tool list has changed and Metadata returns the new one.
func (p *Plugin) ToolsChanged() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	return p.changed
}

// setMetadata records the tool list inst reported, and announces it when
// it differs from the one the host has. Called with p.mu held.
func (p *Plugin) setMetadata(inst *instance, md sdk.MetadataResponse) {
	if cur, live := p.sup.Current(); p.closed || (live && cur != inst) {
		return // a stale instance's news
	}
	if p.listed && reflect.DeepEqual(p.md, md) {
		return
	}
	first := !p.listed
	p.md, p.listed = md, true
	if first {
		return
	}
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
	p.log.Info("the plugin's tool list changed", "tools", len(md.Tools))
}

// follow re-reads an instance's tool list each time it says it changed.
func (p *Plugin) follow(inst *instance, changed <-chan struct{}) {
	for {
		select {
		case <-changed:
		case <-inst.watching.Done():
			return
		}
		changed = inst.c.ToolsChanged() // before reading, so no change is missed
		ctx, cancel := context.WithTimeout(inst.watching, p.cfg.StartTimeout)
		md, err := inst.c.Metadata(ctx, sdk.MetadataRequest{})
		cancel()
		if err != nil {
			if inst.watching.Err() == nil {
				p.log.Warn("could not read the plugin's tools after it said they changed", "error", err)
			}
			continue
		}
		p.mu.Lock()
		p.setMetadata(inst, md)
		p.mu.Unlock()
	}
}

// CallTool implements sdk.Provider. A plugin that dies during the call
// gives an error naming the plugin (the ToolNode turns it into an error
// result for that call), and is restarted for the next call. A call outside
// the plugin's Limits gives an error naming the limit (wrapping ErrLimit).
func (p *Plugin) CallTool(ctx context.Context, req sdk.CallToolRequest) (resp sdk.CallToolResponse, err error) {
	if p.cfg.Prefix != "" {
		name, ok := strings.CutPrefix(req.Name, p.cfg.Prefix)
		if !ok {
			return sdk.CallToolResponse{}, fmt.Errorf("plugin %q: %w %q (its tools all start with %q)", p.cfg.Name, sdk.ErrUnknownTool, req.Name, p.cfg.Prefix)
		}
		req.Name = name
	}
	lim := p.cfg.Limits
	if err := lim.checkArguments(req); err != nil {
		return sdk.CallToolResponse{}, fmt.Errorf("plugin %q: %w", p.cfg.Name, err)
	}
	ctx, span := p.traceCall(ctx, req)
	if span != nil {
		defer func() { endCall(span, resp, err) }()
	}
	var called time.Time
	if span != nil {
		called = time.Now()
	}
	inst, err := p.enter(ctx)
	if err != nil {
		return sdk.CallToolResponse{}, err
	}
	defer p.inflight.Done()
	if span != nil && inst.ready.After(called) {
		p.traceStart(ctx, inst)
	}
	err = lim.bound(ctx, req.Name, func(ctx context.Context) (err error) {
		resp, err = inst.c.CallTool(ctx, req)
		return err
	})
	switch {
	case errors.Is(err, ErrLimit):
		return sdk.CallToolResponse{}, fmt.Errorf("plugin %q: %w", p.cfg.Name, err)
	case errors.Is(err, sdk.ErrMessageTooLarge) && ctx.Err() == nil:
		// Refused by the host as it arrived: the plugin is well, and
		// keeps serving.
		return sdk.CallToolResponse{}, fmt.Errorf("plugin %q: %w", p.cfg.Name, lim.tooLarge(req.Name))
	case err != nil:
		return resp, p.callError(ctx, inst, "running tool "+req.Name, err)
	}
	if err := lim.checkResult(req.Name, resp); err != nil {
		return sdk.CallToolResponse{}, fmt.Errorf("plugin %q: %w", p.cfg.Name, err)
	}
	return resp, nil
}

// PrepareRun implements sdk.RunToolsProvider.
func (p *Plugin) PrepareRun(ctx context.Context, req sdk.PrepareRunRequest) (sdk.PrepareRunResponse, error) {
	inst, err := p.enter(ctx)
	if err != nil {
		return sdk.PrepareRunResponse{}, err
	}
	defer p.inflight.Done()
	resp, err := inst.c.PrepareRun(ctx, req)
	if err != nil {
		return resp, p.callError(ctx, inst, "preparing the run's client tools", err)
	}
	return resp, nil
}

// enter gets a live instance and counts the call as in flight, unless the
// plugin is shut down.
func (p *Plugin) enter(ctx context.Context) (*instance, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("plugin %q: %w", p.cfg.Name, ErrClosed)
	}
	p.inflight.Add(1)
	p.mu.Unlock()
	inst, err := p.get(ctx)
	if err != nil {
		p.inflight.Done()
		return nil, err
	}
	return inst, nil
}

// callError explains a failed call: the caller gave up, the plugin died, or
// the plugin answered with an error.
func (p *Plugin) callError(ctx context.Context, inst *instance, what string, err error) error {
	if ctx.Err() != nil {
		return err
	}
	exited := false
	select {
	case <-inst.c.Exited():
		exited = true
	case <-time.After(50 * time.Millisecond):
		// The connection can break a moment before the exit is seen.
	}
	if exited || errors.Is(err, sdk.ErrProviderUnavailable) {
		p.drop(inst)
		return fmt.Errorf("plugin %q exited or became unreachable while %s; it is being restarted: %w", p.cfg.Name, what, sdk.ErrProviderUnavailable)
	}
	return fmt.Errorf("plugin %q: %s: %w", p.cfg.Name, what, err)
}

// drop stops using an instance that failed, so the next call starts a new
// one instead of finding the broken one; the supervisor counts its end.
func (p *Plugin) drop(inst *instance) {
	p.sup.Drop(inst)
	go inst.kill() // if it still runs, it is of no use
}

// get returns the live instance, starting one if there is none (one start
// however many callers; a plugin that keeps dying is restarted with
// growing delays rather than in a hot loop).
func (p *Plugin) get(ctx context.Context) (*instance, error) {
	inst, err := p.sup.Get(ctx)
	switch {
	case errors.Is(err, supervise.ErrClosed):
		return nil, fmt.Errorf("plugin %q: %w", p.cfg.Name, ErrClosed)
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("plugin %q: waiting for it to start: %w", p.cfg.Name, err)
	}
	return inst, err
}

// spawn starts one process and opens its lifeline. A pinned binary is
// checked before every start, restarts included (the hash is cached while the
// file is unchanged).
func (p *Plugin) spawn() (*instance, error) {
	if p.cfg.SHA256 != "" {
		if err := verify(p.cfg.Command[0], p.cfg.SHA256); err != nil {
			// On a restart the error reaches only the model whose call
			// waited for the plugin, so it is logged too. The first start
			// returns it to whoever started the host, which says it once.
			p.mu.Lock()
			restart := p.started
			p.mu.Unlock()
			if restart {
				p.log.Error("refusing to start the plugin: its binary does not match the pinned sha256", "error", err)
			}
			return nil, fmt.Errorf("plugin %q: %w", p.cfg.Name, err)
		}
	}
	inst := &instance{began: time.Now(), start: p.starts.Add(1)}
	// A plugin run as another account shares its socket folder with the
	// host through that account's group.
	unixGroup := p.cfg.Sandbox.Group
	if unixGroup == "" && p.cfg.Sandbox.User != "" {
		if u, err := user.Lookup(p.cfg.Sandbox.User); err == nil {
			unixGroup = u.Gid
		} else if u, err := user.LookupId(p.cfg.Sandbox.User); err == nil {
			unixGroup = u.Gid
		}
	}
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		VersionedPlugins: sdk.HostPlugins(),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		// The plugin's environment is its profile's, not the host's.
		SkipHostEnv: true,
		RunnerFunc: func(l hclog.Logger, c *exec.Cmd, socketDir string) (runner.Runner, error) {
			profile := p.cfg.Sandbox
			if len(p.cfg.Env) > 0 {
				profile.Env = maps.Clone(profile.Env)
				if profile.Env == nil {
					profile.Env = map[string]string{}
				}
				maps.Copy(profile.Env, p.cfg.Env)
			}
			proc, err := sandbox.Command(sandbox.Spec{Name: p.cfg.Name, Key: p.cfg.Key,
				Path: p.cfg.Command[0], Args: p.cfg.Command[1:], Dir: p.cfg.Dir, Profile: profile,
				Extra: c.Env, Deny: p.cfg.Deny, Trampoline: p.cfg.Trampoline, HomeIn: socketDir})
			if err != nil {
				return nil, err
			}
			inst.proc = proc
			inst.run, err = newRunner(l, proc)
			return inst.run, err
		},
		UnixSocketConfig: &plugin.UnixSocketConfig{TempDir: socketRoot(), Group: unixGroup},
		Logger:           p.log,
		StartTimeout:     p.cfg.StartTimeout,
		SyncStdout:       logWriter{p.log, "plugin wrote to stdout"},
		SyncStderr:       logWriter{p.log, "plugin wrote to stderr"},
		// After go-plugin's own options, which receive up to 2 GiB: what
		// the host receives from the plugin is bounded by its
		// max_result_bytes, refused as it arrives.
		GRPCDialOptions: p.dialOptions(),
	})
	inst.pc = pc
	fail := func(err error) (*instance, error) {
		inst.kill()
		return nil, err
	}
	rpc, err := pc.Client()
	if err != nil && inst.run != nil {
		// A plugin that died before its handshake: say how, and what it
		// wrote, rather than go-plugin's words about the handshake.
		if exit, ok := inst.run.exitedEarly(2 * time.Second); ok {
			err = fmt.Errorf("it exited before its handshake (%s)%s", exitStatus(exit), inst.run.tail)
		}
	}
	if err != nil {
		return fail(fmt.Errorf("plugin %q: start %s: %w (it runs with its sandbox profile: %s; if it needs a variable of the host's environment, name it in %s.pass_env or set it in %s.env)",
			p.cfg.Name, strings.Join(p.cfg.Command, " "), err, p.cfg.Sandbox.Describe(), keyOr(p.cfg.Key, "plugins[]"), keyOr(p.cfg.Key, "plugins[]")))
	}
	raw, err := rpc.Dispense(sdk.PluginName)
	if err != nil {
		return fail(fmt.Errorf("plugin %q: %w", p.cfg.Name, err))
	}
	c, ok := raw.(client)
	if !ok {
		return fail(fmt.Errorf("plugin %q: unexpected client type %T", p.cfg.Name, raw))
	}
	inst.c = c
	if inst.proc != nil {
		iso := inst.proc.Isolation()
		p.mu.Lock()
		p.iso, p.started = iso, true
		p.mu.Unlock()
		p.warnOnce.Do(func() {
			for _, w := range iso.Warnings {
				p.log.Warn("weak sandbox", "warning", w)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	go c.Watch(ctx) //nolint:errcheck // ends when the plugin or the host goes
	inst.watching, inst.stopWatch = ctx, cancel
	stop := func(err error) (*instance, error) {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = c.Shutdown(sctx) // a stop on purpose, not a lost host, to the plugin
		scancel()
		cancel()
		return fail(err)
	}
	changed := c.ToolsChanged() // before reading, so no change is missed
	if inst.md, err = p.metadata(ctx, c); err != nil {
		return stop(err)
	}
	// The options schema is read before Configure: the options are checked
	// against it here, and a provider never sees options it refuses.
	options, err := p.options(inst.md.OptionsSchema)
	if err != nil {
		return stop(err)
	}
	if options != nil {
		cctx, ccancel := context.WithTimeout(ctx, p.cfg.StartTimeout)
		err := c.Configure(cctx, sdk.ConfigureRequest{Options: options})
		ccancel()
		if err != nil {
			return stop(fmt.Errorf("plugin %q: configure: %w", p.cfg.Name, err))
		}
		changed = c.ToolsChanged()
		if inst.md, err = p.metadata(ctx, c); err != nil {
			return stop(err)
		}
	}
	go p.follow(inst, changed)
	inst.ready = time.Now()
	return inst, nil
}

// metadata reads a starting plugin's tools.
func (p *Plugin) metadata(ctx context.Context, c client) (sdk.MetadataResponse, error) {
	mctx, mcancel := context.WithTimeout(ctx, p.cfg.StartTimeout)
	md, err := c.Metadata(mctx, sdk.MetadataRequest{})
	mcancel()
	if errors.Is(err, sdk.ErrMessageTooLarge) {
		err = fmt.Errorf("%w (the host receives at most %d bytes in one message from it; raise %s to take more)",
			err, p.cfg.Limits.receiveBytes(), p.cfg.Limits.key("max_result_bytes"))
	}
	if err != nil {
		return md, fmt.Errorf("plugin %q: read its tools: %w", p.cfg.Name, err)
	}
	return md, nil
}

// options are the options to configure the plugin with, checked against
// the options schema it declares (if any): nil when there are none to send.
// A plugin that declares a schema takes options, so it gets {} when the
// config has none. Options the schema refuses come back as
// toolspec.Problems at their config paths (Key + ".options").
func (p *Plugin) options(schema json.RawMessage) (json.RawMessage, error) {
	options := p.cfg.Options
	if len(schema) == 0 {
		return options, nil
	}
	s, err := toolspec.Compile(schema)
	if err != nil {
		return nil, fmt.Errorf("plugin %q declares an options schema the host cannot use (a fault of the plugin; tell its author): %w", p.cfg.Name, err)
	}
	if options == nil {
		options = json.RawMessage(`{}`)
	}
	if ps := toolspec.CheckValue(s, toolspec.Join(keyOr(p.cfg.Key, "plugins[]"), "options"), options); len(ps) > 0 {
		return nil, ps
	}
	return options, nil
}

// crashed cleans up after a process that exited when the host did not ask
// it to, and says why calls fail until the restart.
func (p *Plugin) crashed(inst *instance, restartIn time.Duration) error {
	inst.stopWatch()
	go inst.kill() // reap, remove the socket folder, kill any children left
	if restartIn <= 0 {
		p.log.Error("plugin exited unexpectedly; restarting")
		return fmt.Errorf("plugin %q exited unexpectedly; it is being restarted: %w", p.cfg.Name, sdk.ErrProviderUnavailable)
	}
	p.log.Error("plugin exited unexpectedly again; restarting after a pause", "restart_in", restartIn.Round(time.Millisecond))
	return fmt.Errorf("plugin %q keeps exiting; it is restarted in %s: %w", p.cfg.Name, restartIn.Round(time.Millisecond), sdk.ErrProviderUnavailable)
}

// defaultStopTimeout bounds each of the two steps of stopping one process:
// the provider's Shutdown call, then go-plugin's Kill (which asks the
// process to exit and waits for it), before the process group is killed
// outright. A plugin that ignores both costs at most twice it.
const defaultStopTimeout = 1 * time.Second

// stop ends an instance on purpose: the provider releases its resources,
// then the process and its group are stopped, within about two seconds
// whatever the plugin does. Called without p.mu held: it waits on the
// plugin.
func (p *Plugin) stop(ctx context.Context, inst *instance) {
	pid, _ := strconv.Atoi(inst.pc.ID())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.StopTimeout)
	_ = inst.c.Shutdown(sctx)
	cancel()
	inst.stopWatch()
	killed := make(chan struct{})
	go func() {
		inst.pc.Kill()
		close(killed)
	}()
	select {
	case <-killed:
	case <-time.After(p.cfg.StopTimeout):
		// go-plugin's Kill waits for a plugin that does not answer its close
		// (frozen, or stuck in a handler) without limit.
		p.log.Warn("the plugin did not exit when asked; killing its process group", "pid", pid)
		if inst.proc != nil {
			inst.proc.Kill()
		}
		select {
		case <-killed:
		case <-time.After(p.cfg.StopTimeout):
			p.log.Error("the plugin's process group was killed, but go-plugin still waits for it", "pid", pid)
		}
	}
	if inst.proc != nil {
		inst.proc.Release() // the group, the cgroup and the private folder
	}
}

// kill ends an instance's process and everything it started, on the exit
// paths other than a stop on purpose: go-plugin's Kill returns early once
// the process has exited, so the process group, the cgroup and the
// private folder are ended here.
func (inst *instance) kill() {
	if inst.pc != nil {
		inst.pc.Kill()
	}
	if inst.proc != nil {
		inst.proc.Release()
	}
}

// Shutdown drains and stops the plugin: new calls are refused, calls in
// flight may finish until ctx is done, then the provider is asked to release
// its resources and the process group is stopped. After ctx is done it
// returns within about two seconds, whatever the plugin does.
func (p *Plugin) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	drained := make(chan struct{})
	go func() {
		p.inflight.Wait()
		close(drained)
	}()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		err = fmt.Errorf("plugin %q: calls still running at shutdown were cut off: %w", p.cfg.Name, ctx.Err())
	}
	// A restart's backoff is cancelled and a start under way waited for,
	// so no process of this plugin comes up after Shutdown returns.
	if serr := p.sup.Shutdown(ctx); serr != nil {
		err = errors.Join(err, fmt.Errorf("plugin %q: still starting at shutdown: %w", p.cfg.Name, serr))
	}
	return err
}

// Name is the plugin's configured name.
func (p *Plugin) Name() string { return p.cfg.Name }

// Isolation is what the plugin's last process got from the kernel (see
// sandbox.Isolation); false before one started.
func (p *Plugin) Isolation() (sandbox.Isolation, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.iso, p.started
}

// PID is the running process's id, or 0; for tests and diagnostics.
func (p *Plugin) PID() int {
	inst, live := p.sup.Current()
	if !live {
		return 0
	}
	pid, _ := strconv.Atoi(inst.pc.ID())
	return pid
}

var (
	_ sdk.Provider         = (*Plugin)(nil)
	_ sdk.RunToolsProvider = (*Plugin)(nil)
	_ sdk.Shutdowner       = (*Plugin)(nil)
	_ sdk.ToolsWatcher     = (*Plugin)(nil)
)

// logWriter files what a plugin writes to its redirected stdout and stderr
// after the handshake as warnings, instead of discarding it.
type logWriter struct {
	log hclog.Logger
	msg string
}

func (w logWriter) Write(b []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		w.log.Warn(w.msg, "output", line)
	}
	return len(b), nil
}

func keyOr(key, def string) string {
	if key == "" {
		return def
	}
	return key
}
