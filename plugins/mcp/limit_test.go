package mcp

import (
	"bufio"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// The limiter counts each message on its own, wherever the reads cut it:
// messages within the bound pass whole, and the first past it ends the
// stream after the whole messages before it and at most the bound of its
// own bytes (those that came in earlier reads). Witnessing, it passes
// everything and only says so.
func TestFrameLimiter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		framing framing
		in      string
		limit   int
		want    string // the whole messages that read through an enforcing limiter
		over    bool
	}{
		{"lines within", lines, "aaaa\nbbbb\ncccc\n", 5, "aaaa\nbbbb\ncccc\n", false},
		{"a line past", lines, "aaaa\nbbbbbb\ncc\n", 5, "aaaa\n", true},
		{"a line never ended", lines, "aa\nbbbbbbbbbbbb", 5, "aa\n", true},
		{"events within", events, "data: a\r\n\r\ndata: b\n\n: c\r\r\n\r\n", 12, "data: a\r\n\r\ndata: b\n\n: c\r\r\n\r\n", false},
		{"an event of many lines past", events, "data: a\n\ndata: b\ndata: c\n\n", 12, "data: a\n\n", true},
		{"a body within", whole, strings.Repeat("x", 100), 100, strings.Repeat("x", 100), false},
		{"a body past", whole, strings.Repeat("x", 101), 100, "", true},
	} {
		for name, wrap := range map[string]func(io.Reader) io.Reader{
			"whole reads": func(r io.Reader) io.Reader { return r },
			"byte reads":  iotest.OneByteReader,
			"half reads":  iotest.HalfReader,
		} {
			over := new(atomic.Bool)
			f := &frameLimiter{r: wrap(strings.NewReader(tc.in)), limit: tc.limit, framing: tc.framing, enforce: true, over: over, blank: true}
			got, err := io.ReadAll(f)
			var tooLarge errFrameTooLarge
			whole := strings.HasPrefix(tc.in, string(got)) && strings.HasPrefix(string(got), tc.want) && len(got)-len(tc.want) <= tc.limit
			if !whole || !tc.over && string(got) != tc.want || over.Load() != tc.over || errors.As(err, &tooLarge) != tc.over {
				t.Errorf("%s, %s: read %q, %v (over %v); want %q, over %v", tc.name, name, got, err, over.Load(), tc.want, tc.over)
			}
			over = new(atomic.Bool)
			w := &frameLimiter{r: wrap(strings.NewReader(tc.in)), limit: tc.limit, framing: tc.framing, over: over, blank: true}
			if got, err := io.ReadAll(w); string(got) != tc.in || err != nil || over.Load() != tc.over {
				t.Errorf("%s, %s, witnessing: read %q, %v (over %v); want all of it, over %v", tc.name, name, got, err, over.Load(), tc.over)
			}
		}
	}
}

// goServerHTTP runs internal/testserver over HTTP with flags (-json, -sse)
// and returns its endpoint.
func goServerHTTP(t *testing.T, flags ...string) string {
	t.Helper()
	bin := goServer(t, "").Command
	cmd := exec.Command(bin, append([]string{"-http", "127.0.0.1:0"}, flags...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("testserver %v: %v", flags, err)
	}
	return strings.TrimSpace(line)
}

// A server answering with a message past twice its max_result_bytes is
// refused as the message arrives, on every transport: the call gets an
// error result naming the key at once (not at its timeout), the bridge
// connects again, and the next call works. A result within the bound is
// truncated to max_output_bytes, as before.
func TestOversizeMessageRefused(t *testing.T) {
	const limit = 64 << 10 // the frame bound: 192 KiB
	servers := map[string]Server{"stdio": goServer(t, "s")}
	servers["http"] = Server{Type: "http", URL: goServerHTTP(t)}
	servers["http-json"] = Server{Type: "http", URL: goServerHTTP(t, "-json")}
	servers["sse"] = Server{Type: "sse", URL: goServerHTTP(t, "-sse")}
	for name, srv := range servers {
		t.Run(name, func(t *testing.T) {
			srv.Name, srv.Timeout, srv.MaxResultBytes, srv.MaxOutputBytes = "s", sdk.Duration(30*time.Second), limit, limit
			b, _ := start(t, Options{Servers: []Server{srv}})
			resp := callT(t, b, "big", map[string]any{"bytes": 150 << 10})
			if resp.IsError || len(resp.Content) > limit+1024 || !strings.Contains(string(resp.Content), "[truncated by tenxgraph: ") {
				t.Fatalf("a result within the frame bound: %d bytes, %.200s", len(resp.Content), resp.Content)
			}
			began := time.Now()
			resp = callT(t, b, "big", map[string]any{"bytes": 8 << 20})
			if !resp.IsError || !strings.Contains(text(t, resp), "sent a message of more than 196608 bytes, the most the bridge reads of one: twice mcp_servers.s.max_result_bytes (65536)") {
				t.Fatalf("an 8 MiB result: %.300s", resp.Content)
			}
			if took := time.Since(began); took > 10*time.Second {
				t.Fatalf("the error came after %s", took)
			}
			if s := text(t, callT(t, b, "echo", map[string]any{"text": "after"})); s != "after" {
				t.Fatalf("the next call: %q", s)
			}
		})
	}
}

// The text of one call's progress notifications counts against
// max_result_bytes: a server reporting without end gets the call
// cancelled, with an error result naming the key.
func TestProgressBounded(t *testing.T) {
	srv := goServer(t, "s")
	srv.MaxResultBytes = 1000
	b, _ := start(t, Options{Servers: []Server{srv}})
	resp := callT(t, b, "sleep", map[string]any{"ms": 30000, "message": strings.Repeat("m", 300)})
	if !resp.IsError || !strings.Contains(text(t, resp), `sent more than 1000 bytes of progress messages for "sleep" (mcp_servers.s.max_result_bytes); the call was cancelled`) {
		t.Fatalf("a call reporting without end: %.300s", resp.Content)
	}
	if s := text(t, callT(t, b, "echo", map[string]any{"text": "after"})); s != "after" {
		t.Fatalf("the next call: %q", s)
	}
}
