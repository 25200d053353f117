package sandbox

import (
	"strings"
	"sync"
)

// Tail keeps the last lines a process wrote on stderr, for the error that
// says why it stopped or did not start. The zero Tail keeps 10 lines.
type Tail struct {
	mu    sync.Mutex
	lines []string
}

const tailLines = 10

// Add keeps line (cut to 500 bytes), dropping the oldest past the limit.
func (t *Tail) Add(line string) {
	if len(line) > 500 {
		line = line[:500] + "…"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > tailLines {
		t.lines = t.lines[len(t.lines)-tailLines:]
	}
}

// String is "; its last output on stderr: a | b", or "" when there was none.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return ""
	}
	return "; its last output on stderr: " + strings.Join(t.lines, " | ")
}
