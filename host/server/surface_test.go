package server_test

import (
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// withHost sends the request with another Host header (the connection still
// goes to the test server), as a page whose DNS name was rebound to
// 127.0.0.1 does.
func withHost(h string) opt { return func(r *http.Request) { r.Host = h } }

func withoutHeader(k string) opt { return func(r *http.Request) { r.Header.Del(k) } }

func (e *env) port() string {
	u, err := url.Parse(e.url)
	if err != nil {
		e.t.Fatal(err)
	}
	return u.Port()
}

// The request of the issue: a page on another site posts text/plain, so the
// browser sends it without a preflight, from its own origin and (after DNS
// rebinding) with its own Host. It is refused, creates no thread and runs
// nothing; so is each of its parts on its own.
func TestCrossSiteRequestRefused(t *testing.T) {
	e := start(t, setup{})
	evilHost := "evil.example:" + e.port()
	before := e.state("x")
	m0 := e.metrics()

	errorOf(t, e.do("POST", "/v1/graph/invoke", runBody("x", "hello"), withHeader("Content-Type", "text/plain"),
		withHeader("Origin", "http://evil.example"), withHost(evilHost)), http.StatusForbidden, "host_not_allowed", "evil.example", "server.allowed_hosts")

	for _, c := range []struct {
		name         string
		path         string
		opts         []opt
		status       int
		code, substr string
	}{
		{"text/plain from another origin", "/v1/graph/invoke", []opt{withHeader("Content-Type", "text/plain"), withHeader("Origin", "http://evil.example")}, 403, "origin_not_allowed", "server.cors.allow_origins"},
		{"JSON from another origin", "/v1/graph/invoke", []opt{withHeader("Origin", "http://evil.example")}, 403, "origin_not_allowed", `"http://evil.example"`},
		{"origin null", "/v1/graph/stream", []opt{withHeader("Origin", "null")}, 403, "origin_not_allowed", "null"},
		{"loopback origin on another port", "/v1/agui", []opt{withHeader("Origin", "http://127.0.0.1:1")}, 403, "origin_not_allowed", "127.0.0.1:1"},
		{"text/plain without an origin", "/v1/graph/invoke", []opt{withHeader("Content-Type", "text/plain")}, 415, "unsupported_media_type", "application/json"},
		{"form", "/v1/graph/invoke", []opt{withHeader("Content-Type", "application/x-www-form-urlencoded")}, 415, "unsupported_media_type", "application/x-www-form-urlencoded"},
		{"multipart", "/v1/graph/stream", []opt{withHeader("Content-Type", "multipart/form-data; boundary=x")}, 415, "unsupported_media_type", "multipart/form-data"},
		{"no content type", "/v1/graph/invoke", []opt{withoutHeader("Content-Type")}, 415, "unsupported_media_type", "Content-Type: application/json"},
		{"no content type on agui", "/v1/agui", []opt{withoutHeader("Content-Type")}, 415, "unsupported_media_type", "Content-Type: application/json"},
		{"json with another charset", "/v1/graph/invoke", []opt{withHeader("Content-Type", "application/json; charset=latin1")}, 415, "unsupported_media_type", "UTF-8"},
		{"json-like type", "/v1/graph/invoke", []opt{withHeader("Content-Type", "application/jsonx")}, 415, "unsupported_media_type", "application/jsonx"},
		{"rebound name, same origin", "/v1/graph/invoke", []opt{withHost(evilHost), withHeader("Origin", "http://"+evilHost)}, 403, "host_not_allowed", "evil.example"},
		{"rebound name, no origin", "/v1/graph/invoke", []opt{withHost(evilHost)}, 403, "host_not_allowed", "evil.example"},
		{"a loopback-looking name", "/v1/graph/invoke", []opt{withHost("localhost.evil.example:" + e.port())}, 403, "host_not_allowed", "localhost.evil.example"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var body any = runBody("x", "hello")
			if c.path == "/v1/agui" {
				body = aguiInput("x", userMsg("u1", "hello"))
			}
			errorOf(t, e.do("POST", c.path, body, c.opts...), c.status, c.code, c.substr)
		})
	}
	// Every route is behind the Host check, the playground and health too.
	for _, path := range []string{"/", "/playground/app.js", "/healthz", "/metrics", "/v1/threads/x", "/nope"} {
		errorOf(t, e.do("GET", path, nil, withHost(evilHost)), 403, "host_not_allowed")
		errorOf(t, e.do("GET", path, nil, withHeader("Origin", "http://evil.example")), 403, "origin_not_allowed")
	}
	errorOf(t, e.do("DELETE", "/v1/threads/x", nil, withHost(evilHost)), 403, "host_not_allowed")

	if after := e.state("x"); after != before {
		t.Fatalf("a refused request changed thread x:\n%s\n%s", before, after)
	}
	if !strings.Contains(before, "GET 404") {
		t.Fatalf("thread x exists: %s", before)
	}
	d := delta(m0, e.metrics(), runsCompleted, runsInterrupted, builtinCalls)
	if d[runsCompleted]+d[runsInterrupted]+d[builtinCalls] != 0 {
		t.Fatalf("refused requests ran something: %v", d)
	}

	// The loopback names, with or without the port, and the server's own
	// origin are served; a charset of UTF-8 is fine.
	for i, c := range []struct{ host, origin string }{
		{"localhost:" + e.port(), "http://localhost:" + e.port()},
		{"127.0.0.1:" + e.port(), "http://127.0.0.1:" + e.port()},
		{"[::1]:" + e.port(), ""},
		{"LOCALHOST", ""},
		{"127.0.0.2:" + e.port(), ""},
	} {
		opts := []opt{withHost(c.host), withHeader("Content-Type", "application/json; charset=UTF-8")}
		if c.origin != "" {
			opts = append(opts, withHeader("Origin", c.origin))
		}
		id := "ok" + string(rune('a'+i))
		if r := e.do("POST", "/v1/graph/invoke", runBody(id, "hello"), opts...); r.status != 200 {
			t.Fatalf("Host %q Origin %q: %d %s", c.host, c.origin, r.status, r.body)
		}
		if r := e.do("GET", "/v1/threads/"+id, nil, opts...); r.status != 200 {
			t.Fatalf("GET with Host %q Origin %q: %d %s", c.host, c.origin, r.status, r.body)
		}
	}
}

