package sandbox

import (
	"os"
	"testing"
	"time"
)

// BenchmarkStart is the cost of starting (and reaping) a process that
// does nothing, without the trampoline and through it: what every
// provider start now pays on top of its own.
func BenchmarkStart(b *testing.B) {
	for _, c := range []struct {
		name  string
		tramp string
	}{{"direct", ""}, {"trampoline", os.Args[0]}} {
		b.Run(c.name, func(b *testing.B) {
			var waitT, relT, startT time.Duration
			defer func() {
				b.Logf("start %v wait %v release %v", startT/time.Duration(b.N), waitT/time.Duration(b.N), relT/time.Duration(b.N))
			}()
			for b.Loop() {
				p, err := Command(Spec{Name: "true", Path: "true", Trampoline: c.tramp})
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				if err := p.Start(); err != nil {
					b.Fatal(err)
				}
				startT += time.Since(t0)
				t1 := time.Now()
				_ = p.Cmd.Wait()
				t2 := time.Now()
				p.Release()
				waitT += t2.Sub(t1)
				relT += time.Since(t2)
			}
		})
	}
}
