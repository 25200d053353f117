package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/server"
)

const (
	tokenA = "token-a-0123456789"
	tokenB = "token-b-9876543210"
)

// authed starts a server that accepts two tokens; requests carry token A
// unless told otherwise.
func authed(t *testing.T, extra map[string]any) *env {
	t.Helper()
	t.Setenv("TG_TEST_TOKEN_A", tokenA)
	t.Setenv("TG_TEST_TOKEN_B", tokenB)
	srv := map[string]any{"auth": map[string]any{"tokens_env": []any{"TG_TEST_TOKEN_A", "TG_TEST_TOKEN_B"}}}
	for k, v := range extra {
		srv[k] = v
	}
	e := start(t, setup{server: srv})
	e.token = tokenA
	e.tenants = map[string]string{tokenA: "TG_TEST_TOKEN_A", tokenB: "TG_TEST_TOKEN_B"}
	return e
}

func TestAuth(t *testing.T) {
	e := authed(t, nil)
	callID := e.paused("mine")
	before := e.state("mine")

	routes := []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/graph/invoke", runBody("new", "hello")},
		{"POST", "/v1/graph/invoke", resumeBody("mine", callID, "x")},
		{"POST", "/v1/graph/stream", runBody("new", "hello")},
		{"POST", "/v1/agui", map[string]any{"threadId": "new", "runId": "r", "messages": []any{map[string]any{"id": "u", "role": "user", "content": "hello"}}}},
		{"GET", "/v1/threads/mine", nil},
		{"DELETE", "/v1/threads/mine", nil},
	}
	for _, rt := range routes {
		for _, c := range []struct {
			name string
			o    opt
		}{
			{"no header", withToken("")},
			{"wrong token", withToken("token-c")},
			{"prefix of a token", withToken(tokenA[:len(tokenA)-1])},
			{"basic scheme", withHeader("Authorization", "Basic "+tokenA)},
			{"empty bearer", withHeader("Authorization", "Bearer ")},
			{"token without scheme", withHeader("Authorization", tokenA)},
		} {
			r := e.do(rt.method, rt.path, rt.body, c.o)
			errorOf(t, r, 401, "unauthorized", "Bearer")
			if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("%s %s %s: WWW-Authenticate %q", rt.method, rt.path, c.name, r.header.Get("WWW-Authenticate"))
			}
		}
	}
	if after := e.state("mine"); after != before {
		t.Fatalf("refused requests changed the thread")
	}
	if r := e.do("GET", "/v1/threads/new", nil); r.status != 404 {
		t.Fatalf("a refused request created a thread: %d", r.status)
	}
	// The scheme is case-insensitive; health and metrics are open.
	if r := e.do("GET", "/v1/threads/mine", nil, withHeader("Authorization", "bearer "+tokenA)); r.status != 200 {
		t.Fatalf("lower-case scheme: %d %s", r.status, r.body)
	}
	for _, p := range []string{"/healthz", "/metrics"} {
		if r := e.do("GET", p, nil, withToken("")); r.status != 200 {
			t.Fatalf("%s without a token: %d", p, r.status)
		}
	}
	// Either configured token is accepted.
	if r := e.do("POST", "/v1/graph/invoke", runBody("b-thread", "hello"), withToken(tokenB)); r.status != 200 {
		t.Fatalf("token B: %d %s", r.status, r.body)
	}
}

// A server configured for auth never starts open: an empty token variable
// is an error naming it.
func TestAuthTokenMissing(t *testing.T) {
	e := start(t, setup{memory: true})
	t.Setenv("TG_TEST_TOKEN_EMPTY", "")
	cfg := *e.svc.Config
	cfg.Server.Auth = &config.Auth{TokensEnv: []string{"TG_TEST_TOKEN_EMPTY"}}
	svc := *e.svc
	svc.Config = &cfg
	_, err := server.New(&svc, server.Options{Logger: hclog.NewNullLogger()})
	if err == nil || !strings.Contains(err.Error(), "TG_TEST_TOKEN_EMPTY") {
		t.Fatalf("server.New with an empty token variable: %v", err)
	}
}

