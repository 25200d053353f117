package anthropic_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/model/anthropic"
	"github.com/tenxgraph/tenxgraph/host/model/anthropic/anthropictest"
)

// TestConnectionsReusedUnderConcurrency: 2,000 calls, 50 in flight, on the
// default client open at most 100 connections to the model server (with
// net/http's default of 2 idle connections per host, most calls opened
// one).
func TestConnectionsReusedUnderConcurrency(t *testing.T) {
	const inFlight, calls = 50, 2_000
	srv := anthropictest.NewServer(t)
	srv.Handle(func(anthropictest.Request) anthropictest.Reply { return anthropictest.Text("ok") })
	m, err := anthropic.New(anthropic.Config{Model: "claude-test", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, inFlight)
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= calls {
				if _, err := m.Generate(ctx, userReq("hi")); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := srv.Served(); got != calls {
		t.Fatalf("the server answered %d requests, want %d", got, calls)
	}
	if got := srv.Connections(); got > 2*inFlight {
		t.Errorf("%d calls with %d in flight opened %d connections; want at most %d", calls, inFlight, got, 2*inFlight)
	}
	t.Logf("%d calls, %d in flight: %d connections", calls, inFlight, srv.Connections())
}
