package memo

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// idsMemo folds the ids of every call and result, as the scripted model's
// memo does.
func idsMemo() *Fold[map[string]int] {
	return &Fold[map[string]int]{
		New: func() map[string]int { return map[string]int{} },
		Add: func(v map[string]int, m message.Message) {
			for _, c := range m.ToolCalls() {
				v["call "+c.ID]++
			}
			for _, r := range m.ToolResults() {
				v["result "+r.ToolCallID]++
			}
		},
	}
}

func foldAll(msgs []message.Message) map[string]int {
	m := idsMemo()
	v := m.New()
	for _, msg := range msgs {
		m.Add(v, msg)
	}
	return v
}

// Over threads that grow, are re-created under the same id and are
// interleaved, the memo's value is always the fold of the whole thread.
func TestThreadMemoIsTheFold(t *testing.T) {
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 5))
		m := idsMemo()
		threads := map[string][]message.Message{}
		for range 60 {
			id := fmt.Sprintf("t%d", rng.IntN(3))
			full := threads[id]
			switch {
			case full == nil || rng.IntN(8) == 0:
				full = genThread(rng, 10+rng.IntN(30)) // new, or re-created
			case rng.IntN(4) == 0:
				full = deepCopy(full) // the same messages decoded again
			}
			threads[id] = full
			k := rng.IntN(len(full) + 1)
			if rng.IntN(2) == 0 {
				k = len(full)
			}
			var got map[string]int
			m.With(id, full[:k], func(v map[string]int) { got = maps.Clone(v) })
			if want := foldAll(full[:k]); !maps.Equal(got, want) {
				t.Fatalf("seed %d, thread %s, %d messages: got %v, want %v", seed, id, k, got, want)
			}
		}
	}
}

// The memo keeps no more threads, nor bytes of messages, than its bounds
// (the thread in hand aside).
func TestThreadMemoBounded(t *testing.T) {
	m := idsMemo()
	m.Max, m.MaxBytes = 4, 10_000
	for i := range 10 {
		m.With(fmt.Sprintf("t%d", i), []message.Message{message.Text(message.RoleUser, "hi")}, func(map[string]int) {})
	}
	if m.threads.Len() != 4 {
		t.Fatalf("%d threads kept, want 4", m.threads.Len())
	}
	big := []message.Message{message.Text(message.RoleUser, strings.Repeat("x", 20_000))}
	m.With("big", big, func(map[string]int) {})
	if m.threads.Len() != 1 || !m.threads.Has("big") {
		t.Fatalf("%d threads kept after one over the byte bound, want it alone", m.threads.Len())
	}
	m.With("small", []message.Message{message.Text(message.RoleUser, "hi")}, func(map[string]int) {})
	if m.threads.Has("big") || m.threads.Bytes() > m.MaxBytes {
		t.Fatalf("%d bytes kept, over the bound %d", m.threads.Bytes(), m.MaxBytes)
	}
}

// Concurrent readers of one thread's prefixes and of other threads each
// see the fold of what they passed (run with -race).
func TestThreadMemoConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	threads := [][]message.Message{genThread(rng, 40), genThread(rng, 40)}
	m := idsMemo()
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			th := threads[g%2]
			for k := range len(th) + 1 {
				var got map[string]int
				m.With(fmt.Sprintf("t%d", g%2), th[:k], func(v map[string]int) { got = maps.Clone(v) })
				if want := foldAll(th[:k]); !maps.Equal(got, want) {
					errs <- fmt.Sprintf("goroutine %d, %d messages: got %v, want %v", g, k, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// genThread makes a thread of n messages that call tools and answer them,
// from a few call ids, so that ids repeat within and across threads.
func genThread(rng *rand.Rand, n int) []message.Message {
	msgs := make([]message.Message, n)
	for i := range msgs {
		id, m := fmt.Sprintf("c%d", rng.IntN(12)), message.Message{ID: fmt.Sprintf("m%d", i), Role: message.RoleAssistant}
		switch rng.IntN(3) {
		case 0:
			m.Content = []message.Block{message.TextBlock{Text: "hi"}}
		case 1:
			m.Content = []message.Block{message.ToolCallBlock{ID: id, Name: "t", Arguments: json.RawMessage(`{}`)}}
		default:
			m.Role, m.Content = message.RoleTool, []message.Block{message.ToolResultBlock{ToolCallID: id, Content: json.RawMessage(`"r"`)}}
		}
		msgs[i] = m
	}
	return msgs
}

// deepCopy copies msgs and their content, so that a test can hand a memo a
// thread equal to one it saw but in other arrays.
func deepCopy(msgs []message.Message) []message.Message {
	if msgs == nil {
		return nil
	}
	out := make([]message.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		out[i].Content = append([]message.Block(nil), m.Content...)
	}
	return out
}
