//go:build unix

package sdk

import (
	"os"
	"os/signal"
	"syscall"
)

// onTerminate handles SIGTERM, which the host also arranges to be sent when
// it dies (Linux parent-death signal), so the plugin's own children go too.
func onTerminate(lost func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	go func() {
		<-ch
		lost()
	}()
}

// killGroup ends the processes the plugin started (an MCP server, say).
// The host starts each plugin as the leader of its own process group, so
// the group is exactly the plugin and its descendants; a plugin run any other
// way is not a leader and leaves the group alone.
func killGroup() {
	if pgid, err := syscall.Getpgid(0); err == nil && pgid == os.Getpid() {
		signal.Ignore(syscall.SIGTERM)
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // includes this process
	}
}

// ignoreBrokenPipes turns writes to a closed stdout or stderr into errors
// instead of a SIGPIPE that ends the process.
func ignoreBrokenPipes() { signal.Ignore(syscall.SIGPIPE) }
