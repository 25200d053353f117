package message

import "sync"

// ThreadMemo keeps, per thread, a value folded over the thread's messages,
// and folds in only the messages added since it last saw the thread, so
// that reading it costs what the thread gained rather than its length
// (plus one comparison of the message headers, see SamePrefix). Messages
// that do not extend the ones it saw (an edited or re-created thread) are
// folded again from the start. It keeps up to Max threads
// (DefaultMemoThreads when zero) holding up to MaxBytes of messages
// (DefaultMemoBytes when zero, estimated), and
// drops threads beyond either: it shares the messages with the thread's
// state, but would keep them alive after the thread cache let them go. It
// is safe for concurrent use.
type ThreadMemo[T any] struct {
	// New returns an empty value; Add folds one message into it.
	New func() T
	Add func(v T, m Message)
	// Max and MaxBytes bound the threads kept.
	Max, MaxBytes int

	mu      sync.Mutex
	threads map[string]*memoed[T]
	bytes   int // of the messages of every thread kept
}

type memoed[T any] struct {
	msgs  []Message
	v     T
	bytes int
}

// With calls f with the value folded over msgs, the messages of thread.
// f runs under the memo's lock: it must be quick, do no I/O and not keep v.
func (m *ThreadMemo[T]) With(thread string, msgs []Message, f func(v T)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.threads == nil {
		m.threads = map[string]*memoed[T]{}
	}
	t := m.threads[thread]
	if t != nil && !SamePrefix(t.msgs, msgs) {
		m.bytes -= t.bytes
		t = nil
	}
	if t == nil {
		t = &memoed[T]{v: m.New()}
		m.threads[thread] = t
	}
	for _, msg := range msgs[len(t.msgs):] {
		m.Add(t.v, msg)
		n := sizeOf(msg)
		t.bytes += n
		m.bytes += n
	}
	t.msgs = msgs[:len(msgs):len(msgs)]
	f(t.v)
	max, maxBytes := m.Max, m.MaxBytes
	if max <= 0 {
		max = DefaultMemoThreads
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMemoBytes
	}
	for k, o := range m.threads {
		if len(m.threads) <= max && m.bytes <= maxBytes {
			break
		}
		if o != t {
			delete(m.threads, k)
			m.bytes -= o.bytes
		}
	}
}
