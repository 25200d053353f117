package sdktest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin/runner"
)

// procRunner runs a plugin for go-plugin as the host does: stray output on
// stdout before the handshake is logged rather than taken for a broken
// handshake, the process leads its own group, and a plugin that dies before
// its handshake is reported with its exit status and its last lines on
// stderr.
type procRunner struct {
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr io.ReadCloser
	tail   *tail
	exited chan struct{} // closed by Wait
	err    error         // Wait's, once exited is closed
}

var _ runner.Runner = (*procRunner)(nil)

func newRunner(log hclog.Logger, cmd *exec.Cmd) (*procRunner, error) {
	ownGroup(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errp, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	t := &tail{}
	return &procRunner{cmd: cmd, stdout: handshakeOnly(out, log), stderr: t.reader(errp), tail: t, exited: make(chan struct{})}, nil
}

func (r *procRunner) Start(context.Context) error { return r.cmd.Start() }

func (r *procRunner) Wait(context.Context) error {
	err := r.cmd.Wait()
	r.err = err
	close(r.exited)
	return err
}

// Kill ends the plugin and everything it started.
func (r *procRunner) Kill(context.Context) error {
	killGroup(r.cmd)
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

func (r *procRunner) ID() string {
	if r.cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(r.cmd.Process.Pid)
}

// Diagnose says why the plugin gave no handshake. go-plugin asks as soon as
// stdout ends, which for a plugin that crashed is a moment before its exit
// is known: wait a little for it.
func (r *procRunner) Diagnose(context.Context) string {
	select {
	case <-r.exited:
		return fmt.Sprintf("the plugin exited before its handshake (%v).%s", r.err, r.tail)
	case <-time.After(2 * time.Second):
		return fmt.Sprintf("the plugin gave no handshake: is it built with sdk.Serve, for this OS and architecture?%s", r.tail)
	}
}

func (r *procRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (r *procRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// handshakeLine matches go-plugin's handshake:
// CORE|APP-VERSION|NETWORK|ADDR|PROTOCOL[|CERT[|MUX]].
var handshakeLine = regexp.MustCompile(`\d+\|\d+\|(unix|tcp)\|[^|\s]+\|(grpc|netrpc)(\|[^|\s]*)?(\|[^|\s]*)?$`)

// handshakeOnly passes the handshake line through and logs everything else
// a plugin prints on stdout.
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

// tail keeps the last lines a plugin wrote on stderr, and the line a Go
// panic starts with, which a long stack would push out.
type tail struct {
	mu    sync.Mutex
	lines []string
	panic string
}

func (t *tail) reader(r io.ReadCloser) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			t.mu.Lock()
			t.lines = append(t.lines, line)
			if len(t.lines) > 10 {
				t.lines = t.lines[1:]
			}
			if t.panic == "" && (strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ")) {
				t.panic = line
			}
			t.mu.Unlock()
			if _, err := io.WriteString(pw, line+"\n"); err != nil {
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

// String is " Its last lines on stderr:\n..." or "".
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return ""
	}
	lines := t.lines
	if t.panic != "" && !slices.Contains(lines, t.panic) {
		lines = append([]string{t.panic, "…"}, lines...)
	}
	return " Its last lines on stderr:\n\t" + strings.Join(lines, "\n\t")
}

// startError replaces go-plugin's text for a plugin that died before its
// handshake ("Unrecognized remote plugin message", a hint about
// architectures) with what happened: its exit status and last stderr lines.
func startError(err error, r *procRunner) error {
	if r == nil {
		return err
	}
	select {
	case <-r.exited:
		return fmt.Errorf("the plugin exited before its handshake (%v).%s", r.err, r.tail)
	default:
		return err
	}
}