// The same checks hold with auth on: a token does not let a request past
// them (a browser never attaches one cross-site anyway).
func TestCrossSiteRefusedWithAuth(t *testing.T) {
	e := authed(t, nil)
	before := e.state("x")
	errorOf(t, e.do("POST", "/v1/graph/invoke", runBody("x", "hello"), withHost("evil.example:"+e.port())), 403, "host_not_allowed")
	errorOf(t, e.do("POST", "/v1/graph/invoke", runBody("x", "hello"), withHeader("Origin", "http://evil.example")), 403, "origin_not_allowed")
	errorOf(t, e.do("POST", "/v1/graph/invoke", runBody("x", "hello"), withHeader("Content-Type", "text/plain")), 415, "unsupported_media_type")
	if after := e.state("x"); after != before {
		t.Fatalf("a refused request changed thread x:\n%s\n%s", before, after)
	}
	if r := e.do("POST", "/v1/graph/invoke", runBody("x", "hello")); r.status != 200 {
		t.Fatalf("with the token: %d %s", r.status, r.body)
	}
}

// server.allowed_hosts adds names to the loopback ones, and no others.
func TestAllowedHosts(t *testing.T) {
	e := start(t, setup{memory: true, server: map[string]any{"allowed_hosts": []any{"tenx.test"}}})
	for _, h := range []string{"tenx.test:" + e.port(), "TENX.test", "localhost:" + e.port()} {
		if r := e.do("POST", "/v1/graph/invoke", runBody("h", "hello"), withHost(h), withHeader("Origin", "http://"+h)); r.status != 200 {
			t.Fatalf("Host %q: %d %s", h, r.status, r.body)
		}
	}
	for _, h := range []string{"other.test:" + e.port(), "sub.tenx.test", "tenx.test.evil.example"} {
		errorOf(t, e.do("GET", "/healthz", nil, withHost(h)), 403, "host_not_allowed", "tenx.test")
	}
}

// Thread ids in the path: bytes that are not UTF-8 are 400, ids over 256
// characters 422, and a 256-character id of multi-byte characters is fine
// (the limit counts characters, not bytes).
func TestThreadIDsInPath(t *testing.T) {
	e := start(t, setup{memory: true})
	long := strings.Repeat("é", 256)
	if r := e.invoke(runBody(long, "hello")); r.ThreadID != long {
		t.Fatalf("256 two-byte characters: %+v", r)
	}
	if th := e.thread(url.PathEscape(long)); th.ThreadID != long {
		t.Fatalf("GET the 256-character thread: %+v", th)
	}
	before := e.state(url.PathEscape(long))
	for _, method := range []string{"GET", "DELETE"} {
		errorOf(t, e.do(method, "/v1/threads/a%FF", nil), 400, "malformed_request", "thread_id", "UTF-8")
		errorOf(t, e.do(method, "/v1/threads/"+url.PathEscape(long+"é"), nil), 422, "invalid_input", "at most 256 characters, got 257")
		errorOf(t, e.do(method, "/v1/threads/a%EF%BF%BD", nil), 422, "invalid_input", "U+FFFD")
	}
	if after := e.state(url.PathEscape(long)); after != before {
		t.Fatalf("a refused request changed the thread")
	}
	if !reflect.DeepEqual(e.do("DELETE", "/v1/threads/"+url.PathEscape(long), nil).status, http.StatusNoContent) {
		t.Fatal("the 256-character thread could not be deleted")
	}
}
