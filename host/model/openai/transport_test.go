package openai_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/model/openai"
	"github.com/tenxgraph/tenxgraph/host/model/openai/openaitest"
)

// TestConnectionsReusedUnderConcurrency: 10,000 calls, 100 in flight, on
// the default client open at most 200 connections to the model server
// (net/http's default of 2 idle connections per host opened one for most
// calls).
func TestConnectionsReusedUnderConcurrency(t *testing.T) {
	const inFlight, calls = 100, 10_000
	srv := openaitest.NewServer(t)
	srv.Handle(func(openaitest.Request) openaitest.Reply { return openaitest.Text("ok") })
	m, err := openai.New(openai.Config{Model: "test-model", BaseURL: srv.URL})
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

// TestHTTP2WhenTheServerSpeaksIt: against a TLS server offering HTTP/2,
// the default transport uses it, even with TLS settings of its own (which
// turn net/http's automatic HTTP/2 off unless asked for).
func TestHTTP2WhenTheServerSpeaksIt(t *testing.T) {
	model := openaitest.New()
	model.Handle(func(openaitest.Request) openaitest.Reply { return openaitest.Text("ok") })
	var protos sync.Map
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos.Store(r.Proto, true)
		model.ServeHTTP(w, r)
	}))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	tr := openai.DefaultTransport().(*http.Transport)
	tr.TLSClientConfig = ts.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	m, err := openai.New(openai.Config{Model: "test-model", BaseURL: ts.URL + "/v1", HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := m.Generate(ctx, userReq("hi")); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	protos.Range(func(k, _ any) bool { got = append(got, k.(string)); return true })
	if len(got) != 1 || got[0] != "HTTP/2.0" {
		t.Errorf("requests came as %v; want HTTP/2.0 only", got)
	}
	if p := model.Problems(); len(p) != 0 {
		t.Errorf("protocol problems: %v", p)
	}
}

// TestStreamedCallsReuseTheirConnection: a streamed answer is read to its
// end, so one caller's calls, one after the other, share one connection.
// (The stream was closed right after "data: [DONE]", before the chunked
// encoding's last chunk, and net/http then closes the connection.)
func TestStreamedCallsReuseTheirConnection(t *testing.T) {
	const calls = 200
	srv := openaitest.NewServer(t)
	srv.Handle(func(openaitest.Request) openaitest.Reply { return openaitest.Text("ok") })
	m, err := openai.New(openai.Config{Model: "test-model", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for range calls {
		if _, err := generate(t, m, userReq("hi"), true); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.Connections(); got != 1 {
		t.Errorf("%d streamed calls one after the other opened %d connections; want 1", calls, got)
	}
}

// writeCounter counts the writes on the connections it dials.
type writeCounter struct {
	net.Conn
	writes *atomic.Int64
}

func (c writeCounter) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestRequestSentInOneWrite: each request goes out in one write, headers
// and body together. (The SDK wraps the body in a reader net/http does not
// know is in memory, and net/http then flushed the headers first: two
// writes, two packets, and a second read for the model server.)
func TestRequestSentInOneWrite(t *testing.T) {
	const calls = 5
	srv := openaitest.NewServer(t)
	srv.Handle(func(openaitest.Request) openaitest.Reply { return openaitest.Text("ok") })
	var writes atomic.Int64
	var d net.Dialer
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return writeCounter{Conn: c, writes: &writes}, nil
	}}}
	m := newModel(t, srv, func(c *openai.Config) { c.HTTPClient = hc })
	for range calls {
		if _, err := m.Generate(ctx, userReq("hi", addTool)); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.Served(); got != calls {
		t.Fatalf("the server answered %d requests, want %d", got, calls)
	}
	if got := writes.Load(); got != calls {
		t.Errorf("%d requests took %d writes; want one each", calls, got)
	}
}
