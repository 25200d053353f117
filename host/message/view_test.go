package message

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
)

// genThread makes a thread of n messages from a few call ids, so that it
// has every edge ForModel handles: results that come later, before their
// call or twice, results for unknown calls, calls never answered, calls
// repeating an id, results in non-tool messages, remote-call markers.
func genThread(rng *rand.Rand, n int) []Message {
	id := func() string { return fmt.Sprintf("c%d", rng.IntN(12)) }
	var msgs []Message
	for i := range n {
		var m Message
		m.ID = fmt.Sprintf("m%d", i)
		switch rng.IntN(6) {
		case 0:
			m.Role = RoleUser
			m.Content = []Block{TextBlock{Text: "hi"}}
			if rng.IntN(4) == 0 {
				m.Content = append(m.Content, ToolResultBlock{ToolCallID: id(), Content: json.RawMessage(`"u"`)})
			}
		case 1, 2:
			m.Role = RoleAssistant
			if rng.IntN(3) == 0 {
				m.Content = append(m.Content, TextBlock{Text: "thinking"})
			}
			for range rng.IntN(3) {
				m.Content = append(m.Content, ToolCallBlock{ID: id(), Name: "t", Arguments: json.RawMessage(`{}`)})
			}
		case 3, 4:
			m.Role = RoleTool
			for range 1 + rng.IntN(2) {
				if rng.IntN(4) == 0 {
					m.Content = append(m.Content, RemoteToolCallBlock{ID: id(), Name: "r", Arguments: json.RawMessage(`{}`), Node: "tools"})
				} else {
					m.Content = append(m.Content, ToolResultBlock{ToolCallID: id(), Content: json.RawMessage(fmt.Sprintf("%d", i)), IsError: rng.IntN(5) == 0})
				}
			}
		default:
			m.Role = RoleSystem
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// deepCopy copies messages down to their blocks' values, to check later
// that nothing handed out was changed.
func deepCopy(msgs []Message) []Message {
	if msgs == nil {
		return nil
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		out[i].Content = append([]Block(nil), m.Content...)
	}
	return out
}

// A view fed a growing thread, a step of random size at a time, gives
// ForModel's output at every length, and never changes an output it
// handed out earlier (the filler a later result replaces included).
func TestModelViewIsForModel(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 1))
		thread := genThread(rng, 1+rng.IntN(60))
		var v ModelView
		type handed struct{ got, want []Message }
		var earlier []handed
		for k := 0; k <= len(thread); k += rng.IntN(4) {
			msgs := thread[:k]
			if rng.IntN(3) == 0 {
				// The caller's own slice of the same messages.
				msgs = append([]Message(nil), msgs...)
			}
			got, want := v.ForModel(msgs), ForModel(msgs)
			if len(want) == 0 {
				want = nil
			}
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d, %d messages:\n got %+v\nwant %+v", seed, k, got, want)
			}
			earlier = append(earlier, handed{got, deepCopy(got)})
			if k == len(thread) {
				break
			}
		}
		for _, h := range earlier {
			if !reflect.DeepEqual(h.got, h.want) {
				t.Fatalf("seed %d: an output handed out earlier changed:\n now %+v\nwas %+v", seed, h.got, h.want)
			}
		}
	}
}

// Messages that do not extend the kept ones (another thread, or the same
// ids with other content, as a deleted and re-created thread has) are
// rewritten from scratch.
func TestModelViewStartsAgain(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	a, b := genThread(rng, 40), genThread(rng, 40)
	var v ModelView
	v.ForModel(a)
	for _, msgs := range [][]Message{b, a[:10], deepCopy(a), b[:5], a} {
		if got, want := v.ForModel(msgs), ForModel(msgs); !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v\nwant %+v", got, want)
		}
	}
	// Same ids and roles, other content: recognised as other messages.
	re := deepCopy(a)
	for i := range re {
		re[i].Content = []Block{TextBlock{Text: "new"}}
	}
	if got, want := v.ForModel(re), ForModel(re); !reflect.DeepEqual(got, want) {
		t.Fatalf("re-created thread: got %+v\nwant %+v", got, want)
	}
}

