package sandbox

import (
	"slices"
	"strings"
	"sync"
)

// Tail keeps the last lines a process wrote on stderr, for the error that
// says why it stopped or did not start. The zero Tail keeps 10 lines.
type Tail struct {
	mu    sync.Mutex
	lines []string
	panic string // "panic: ..." or "fatal error: ...", once seen
}

const tailLines = 10

// Add keeps line (cut to 500 bytes), dropping the oldest past the limit.
// A blank line is not kept: it says nothing, and would show as "|  |".
func (t *Tail) Add(line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	if len(line) > 500 {
		line = line[:500] + "…"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > tailLines {
		t.lines = t.lines[len(t.lines)-tailLines:]
	}
	if t.panic == "" && (strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ")) {
		t.panic = line // a Go panic's first line, which a long stack pushes out
	}
}

// String is "; its last output on stderr: a | b", or "" when there was none.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return ""
	}
	lines := t.lines
	if t.panic != "" && !slices.Contains(lines, t.panic) {
		lines = append([]string{t.panic, "…"}, lines...)
	}
	return "; its last output on stderr: " + strings.Join(lines, " | ")
}
