package mcp

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/internal/sandbox"
)

// process is a running stdio server, started through the sandbox
// launcher as the leader of its own process group. The bridge owns both
// ends of its pipes (os.Pipe rather than exec's StdoutPipe, whose reader
// Wait closes while the last reply may still be unread) and reaps it
// itself; once it has exited, its group, cgroup and private folder are
// released, so nothing it started outlives it.
type process struct {
	proc   *sandbox.Process
	cmd    *exec.Cmd // proc.Cmd
	stdin  *os.File  // the bridge's write end of the server's stdin
	stdout *os.File  // the bridge's read end of the server's stdout
	exited chan struct{}
	err    error // Wait's, once exited is closed
	tail   *sandbox.Tail
}

// trampoline is the executable that applies a server's limits: this one,
// which is the tenxgraph binary serving the bridge.
var trampoline = sync.OnceValue(func() string {
	exe, _ := os.Executable()
	return exe
})

func startStdio(cfg Server, log hclog.Logger) (*process, error) {
	profile := cfg.Sandbox
	profile.Env, profile.PassEnv = cfg.Env, nil
	// A bridge served as a plugin keeps its servers' private folders in
	// its own socket folder, which its host removes with it.
	homes := os.Getenv("PLUGIN_UNIX_SOCKET_DIR")
	if homes != "" && profile.User != "" {
		_ = os.Chmod(homes, 0o711) // the server's account passes through to its own folder
	}
	proc, err := sandbox.Command(sandbox.Spec{Name: "mcp." + cfg.Name, Key: "mcp_servers." + cfg.Name,
		Path: cfg.Command, Args: cfg.Args, Dir: cfg.Cwd, Profile: profile, Trampoline: trampoline(), HomeIn: homes})
	if err != nil {
		return nil, err
	}
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	pipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		proc.Release()
		return nil, fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	cmd := proc.Cmd
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = proc.Start()
	// The child has its ends; the bridge keeps only its own.
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()
	if err != nil {
		_ = inW.Close()
		_ = outR.Close()
		_ = errR.Close()
		proc.Release()
		return nil, err
	}
	p := &process{proc: proc, cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{}), tail: &sandbox.Tail{}}
	go p.logStderr(errR, log)
	go func() {
		p.err = cmd.Wait()
		proc.Release() // its children, its cgroup and its private folder go with it
		close(p.exited)
	}()
	return p, nil
}

// logStderr files what the server writes on stderr in the bridge's log,
// and keeps the last lines for error messages.
func (p *process) logStderr(r *os.File, log hclog.Logger) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		p.tail.Add(line)
		log.Info("server stderr", "line", line)
	}
}

// stop ends the server the way MCP clients do: close its stdin and let it
// exit, then SIGTERM, then SIGKILL, waiting grace between steps.
func (p *process) stop(grace time.Duration) {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
		return
	case <-time.After(grace):
	}
	_ = p.proc.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return
	case <-time.After(grace):
	}
	p.proc.Kill()
	<-p.exited
}

// release closes the bridge's ends of the pipes once the server is gone.
func (p *process) release() {
	_ = p.stdin.Close()
	_ = p.stdout.Close()
}
