package pluginhost

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/tenxgraph/tenxgraph/internal/sandbox"
)

// procRunner starts a plugin through the sandbox launcher, which go-plugin's
// own runner cannot do: without the host's stdin or environment, as the
// leader of its own process group (so its children are killed with it),
// with a parent-death signal on Linux (so it does not outlive a host killed
// with SIGKILL), under its sandbox profile, and with stdout filtered so
// that stray output cannot break the handshake.
type procRunner struct {
	log    hclog.Logger
	proc   *sandbox.Process
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr io.ReadCloser
	tail   *sandbox.Tail
	exited chan struct{} // closed when Wait returns
	err    error         // Wait's result, once exited is closed
}

var _ runner.Runner = (*procRunner)(nil)

func newRunner(log hclog.Logger, proc *sandbox.Process) (*procRunner, error) {
	cmd := proc.Cmd
	cmd.Stdin = nil
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errp, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	t := &sandbox.Tail{}
	return &procRunner{log: log, proc: proc, cmd: cmd, stdout: handshakeOnly(out, log), stderr: tailReader(t, errp), tail: t, exited: make(chan struct{})}, nil
}

func (r *procRunner) Start(context.Context) error { return r.proc.Start() }

func (r *procRunner) Wait(context.Context) error {
	r.err = r.cmd.Wait()
	close(r.exited)
	return r.err
}

// exitedEarly reports how the plugin exited, if it did within wait.
// go-plugin gives up on the handshake as soon as stdout ends, a moment
// before the exit of a plugin that crashed is known.
func (r *procRunner) exitedEarly(wait time.Duration) (error, bool) {
	select {
	case <-r.exited:
		return r.err, true
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-r.exited:
		return r.err, true
	case <-t.C:
		return nil, false
	}
}

// Kill ends the plugin and everything it started.
func (r *procRunner) Kill(context.Context) error {
	r.proc.Kill()
	if r.cmd.Process == nil {
		return nil
	}
	if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *procRunner) Name() string          { return r.cmd.Path }
func (r *procRunner) ID() string            { return strconv.Itoa(r.proc.PID()) }

func (r *procRunner) Diagnose(context.Context) string {
	if err, ok := r.exitedEarly(2 * time.Second); ok {
		return fmt.Sprintf("the plugin %s exited before its handshake (%v)%s", r.cmd.Path, exitStatus(err), r.tail)
	}
	return fmt.Sprintf("the plugin %s did not complete the handshake: is it built with sdk.Serve (or go-plugin, toolprovider.v1), for this OS and architecture, and executable?%s", r.cmd.Path, r.tail)
}

func (r *procRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (r *procRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// handshakeLine matches go-plugin's handshake:
// CORE|APP-VERSION|NETWORK|ADDR|PROTOCOL[|CERT[|MUX]].
var handshakeLine = regexp.MustCompile(`\d+\|\d+\|(unix|tcp)\|[^|\s]+\|(grpc|netrpc)(\|[^|\s]*)?(\|[^|\s]*)?$`)

// handshakeOnly passes the handshake line through and logs everything else
// a plugin prints on stdout before it: a print in an init function, a
// library's banner. Output glued to the front of the handshake line (a print
// without a newline) is split off.
func handshakeOnly(r io.ReadCloser, log hclog.Logger) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		found := false
		for sc.Scan() {
			line := sc.Text()
			if !found {
				if loc := handshakeLine.FindStringIndex(line); loc != nil {
					if loc[0] > 0 {
						log.Warn("plugin wrote to stdout before the handshake", "output", line[:loc[0]])
					}
					found = true
					if _, err := io.WriteString(pw, line[loc[0]:]+"\n"); err != nil {
						break
					}
					continue
				}
			}
			log.Warn("plugin wrote to stdout", "output", line)
		}
		pw.CloseWithError(sc.Err())
	}()
	return struct {
		io.Reader
		io.Closer
	}{pr, r}
}

// exitStatus says how a process ended: "exit status 2", "signal: killed".
func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// tailReader passes r through, keeping its last lines in t, with each JSON
// log line in the form go-plugin files at its level (see logLine).
func tailReader(t *sandbox.Tail, r io.ReadCloser) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			t.Add(sc.Text())
			line := logLine(sc.Bytes())
			if _, err := pw.Write(append(line[:len(line):len(line)], '\n')); err != nil {
				break
			}
		}
		pw.CloseWithError(sc.Err())
	}()
	return struct {
		io.Reader
		io.Closer
	}{pr, r}
}
