package service_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

// http_fetch's timeout travels from the file to the builtin provider's
// process, which cuts a fetch off by it: the page never answers, so the
// fetch would otherwise run to the provider's default of 10s.
func TestBuiltinFetchTimeoutReachesTheProvider(t *testing.T) {
	done := make(chan struct{})
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(page.Close)
	t.Cleanup(func() { close(done) }) // before page.Close, which waits for the handler
	u, err := url.Parse(page.URL)
	if err != nil {
		t.Fatal(err)
	}
	script := `{"rules": [{"match": "fetch", "tool_calls": [{"name": "http_fetch", "arguments": {"url": ` + js(page.URL) + `}}]}]}`
	s := startConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"},
	  "builtin_tools": {"enable": ["http_fetch"],
	    "http_fetch": {"allow_hosts": [`+js("127.0.0.1/32:"+u.Port())+`], "timeout": "200ms"}}}`, script)
	started := time.Now()
	res, err := s.App.Invoke(context.Background(), []message.Message{message.Text(message.RoleUser, "fetch")}, thread.RunConfig{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(started); d > 5*time.Second {
		t.Errorf("the fetch was cut off after %s", d)
	}
	rs := res.Messages[len(res.Messages)-2].ToolResults()
	if len(rs) != 1 || !rs[0].IsError || !strings.Contains(string(rs[0].Content), "timed out after 200ms") {
		t.Fatalf("results %s", js(rs))
	}
}
