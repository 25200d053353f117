package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/server"
)

// A body that trickles in is answered 408 with a JSON error as soon as it
// falls behind the server's pace, not a 500 at the end of the read
// timeout; a body that keeps coming is read, however it is split.
func TestTrickledBodyIsAnswered408(t *testing.T) {
	const grace = time.Second
	e := start(t, setup{memory: true, tune: func(s *server.Server) { s.SetBodyPace(grace, 1<<10) }})
	addr := strings.TrimPrefix(e.url, "http://")
	body := `{"input": {"messages": [{"role": "user", "content": "hello"}]}, "config": {"thread_id": "slow"}}`
	send := func(c net.Conn, pause time.Duration, chunk int) {
		fmt.Fprintf(c, "POST /v1/graph/invoke HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, len(body))
		for i := 0; i < len(body); i += chunk {
			if _, err := io.WriteString(c, body[i:min(i+chunk, len(body))]); err != nil {
				return // answered and closed
			}
			time.Sleep(pause) // the client's own pace, not synchronisation
		}
	}

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	started := time.Now()
	go send(c, 200*time.Millisecond, 1) // 5 bytes a second
	_ = c.SetReadDeadline(time.Now().Add(waitLimit))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(started)
	raw, _ := io.ReadAll(res.Body)
	b := errorOf(t, resp{status: res.StatusCode, header: res.Header, body: raw}, http.StatusRequestTimeout, "body_timeout",
		"came too slowly", "1024 bytes a second")
	t.Logf("a body trickled at 5 bytes a second: %d after %v: %s", res.StatusCode, took.Round(time.Millisecond), b.Error.Message)
	if took >= server.ReadTimeout {
		t.Fatalf("answered after %v, want well before the read timeout (%v)", took, server.ReadTimeout)
	}
	if r := e.do("GET", "/v1/threads/slow", nil); r.status != http.StatusNotFound {
		t.Fatalf("the trickled request created its thread: %d %s", r.status, r.body)
	}

	// The same body in three parts, with pauses shorter than the grace.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	go send(c2, grace/4, len(body)/3+1)
	_ = c2.SetReadDeadline(time.Now().Add(waitLimit))
	res, err = http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("a body in three parts: %d %s", res.StatusCode, raw)
	}
}
