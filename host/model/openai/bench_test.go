package openai

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
)

// benchModel is a Model whose requests are built, never sent.
func benchModel(b *testing.B) *Model {
	m, err := New(Config{Model: "gpt-test", BaseURL: "http://127.0.0.1:1/v1", APIKey: "k"})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// build is what Generate does before it sends: the request's body.
func build(b *testing.B, m *Model, req model.Request) int {
	p, err := m.params(context.Background(), req)
	if err != nil {
		b.Fatal(err)
	}
	body, err := p.encode()
	if err != nil {
		b.Fatal(err)
	}
	return len(body)
}

// warm is build off the clock, apart in profiles (pprof -ignore warm).
//
//go:noinline
func warm(b *testing.B, m *Model, req model.Request) { build(b, m, req) }

// timed is build on the clock, apart in profiles and for callgrind's
// --toggle-collect.
//
//go:noinline
func timed(b *testing.B, m *Model, req model.Request) int { return build(b, m, req) }

// A call on a long text-only thread whose history the Model holds, the
// thread having gained one message since the last call (every 100 calls
// the thread starts again from its first n messages, off the clock). The
// text path, to be compared with the code before media.
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
					m = benchModel(b)
					warm(b, m, model.Request{ThreadID: "t", Messages: thread[:n]})
					b.StartTimer()
				}
				b.SetBytes(int64(build(b, m, model.Request{ThreadID: "t", Messages: thread[:n+k+1]})))
			}
		})
	}
}

// fileBlobs reads blobs from files, as a store on disk does.
type fileBlobs string

func (d fileBlobs) ReadBlob(_ context.Context, ref string) ([]byte, error) {
	return os.ReadFile(filepath.Join(string(d), ref[len(message.BlobPrefix):]))
}

// imageTurns is a thread of turns user/assistant pairs; every every-th
// user message, the first and the last included, carries an image of size
// random bytes, stored in dir.
func imageTurns(b *testing.B, dir string, turns, every, size int) []message.Message {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []message.Message
	for i := range turns {
		u := message.Message{ID: fmt.Sprint("u", i), Role: message.RoleUser, Content: []message.Block{message.TextBlock{Text: fmt.Sprintf("turn %d: what changed in this screenshot?", i)}}}
		if i%every == 0 || i == turns-1 {
			data := make([]byte, size)
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
			sum := sha256.Sum256(data)
			if err := os.WriteFile(filepath.Join(dir, hex.EncodeToString(sum[:])), data, 0o600); err != nil {
				b.Fatal(err)
			}
			u.Content = append(u.Content, message.MediaBlock{Kind: message.TypeImage, MimeType: "image/png",
				Blob: message.BlobPrefix + hex.EncodeToString(sum[:]), Size: int64(size), Width: 1280, Height: 800})
		}
		out = append(out, u, message.Message{ID: fmt.Sprint("a", i), Role: message.RoleAssistant,
			Content: []message.Block{message.TextBlock{Text: "The button moved to the left, and the dialog is gone."}}})
	}
	return out
}

// Building the request of turn 1, 49 and 50 of a thread with an image
// of 256 KiB every 7 turns (turn 49 brings none, turn 50 its own): the
// turn's messages are encoded, the earlier ones are the thread's history.
// "whole" builds turn 50 with nothing kept, as a call without a thread id
// does: every image read and encoded again.
func BenchmarkImageThread(b *testing.B) {
	const size = 256 << 10
	dir := b.TempDir()
	thread := imageTurns(b, dir, 50, 7, size)
	blobs := fileBlobs(dir)
	turn := func(n int) []message.Message { return thread[:2*n-1] } // up to the n-th user message
	for _, c := range []struct {
		name       string
		prev, msgs []message.Message
		thread     string
	}{
		{"turn-1", nil, turn(1), "t"},
		{"turn-49", turn(48), turn(49), "t"},
		{"turn-50", turn(49), turn(50), "t"},
		{"turn-50-whole", nil, turn(50), ""},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				m := benchModel(b)
				if c.prev != nil {
					warm(b, m, model.Request{ThreadID: c.thread, Messages: c.prev, Blobs: blobs})
				}
				b.StartTimer()
				b.SetBytes(int64(timed(b, m, model.Request{ThreadID: c.thread, Messages: c.msgs, Blobs: blobs})))
			}
		})
	}
}
