package memo

import (
	"sync"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// Fold keeps, per thread, a value folded over the thread's messages, and
// folds in only the messages added since it last saw the thread, so that
// reading it costs what the thread gained rather than its length (plus
// one comparison of the message headers, see message.SamePrefix).
// Messages that do not extend the ones it saw (an edited or re-created
// thread) are folded again from the start. It keeps threads within PerThread's
// bounds, Max threads and MaxBytes of messages (estimated): it shares the
// messages with the thread's state, but would keep them alive after the
// thread cache let them go. It is safe for concurrent use.
type Fold[T any] struct {
	// New returns an empty value; Add folds one message into it.
	New func() T
	Add func(v T, m message.Message)
	// Max and MaxBytes bound the threads kept (PerThread's defaults when
	// zero); set them before the first With.
	Max, MaxBytes int

	once    sync.Once
	threads PerThread[memoed[T]]
}

type memoed[T any] struct {
	mu    sync.Mutex
	msgs  []message.Message
	v     T
	bytes int
	made  bool
}

// With calls f with the value folded over msgs, the messages of thread.
// f runs under the thread's lock: it must be quick, do no I/O and not keep
// v.
func (m *Fold[T]) With(thread string, msgs []message.Message, f func(v T)) {
	m.once.Do(func() { m.threads.Max, m.threads.MaxBytes = m.Max, m.MaxBytes })
	t := m.threads.Get(thread)
	t.mu.Lock()
	if !t.made || !message.SamePrefix(t.msgs, msgs) {
		t.v, t.msgs, t.bytes, t.made = m.New(), nil, 0, true
	}
	for _, msg := range msgs[len(t.msgs):] {
		m.Add(t.v, msg)
		t.bytes += message.SizeOf(msg)
	}
	t.msgs = msgs[:len(msgs):len(msgs)]
	f(t.v)
	bytes := t.bytes
	t.mu.Unlock()
	m.threads.Counted(thread, t, bytes)
}
