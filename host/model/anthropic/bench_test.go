package anthropic

import (
	"context"
	"fmt"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/model"
)

// warm is a request built off the clock, apart in profiles.
//
//go:noinline
func warm(b *testing.B, m *Model, req model.Request) { build(b, m, req) }

func build(b *testing.B, m *Model, req model.Request) int {
	body, err := m.request(context.Background(), req)
	if err != nil {
		b.Fatal(err)
	}
	return len(body)
}

// A call on a long text-only thread whose encodings the Model holds, the
// thread having gained one message since the last call (every 100 calls
// the thread starts again from its first n messages, off the clock), as
// the openai provider's BenchmarkTextThread.
func BenchmarkTextThread(b *testing.B) {
	const cycle = 100
	for _, n := range []int{500, 5000} {
		b.Run(fmt.Sprint("messages-", n), func(b *testing.B) {
			thread := turns((n+cycle)/5+1, "b")
			var m *Model
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				k := i % cycle
				if k == 0 {
					b.StopTimer()
					var err error
					if m, err = New(Config{Model: "claude-test", BaseURL: "http://127.0.0.1:1", APIKey: "k"}); err != nil {
						b.Fatal(err)
					}
					warm(b, m, model.Request{ThreadID: "t", Messages: thread[:n]})
					b.StartTimer()
				}
				b.SetBytes(int64(build(b, m, model.Request{ThreadID: "t", Messages: thread[:n+k+1]})))
			}
		})
	}
}