// A later result replaces the filler of its call, in a copy: the output
// handed out before keeps the filler.
func TestModelViewLateResult(t *testing.T) {
	call := Message{ID: "a", Role: RoleAssistant, Content: []Block{ToolCallBlock{ID: "c", Name: "t", Arguments: json.RawMessage(`{}`)}}}
	user := Text(RoleUser, "next")
	result := Message{ID: "r", Role: RoleTool, Content: []Block{ToolResultBlock{ToolCallID: "c", Content: json.RawMessage(`1`)}}}
	var v ModelView
	before := v.ForModel([]Message{call, user})
	if r := before[1].Content[0].(ToolResultBlock); string(r.Content) != string(unanswered) {
		t.Fatalf("unanswered call got %s", r.Content)
	}
	after := v.ForModel([]Message{call, user, result})
	if r := after[1].Content[0].(ToolResultBlock); string(r.Content) != "1" {
		t.Fatalf("late result not moved up: %+v", after)
	}
	if r := before[1].Content[0].(ToolResultBlock); string(r.Content) != string(unanswered) {
		t.Fatalf("the earlier output changed: %+v", before)
	}
	if len(after) != 3 {
		t.Fatalf("the result's own message is not dropped: %+v", after)
	}
}

// Concurrent callers, on one thread's prefixes and on another thread, each
// get ForModel's output (run with -race).
func TestModelViewConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	threads := [][]Message{genThread(rng, 50), genThread(rng, 50)}
	var v ModelView
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			th := threads[g%2]
			for k := range len(th) + 1 {
				if got, want := v.ForModel(th[:k]), ForModel(th[:k]); len(want) > 0 && !reflect.DeepEqual(got, want) {
					errs <- fmt.Sprintf("goroutine %d, %d messages: got %+v want %+v", g, k, got, want)
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

func TestSamePrefix(t *testing.T) {
	arr := make([]Message, 0, 8)
	for i := range 4 {
		arr = append(arr, Text(RoleUser, fmt.Sprint("m", i)))
		arr[i].ID = fmt.Sprint("id", i)
	}
	prefix := arr[:3:3]
	copied := append([]Message(nil), arr...)
	renamed := append([]Message(nil), arr...)
	renamed[1].ID = "other"
	rebuilt := append([]Message(nil), arr...)
	rebuilt[2] = Text(RoleUser, "m2") // the same text in a content array of its own
	rebuilt[2].ID = "id2"
	for _, c := range []struct {
		name         string
		prefix, msgs []Message
		want         bool
	}{
		{"nothing seen", nil, arr, true},
		{"extended in the same array", prefix, arr, true},
		{"the same messages in a copy", prefix, copied, true},
		{"the same array, shorter", arr, prefix, false},
		{"a message of another id", prefix, renamed, false},
		{"a message rebuilt", prefix, rebuilt, false},
	} {
		if got := SamePrefix(c.prefix, c.msgs); got != c.want {
			t.Errorf("%s: SamePrefix = %v, want %v", c.name, got, c.want)
		}
	}
}

// BenchmarkSamePrefix compares a 10,000-message thread with the messages a
// memo saw before the last two: in the same array, as a run's appends
// leave them, and in a copy.
func BenchmarkSamePrefix(b *testing.B) {
	thread := make([]Message, 10_000)
	for i := range thread {
		thread[i] = Text(RoleUser, "m")
		thread[i].ID = fmt.Sprint("id", i)
	}
	seen := thread[: len(thread)-2 : len(thread)-2]
	copied := append([]Message(nil), thread...)
	for _, c := range []struct {
		name string
		msgs []Message
	}{{"same-array", thread}, {"copy", copied}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if !SamePrefix(seen, c.msgs) {
					b.Fatal("not the same prefix")
				}
			}
		})
	}
}