func TestCORS(t *testing.T) {
	const app = "http://app.example:5173"
	e := authed(t, map[string]any{"cors": map[string]any{"allow_origins": []any{app}}})

	// A preflight from an allowed origin is answered before auth (browsers
	// send no credentials with it).
	r := e.do("OPTIONS", "/v1/graph/invoke", nil, withToken(""), withHeader("Origin", app),
		withHeader("Access-Control-Request-Method", "POST"), withHeader("Access-Control-Request-Headers", "authorization, content-type"))
	if r.status != http.StatusNoContent {
		t.Fatalf("preflight: %d %s", r.status, r.body)
	}
	h := r.header
	if h.Get("Access-Control-Allow-Origin") != app || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Content-Type") ||
		h.Get("Vary") != "Origin" || h.Get("Access-Control-Max-Age") == "" {
		t.Fatalf("preflight headers %v", h)
	}
	// An actual request from the allowed origin carries the headers, the
	// one-off ignored-config header readable by the page.
	body := runBody("cors", "hello")
	body["config"].(map[string]any)["remote_tools"] = []any{}
	r = e.do("POST", "/v1/graph/invoke", body, withHeader("Origin", app))
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != app || !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "Tenxgraph-Ignored-Config") {
		t.Fatalf("request from %s: %d %v", app, r.status, r.header)
	}
	// So does a 401, so a page can tell it is not signed in.
	r = e.do("GET", "/v1/threads/cors", nil, withToken(""), withHeader("Origin", app))
	if r.status != 401 || r.header.Get("Access-Control-Allow-Origin") != app {
		t.Fatalf("401 from %s: %d %v", app, r.status, r.header)
	}

	// Another origin gets no CORS headers at all, preflight or not, and is
	// refused: its requests are 403.
	for _, origin := range []string{"http://evil.example", "http://app.example", "https://app.example:5173", "null"} {
		r = e.do("OPTIONS", "/v1/graph/invoke", nil, withToken(""), withHeader("Origin", origin), withHeader("Access-Control-Request-Method", "POST"))
		if r.status == http.StatusNoContent || hasCORS(r.header) {
			t.Fatalf("preflight from %s: %d %v", origin, r.status, r.header)
		}
		r = e.do("GET", "/v1/threads/cors", nil, withHeader("Origin", origin))
		if r.status != http.StatusForbidden || hasCORS(r.header) {
			t.Fatalf("GET from %s: %d %v", origin, r.status, r.header)
		}
	}
	// Without an Origin header (curl, servers), nothing changes.
	if r := e.do("GET", "/v1/threads/cors", nil); r.status != 200 || hasCORS(r.header) {
		t.Fatalf("no Origin: %d %v", r.status, r.header)
	}
}

func TestCORSAnyOrigin(t *testing.T) {
	e := start(t, setup{memory: true, server: map[string]any{"cors": map[string]any{"allow_origins": []any{"*"}}}})
	r := e.do("OPTIONS", "/v1/agui", nil, withHeader("Origin", "https://anywhere.example"), withHeader("Access-Control-Request-Method", "POST"))
	if r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != "https://anywhere.example" {
		t.Fatalf("preflight with *: %d %v", r.status, r.header)
	}
}

// Without a CORS config, no origin gets CORS headers.
func TestCORSOff(t *testing.T) {
	e := start(t, setup{memory: true})
	r := e.do("OPTIONS", "/v1/graph/invoke", nil, withHeader("Origin", "http://localhost:5173"), withHeader("Access-Control-Request-Method", "POST"))
	if hasCORS(r.header) || r.status == 204 {
		t.Fatalf("CORS off: %d %v", r.status, r.header)
	}
}

func hasCORS(h http.Header) bool {
	for k := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			return true
		}
	}
	return false
}

func TestBodyLimit(t *testing.T) {
	e := start(t, setup{server: map[string]any{"max_body_bytes": 2048}})
	callID := e.paused("limit")
	before := e.state("limit")
	big := runBody("limit", strings.Repeat("x", 4096))
	bigResume := resumeBody("limit", callID, map[string]any{"text": strings.Repeat("y", 4096)})
	bigAGUI := aguiInput("limit", userMsg("u", strings.Repeat("z", 4096)))
	for _, c := range []struct {
		path string
		body any
	}{
		{"/v1/graph/invoke", big},
		{"/v1/graph/invoke", bigResume},
		{"/v1/graph/stream", big},
		{"/v1/graph/stream", bigResume},
		{"/v1/agui", bigAGUI},
		{"/v1/graph/invoke", `{"input": {"messages": [` + strings.Repeat(`{"role":"user","content":"a"},`, 200)},
	} {
		errorOf(t, e.do("POST", c.path, c.body), 413, "body_too_large", "2048 bytes", "server.max_body_bytes")
	}
	if after := e.state("limit"); after != before {
		t.Fatalf("a body over the limit changed the thread")
	}
	// Just under the limit is fine.
	res := e.invoke(resumeBody("limit", callID, map[string]any{"text": strings.Repeat("y", 1500)}))
	if res.Status != "completed" {
		t.Fatalf("%+v", res)
	}
}
