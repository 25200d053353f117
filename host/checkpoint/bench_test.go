package checkpoint_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
)

// benchStores lists the stores the benchmarks compare.
var benchStores = []struct {
	name string
	open func(b *testing.B) checkpoint.Checkpointer
}{
	{"memory", func(*testing.B) checkpoint.Checkpointer { return checkpoint.NewMemory() }},
	{"sqlite", func(b *testing.B) checkpoint.Checkpointer {
		return openSQLite(b, filepath.Join(b.TempDir(), "bench.db"))
	}},
	// Skipped unless TENXGRAPH_TEST_POSTGRES_DSN names a server.
	{"postgres", func(b *testing.B) checkpoint.Checkpointer {
		return openPostgres(b, postgresDSN(b))
	}},
}

func benchCheckpoint(thread string, seq int64) checkpoint.Checkpoint {
	state := make([]byte, 2048)
	for i := range state {
		state[i] = byte(i)
	}
	return checkpoint.Checkpoint{
		ThreadID: thread,
		Seq:      seq,
		RunID:    "run-0123456789",
		Step:     int(seq),
		Status:   checkpoint.StatusRunning,
		Next:     []string{"agent", "tools"},
		State:    state,
		Metadata: map[string]string{"owner": "alice"},
	}
}

// BenchmarkPut appends 2 KB checkpoints to one thread, deleting it (untimed)
// every 1000 puts so memory and the file stay bounded.
func BenchmarkPut(b *testing.B) {
	ctx := context.Background()
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			s := bs.open(b)
			defer s.Close()
			cp := benchCheckpoint("bench", 0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				seq := int64(i%1000) + 1
				if seq == 1 && i > 0 {
					b.StopTimer()
					if err := s.DeleteThread(ctx, cp.ThreadID); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				cp.Seq = seq
				if err := s.Put(ctx, cp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLatest reads the newest of 100 2 KB checkpoints.
func BenchmarkLatest(b *testing.B) {
	ctx := context.Background()
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			s := bs.open(b)
			defer s.Close()
			fill(b, s, "bench", 100)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				cp, err := s.Latest(ctx, "bench")
				if err != nil || cp.Seq != 100 {
					b.Fatal(cp.Seq, err)
				}
			}
		})
	}
}

// BenchmarkLatestParallel reads from many goroutines, which is where the
// SQLite read pool matters.
func BenchmarkLatestParallel(b *testing.B) {
	ctx := context.Background()
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			s := bs.open(b)
			defer s.Close()
			const threads = 64
			for i := range threads {
				fill(b, s, fmt.Sprint(i), 10)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					i++
					if _, err := s.Latest(ctx, fmt.Sprint(i%threads)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkHistory reads the 10 newest of 100 2 KB checkpoints.
func BenchmarkHistory(b *testing.B) {
	ctx := context.Background()
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			s := bs.open(b)
			defer s.Close()
			fill(b, s, "bench", 100)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				cps, err := s.History(ctx, "bench", 10)
				if err != nil || len(cps) != 10 {
					b.Fatal(len(cps), err)
				}
			}
		})
	}
}

func fill(b *testing.B, s checkpoint.Checkpointer, thread string, n int64) {
	b.Helper()
	for seq := int64(1); seq <= n; seq++ {
		if err := s.Put(context.Background(), benchCheckpoint(thread, seq)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutParallel has 64 writers appending to their own threads at
// once, as a busy server's runs do: the SQLite store commits what queues up
// together (group commit).
func BenchmarkPutParallel(b *testing.B) {
	ctx := context.Background()
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			s := bs.open(b)
			defer s.Close()
			var next atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(32) // 64 goroutines on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				cp := benchCheckpoint(fmt.Sprint("par-", next.Add(1)), 0)
				for pb.Next() {
					cp.Seq++
					if err := s.Put(ctx, cp); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkRoundTrip is what a remote-tool round trip asks of the store,
// on a new thread, with 64 round trips at once (a busy server): a claim,
// a step's checkpoint (the user's message and the model's answer), the
// pause's (a tool result; it releases the lease), then the resume's claim
// and its two checkpoints (the client's result; the final answer, which
// releases). Each checkpoint's own state is small, as the engine writes it
// with a message log. One op is one round trip.
func BenchmarkRoundTrip(b *testing.B) {
	ctx := context.Background()
	entry := func(n int) []byte { return make([]byte, n) }
	for _, bs := range benchStores[1:] {
		b.Run(bs.name, func(b *testing.B) {
			s := bs.open(b)
			defer s.Close()
			l := s.(checkpoint.Leaser)
			var next atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					thread := fmt.Sprint("rt-", next.Add(1))
					seq := int64(0)
					run := func(steps ...[][]byte) {
						lease, err := l.Claim(ctx, thread, time.Minute)
						if err != nil {
							b.Error(err)
							return
						}
						for i, add := range steps {
							seq++
							cp := checkpoint.Checkpoint{ThreadID: thread, Seq: seq, RunID: "run-0123456789", Step: int(seq),
								Status: checkpoint.StatusRunning, Next: []string{"tools"}, State: entry(200), Append: add,
								Incarnation: lease.Incarnation, Token: lease.Token, Metadata: map[string]string{"owner": "alice"}}
							if i == len(steps)-1 {
								cp.Status, cp.Release, cp.Next = checkpoint.StatusInterrupted, true, nil
							}
							if err := s.Put(ctx, cp); err != nil {
								b.Error(err)
								return
							}
						}
					}
					run([][]byte{entry(120), entry(300)}, [][]byte{entry(200)})
					run([][]byte{entry(150)}, [][]byte{entry(200)})
				}
			})
		})
	}
}
