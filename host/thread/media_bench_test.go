package thread_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

// writtenBytes is what this process has written so far (Linux's
// /proc/self/io wchar: every write and pwrite, the store's WAL and
// database included).
func writtenBytes(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Skipf("bytes written are read from /proc/self/io: %v", err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no wchar in /proc/self/io")
	return 0
}

// noisePNG is a PNG of w x h pixels of noise from seed: about 4 w h bytes,
// as a photo (noise does not compress).
func noisePNG(w, h int, seed uint64) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.Uint32())
	}
	var out bytes.Buffer
	if err := png.Encode(&out, img); err != nil {
		panic(err)
	}
	return out.Bytes()
}

// BenchmarkTurnWrites measures what one turn of a thread (a user message,
// a one-node graph's answer, one checkpoint) writes on SQLite: text only;
// with a new 1 MB image each turn; with the same 1 MB image each turn,
// which the store already keeps. wB/turn is bytes written by the process.
func BenchmarkTurnWrites(b *testing.B) {
	const side = 512 // 512 x 512 x 4: 1 MiB of pixels
	same := noisePNG(side, side, 0)
	for _, c := range []struct {
		name  string
		input func(i int) []message.Message
	}{
		{"text", func(i int) []message.Message { return user(fmt.Sprintf("turn %d: what do you see?", i)) }},
		{"new-image", func(i int) []message.Message {
			return withImage(fmt.Sprintf("turn %d: what do you see?", i), dataImage(noisePNG(side, side, uint64(i)+1)))
		}},
		{"same-image", func(i int) []message.Message {
			return withImage(fmt.Sprintf("turn %d: what do you see?", i), dataImage(same))
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			store, err := checkpoint.OpenSQLite(ctx, filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			app, err := thread.Compile(graph.New().AddNode("a", say("a")).AddEdge(graph.START, "a").AddEdge("a", graph.END), store)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := app.Invoke(ctx, c.input(-1), thread.RunConfig{ThreadID: "t"}); err != nil { // the thread's first pages
				b.Fatal(err)
			}
			var written int64
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				in := c.input(i)
				w := writtenBytes(b)
				b.StartTimer()
				if _, err := app.Invoke(ctx, in, thread.RunConfig{ThreadID: "t"}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				written += writtenBytes(b) - w
				b.StartTimer()
			}
			b.ReportMetric(float64(written)/float64(b.N), "wB/turn")
		})
	}
}
