package builtin

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// allowOf is the allow_hosts entry for a test server: its loopback address
// as a CIDR, with its port, since http_fetch connects to no loopback
// address that allow_hosts does not list in CIDR form.
func allowOf(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	return "127.0.0.1/32:" + portOf(t, srv)
}

func portOf(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	u, _ := url.Parse(srv.URL)
	return u.Port()
}

func newTestFetcher(t *testing.T, o HTTPFetchOptions) *fetcher {
	t.Helper()
	f, ps := newFetcher(o)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	t.Cleanup(f.client.CloseIdleConnections)
	return f
}

// newTestFetcherDNS is newTestFetcher resolving host names with dns only.
func newTestFetcherDNS(t *testing.T, o HTTPFetchOptions, dns *testDNS) *fetcher {
	t.Helper()
	f := newTestFetcher(t, o)
	f.dialer.Resolver = dns.resolver()
	return f
}

// fetchCall runs http_fetch through its sdk handler, as the host would, and
// returns the decoded result, or the error message of an error result.
func fetchCall(t *testing.T, ctx context.Context, f *fetcher, args any) (fetchResult, string) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.tool().Handler.CallTool(ctx, sdk.CallToolRequest{Name: "http_fetch", Arguments: raw})
	if err != nil {
		t.Fatalf("call failed outright: %v", err)
	}
	if resp.IsError {
		var msg string
		if err := json.Unmarshal(resp.Content, &msg); err != nil {
			t.Fatal(err)
		}
		return fetchResult{}, msg
	}
	var r fetchResult
	if err := json.Unmarshal(resp.Content, &r); err != nil {
		t.Fatal(err)
	}
	return r, ""
}

func mustFetch(t *testing.T, f *fetcher, args any) fetchResult {
	t.Helper()
	r, msg := fetchCall(t, context.Background(), f, args)
	if msg != "" {
		t.Fatalf("error result: %s", msg)
	}
	return r
}

func mustFail(t *testing.T, ctx context.Context, f *fetcher, args any, want ...string) string {
	t.Helper()
	_, msg := fetchCall(t, ctx, f, args)
	if msg == "" {
		t.Fatalf("fetch %v succeeded; want an error", args)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not contain %q", msg, w)
		}
	}
	return msg
}

type fetchArgsT struct {
	URL     string            `json:"url"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

func TestFetchAllowedHost(t *testing.T) {
	var gotUA, gotAccept, gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotUA, gotAccept, gotAuth = r.UserAgent(), r.Header.Get("Accept"), r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Last-Modified", "Wed, 21 Oct 2015 07:28:00 GMT")
		w.Header().Set("Set-Cookie", "session=secret")
		w.Header().Set("X-Internal", "nope")
		fmt.Fprint(w, `{"items": ["é", "ü"]}`)
	}))
	defer srv.Close()
	f := newTestFetcher(t, HTTPFetchOptions{AllowedHosts: []string{allowOf(t, srv)}})

	r := mustFetch(t, f, fetchArgsT{URL: srv.URL + "/items?x=1", Headers: map[string]string{"accept": "application/json", "Authorization": "Bearer t"}})
	if r.URL != srv.URL+"/items?x=1" || r.Status != 200 || r.Body != `{"items": ["é", "ü"]}` || r.Encoding != "" || r.Truncated {
		t.Errorf("result %+v", r)
	}
	wantHeaders := map[string]string{
		"content-type":   "application/json; charset=utf-8",
		"content-length": strconv.Itoa(len(`{"items": ["é", "ü"]}`)),
		"etag":           `"v1"`,
		"last-modified":  "Wed, 21 Oct 2015 07:28:00 GMT",
	}
	if fmt.Sprint(r.Headers) != fmt.Sprint(wantHeaders) {
		t.Errorf("headers %v, want %v", r.Headers, wantHeaders)
	}
	if gotUA != "tenxgraph-http_fetch/"+Version || gotAccept != "application/json" || gotAuth != "Bearer t" {
		t.Errorf("request headers: UA %q, Accept %q, Authorization %q", gotUA, gotAccept, gotAuth)
	}

	// An error status is a result, not a failure.
	r = mustFetch(t, f, fetchArgsT{URL: srv.URL + "/", Headers: map[string]string{"User-Agent": "custom/1"}})
	if gotUA != "custom/1" {
		t.Errorf("User-Agent %q, want the model's", gotUA)
	}
	srv404 := httptest.NewServer(http.NotFoundHandler())
	defer srv404.Close()
	f404 := newTestFetcher(t, HTTPFetchOptions{AllowedHosts: []string{allowOf(t, srv404)}})
	if r := mustFetch(t, f404, fetchArgsT{URL: srv404.URL}); r.Status != 404 || !strings.Contains(r.Body, "404 page not found") {
		t.Errorf("404: %+v", r)
	}
}

func TestFetchDisallowedHost(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	port := portOf(t, srv)
	f := newTestFetcher(t, HTTPFetchOptions{AllowedHosts: []string{allowOf(t, srv), "*.example.org"}})

	mustFail(t, context.Background(), f, fetchArgsT{URL: "http://localhost:" + port + "/"},
		`host "localhost" is not allowed`, "may only fetch from 127.0.0.1/32:"+port+", *.example.org", "add it to allow_hosts")
	// The same IP on another port.
	mustFail(t, context.Background(), f, fetchArgsT{URL: "http://127.0.0.1/"}, `port 80 of host "127.0.0.1" is not allowed`)
	// Not http(s), no host, credentials, garbage.
	mustFail(t, context.Background(), f, fetchArgsT{URL: "ftp://127.0.0.1:" + port + "/"}, `scheme "ftp" is not supported`)
	mustFail(t, context.Background(), f, fetchArgsT{URL: "file:///etc/passwd"}, `scheme "file" is not supported`)
	mustFail(t, context.Background(), f, fetchArgsT{URL: "/relative/path"}, "the URL has no scheme")
	mustFail(t, context.Background(), f, fetchArgsT{URL: "http:///nohost"}, "the URL has no host")
	mustFail(t, context.Background(), f, fetchArgsT{URL: "http://user:pw@127.0.0.1:" + port + "/"}, "credentials")
	mustFail(t, context.Background(), f, fetchArgsT{URL: "http://127.0.0.1:" + port + "/%zz"}, "is not a valid URL")
	mustFail(t, context.Background(), f, fetchArgsT{URL: srv.URL, Method: "POST"}, `method "POST" is not supported`)
	if n := hits.Load(); n != 0 {
		t.Errorf("the server was reached %d times by refused fetches", n)
	}
}

func TestFetchRefusedHeaders(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	f := newTestFetcher(t, HTTPFetchOptions{AllowedHosts: []string{allowOf(t, srv)}})
	cases := []struct {
		headers map[string]string
		want    string
	}{
		{map[string]string{"Host": "evil.example"}, `header "Host" is not allowed`},
		{map[string]string{"content-length": "5"}, `header "content-length" is not allowed`},
		{map[string]string{"Transfer-Encoding": "chunked"}, "is not allowed"},
		{map[string]string{"Connection": "close"}, "is not allowed"},
		{map[string]string{"Accept-Encoding": "br"}, "decodes the body itself"},
		{map[string]string{"Proxy-Authorization": "Basic x"}, "never go through a proxy"},
		{map[string]string{"Bad Header": "x"}, `header name "Bad Header" is not valid`},
		{map[string]string{"X-A": "a\r\nInjected: 1"}, "control character"},
		{map[string]string{"X-A": "a\x00"}, "control character"},
		{map[string]string{"accept": "a", "Accept": "b"}, "are the same header"},
	}
	for _, c := range cases {
		mustFail(t, context.Background(), f, fetchArgsT{URL: srv.URL, Headers: c.headers}, c.want)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server was reached %d times by refused fetches", n)
	}
}

func TestFetchRedirects(t *testing.T) {
	var outsideHits atomic.Int32
	outside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		outsideHits.Add(1)
		fmt.Fprint(w, "secret")
	}))
	defer outside.Close()
	outsideURL := "http://localhost:" + portOf(t, outside) + "/internal"

	mux := http.NewServeMux()
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/final", http.StatusFound) })
	mux.HandleFunc("/final", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "arrived") })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, outsideURL, http.StatusMovedPermanently)
	})
	mux.HandleFunc("/r/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n == 0 {
			fmt.Fprint(w, "end of chain")
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/r/%d", n-1), http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	f := newTestFetcher(t, HTTPFetchOptions{AllowedHosts: []string{allowOf(t, srv)}})

	if r := mustFetch(t, f, fetchArgsT{URL: srv.URL + "/start"}); r.URL != srv.URL+"/final" || r.Body != "arrived" {
		t.Errorf("redirect inside the allowlist: %+v", r)
	}

	mustFail(t, context.Background(), f, fetchArgsT{URL: srv.URL + "/away"},
		"redirect to "+outsideURL+" refused", `host "localhost" is not allowed`)
	if n := outsideHits.Load(); n != 0 {
		t.Errorf("the host outside the allowlist was reached %d times", n)
	}

	// Exactly five redirects are followed; a sixth is refused.
	if r := mustFetch(t, f, fetchArgsT{URL: srv.URL + "/r/5"}); r.Body != "end of chain" || r.URL != srv.URL+"/r/0" {
		t.Errorf("5 redirects: %+v", r)
	}
	mustFail(t, context.Background(), f, fetchArgsT{URL: srv.URL + "/r/6"},
		"redirect to "+srv.URL+"/r/0 refused", "stopped after 5 redirects")
}

// TestFetchCredentialsStayOnHost checks the documented reason Authorization
// may be passed: the client does not forward it to another host, even an
// allowed one.
func TestFetchCredentialsStayOnHost(t *testing.T) {
	var gotAuth atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth.Store(r.Header.Get("Authorization") + "|" + r.Header.Get("Cookie"))
	}))
	defer other.Close()
	otherURL := "http://other.test:" + portOf(t, other) + "/"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL, http.StatusFound)
	}))
	defer srv.Close()
	dns := newTestDNS(t, map[string][]netip.Addr{"other.test": {netip.MustParseAddr("127.0.0.1")}})
	f := newTestFetcherDNS(t, HTTPFetchOptions{AllowedHosts: []string{allowOf(t, srv), "other.test:" + portOf(t, other), allowOf(t, other)}}, dns)
	r := mustFetch(t, f, fetchArgsT{URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer secret", "Cookie": "a=b"}})
	if r.URL != otherURL {
		t.Fatalf("not redirected: %+v", r)
	}
	if got := gotAuth.Load(); got != "|" {
		t.Errorf("credentials forwarded to another host: %q", got)
	}
}

func TestFetchTruncation(t *testing.T) {
	body := strings.Repeat("0123456789", 10)
	mux := http.NewServeMux()
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) })
	mux.HandleFunc("/exact", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body[:16]) })
	mux.HandleFunc("/utf8", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, strings.Repeat("é", 20)) })
	mux.HandleFunc("/gzip", func(w http.ResponseWriter, r *http.Request) {
		// A small gzip body that decodes to 10 MB: max_bytes applies to
		// what is decoded.
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(bytes.Repeat([]byte("a"), 10<<20))
		zw.Close()
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(buf.Bytes())
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	f := newTestFetcher(t, HTTPFetchOptions{AllowedHosts: []string{allowOf(t, srv)}, MaxBytes: 16})

	if r := mustFetch(t, f, fetchArgsT{URL: srv.URL + "/plain"}); r.Body != body[:16] || !r.Truncated || r.Headers["content-length"] != "100" {
		t.Errorf("truncation: %+v", r)
	}
	if r := mustFetch(t, f, fetchArgsT{URL: srv.URL + "/exact"}); r.Body != body[:16] || r.Truncated {
		t.Errorf("a body of exactly max_bytes is not truncated: %+v", r)
	}
	// 16 bytes is 8 "é"; a cut inside a character would drop it rather than
	// turn the body into base64.
	f15 := newTestFetcher(t, HTTPFetchOptions{AllowedHosts: []string{allowOf(t, srv)}, MaxBytes: 15})
	if r := mustFetch(t, f15, fetchArgsT{URL: srv.URL + "/utf8"}); r.Body != strings.Repeat("é", 7) || !r.Truncated || r.Encoding != "" {
		t.Errorf("cut inside a character: %+v", r)
	}
	if r := mustFetch(t, f, fetchArgsT{URL: srv.URL + "/gzip"}); r.Body != strings.Repeat("a", 16) || !r.Truncated {
		t.Errorf("gzip: %+v", r)
	}
}

func TestFetchBinaryBody(t *testing.T) {
	png := []byte{0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0xff, 0xfe}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(png)
	}))
	defer srv.Close()
	f := newTestFetcher(t, HTTPFetchOptions{AllowedHosts: []string{allowOf(t, srv)}})
	r := mustFetch(t, f, fetchArgsT{URL: srv.URL})
	if r.Encoding != "base64" || r.Headers["content-type"] != "image/png" {
		t.Fatalf("result %+v", r)
	}
	got, err := base64.StdEncoding.DecodeString(r.Body)
	if err != nil || !bytes.Equal(got, png) {
		t.Errorf("decoded body %x (%v), want %x", got, err, png)
	}
}

func TestFetchHead(t *testing.T) {
	var method atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method.Store(r.Method)
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "1234")
		if r.Method != http.MethodHead {
			w.Write(bytes.Repeat([]byte("x"), 1234))
		}
	}))
	defer srv.Close()
	f := newTestFetcher(t, HTTPFetchOptions{AllowedHosts: []string{allowOf(t, srv)}})
	r := mustFetch(t, f, fetchArgsT{URL: srv.URL + "/file.txt", Method: "HEAD"})
	if method.Load() != "HEAD" {
		t.Errorf("server saw %v", method.Load())
	}
	if r.Status != 200 || r.Body != "" || r.Truncated || r.Headers["content-length"] != "1234" || r.Headers["content-type"] != "text/plain" {
		t.Errorf("HEAD result %+v", r)
	}
}

// slowServer answers only when the request is abandoned or after a long
// while, and reports when a request arrived.
func slowServer(t *testing.T) (*httptest.Server, chan struct{}) {
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	return srv, arrived
}

func TestFetchTimeout(t *testing.T) {
	srv, _ := slowServer(t)
	f := newTestFetcher(t, HTTPFetchOptions{AllowedHosts: []string{allowOf(t, srv)}, Timeout: sdk.Duration(150 * time.Millisecond)})
	start := time.Now()
	mustFail(t, context.Background(), f, fetchArgsT{URL: srv.URL}, "timed out after 150ms", "try again later")
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the fetch took %s despite a 150ms timeout", d)
	}
}

func TestFetchTimeoutWhileReadingBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("start of the body"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer srv.Close()
	f := newTestFetcher(t, HTTPFetchOptions{AllowedHosts: []string{allowOf(t, srv)}, Timeout: sdk.Duration(200 * time.Millisecond)})
	mustFail(t, context.Background(), f, fetchArgsT{URL: srv.URL}, "timed out after 200ms")
}

func TestFetchContextCancel(t *testing.T) {
	srv, arrived := slowServer(t)
	f := newTestFetcher(t, HTTPFetchOptions{AllowedHosts: []string{allowOf(t, srv)}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	// A call its caller cancelled ends at once as a cancelled call (sdk.Func
	// reports it to the caller, not as an error result for the model).
	start := time.Now()
	raw, _ := json.Marshal(fetchArgsT{URL: srv.URL})
	_, err := f.tool().Handler.CallTool(ctx, sdk.CallToolRequest{Name: "http_fetch", Arguments: raw})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled fetch: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the fetch took %s after its context was cancelled", d)
	}

	// A call whose context is already over does nothing.
	if _, err := f.tool().Handler.CallTool(ctx, sdk.CallToolRequest{Name: "http_fetch", Arguments: raw}); !errors.Is(err, context.Canceled) {
		t.Fatalf("fetch with a cancelled context: %v", err)
	}
}

func TestAllowlist(t *testing.T) {
	cases := []struct {
		entry string
		allow []string
		deny  []string
	}{
		{"api.example.com",
			[]string{"https://api.example.com/", "http://API.Example.COM./x", "https://api.example.com:443/", "http://api.example.com:80/"},
			[]string{"https://api.example.com:8443/", "http://api.example.com:443/", "https://evil.com/", "https://api.example.com.evil.com/", "https://xapi.example.com/", "https://sub.api.example.com/"}},
		{"API.Example.com.",
			[]string{"https://api.example.com/"}, nil},
		{"*.example.org",
			[]string{"https://a.example.org/", "https://a.b.example.org/", "http://A.EXAMPLE.ORG/"},
			[]string{"https://example.org/", "https://aexample.org/", "https://a.example.org:8443/", "https://a.example.org.evil.com/"}},
		{"*.example.com:8443",
			[]string{"https://a.example.com:8443/", "http://a.example.com:8443/"},
			[]string{"https://a.example.com/", "https://example.com:8443/"}},
		{"intranet:8080",
			[]string{"http://intranet:8080/", "http://INTRANET:08080/"},
			[]string{"http://intranet/", "http://intranet:8081/", "http://127.0.0.1:8080/"}},
		// An address outside the special-purpose ranges may be listed bare;
		// a loopback one only as a CIDR, which then works the same way.
		{"93.184.215.14",
			[]string{"http://93.184.215.14/", "https://93.184.215.14/"},
			[]string{"http://93.184.215.14:8080/", "http://93.184.215.15/", "http://[::ffff:93.184.215.14]/"}},
		{"127.0.0.1/32",
			[]string{"http://127.0.0.1/", "https://127.0.0.1/"},
			[]string{"http://127.0.0.1:8080/", "http://localhost/", "http://127.0.0.2/", "http://[::ffff:127.0.0.1]/"}},
		{"[::1/128]:8080",
			[]string{"http://[::1]:8080/", "http://[0:0::1]:8080/"},
			[]string{"http://[::1]/", "http://localhost:8080/", "http://127.0.0.1:8080/"}},
		{"::1/128",
			[]string{"http://[::1]/"},
			[]string{"http://[::1]:8080/"}},
		{"10.0.0.0/8",
			[]string{"http://10.1.2.3/", "https://10.255.255.255/"},
			[]string{"http://10.1.2.3:8080/", "http://11.0.0.1/", "http://[::ffff:10.1.2.3]/", "http://a.10.0.0.0/", "http://9.255.255.255/"}},
		{"10.0.0.0/8:8080",
			[]string{"http://10.1.2.3:8080/", "https://10.0.0.1:8080/"},
			[]string{"http://10.1.2.3/", "https://10.1.2.3/"}},
		{"fd00::/8",
			[]string{"http://[fd12::1]/"},
			[]string{"http://[fe80::1]/", "http://[fd12::1]:8080/"}},
		{"[fd00::/8]:8443",
			[]string{"https://[fd00::5]:8443/"},
			[]string{"https://[fd00::5]/"}},
		{"*.example.co.uk",
			[]string{"https://www.example.co.uk/"},
			[]string{"https://example.co.uk/", "https://other.co.uk/"}},
	}
	for _, c := range cases {
		a, ps := parseAllowlist([]string{c.entry})
		if len(ps) > 0 {
			t.Fatalf("entry %q: %v", c.entry, ps)
		}
		for _, s := range c.allow {
			u, _ := url.Parse(s)
			if err := a.check(u); err != nil {
				t.Errorf("entry %q refuses %s: %v", c.entry, s, err)
			}
		}
		for _, s := range c.deny {
			u, _ := url.Parse(s)
			if err := a.check(u); err == nil {
				t.Errorf("entry %q allows %s", c.entry, s)
			}
		}
	}

	bad := map[string]string{
		"":                 "empty entry",
		"http://a.com":     "is not a host",
		"a.com/path":       "is not a host",
		"user@a.com":       "is not a host",
		"*":                "would allow every host",
		"*.com":            "too broad",
		"a.*.com":          "'*' may only start an entry",
		"*a.com":           "'*' may only start an entry",
		"a..com":           "empty label",
		"a.com:":           "port",
		"a.com:0":          "port",
		"a.com:http":       "port",
		"[::1":             "unclosed",
		"[example.com]:80": "only an IPv6 address may be written in brackets",
		"[::1]8080":        "expected",
		"ex!ample.com":     "not allowed in a host name",
		// What always means this machine, or reaches a special-purpose
		// address, without the explicit CIDR form.
		"localhost":        "always means this machine",
		"LOCALHOST:8080":   "always means this machine",
		"api.localhost":    "always means this machine",
		"*.dev.localhost":  "always means this machine",
		"0.0.0.0":          `the unspecified address, which means this machine: to let http_fetch reach a server here, allow its loopback address as a CIDR, such as "127.0.0.1/32:8080"`,
		"::":               "the unspecified address",
		"[::]:8080":        "the unspecified address",
		"127.0.0.1":        `loopback address (this machine): http_fetch refuses such addresses unless allow_hosts lists their range in CIDR form; to allow this address only, write "127.0.0.1/32"`,
		"127.0.0.1:8080":   `write "127.0.0.1/32:8080"`,
		"[::1]:8080":       `write "[::1/128]:8080"`,
		"::ffff:127.0.0.1": `write "127.0.0.1/32"`,
		"10.1.2.3":         "a private network address",
		"100.64.0.1":       "carrier-grade NAT",
		"169.254.169.254":  "cloud metadata",
		"fd00:ec2::254":    "cloud metadata",
		"168.63.129.16":    "cloud metadata",
		"64:ff9b::7f00:1":  "loopback address (this machine) (127.0.0.1, inside 64:ff9b::7f00:1)",
		"224.0.0.1":        "multicast",
		"127.1":            "canonical form",
		"0x7f.1":           "canonical form",
		"*.0.0.1":          "canonical form",
		// Wildcards over a public suffix.
		"*.co.uk":     `"co.uk" is a public suffix`,
		"*.com.au":    `"com.au" is a public suffix`,
		"*.github.io": `"github.io" is a public suffix run by a hosting provider`,
		// Bad CIDR entries.
		"0.0.0.0/0":           "too broad",
		"::/0":                "too broad",
		"10.0.0.0/7":          "too broad",
		"0.0.0.0/8":           "contains the unspecified address",
		"0.0.0.0/32":          "contains the unspecified address",
		"::/96":               "contains the unspecified address",
		"10.1.2.3/8":          `write "10.0.0.0/8"`,
		"::ffff:10.0.0.0/104": "IPv4 form",
		"10.0.0.0/8:0":        "port",
		"10.0.0.0/33":         "is not a host or a CIDR",
		"[fd00::/8":           "unclosed",
		"[fd00::/8]8443":      "expected",
	}
	for entry, want := range bad {
		_, ps := parseAllowlist([]string{entry})
		if len(ps) != 1 || !strings.Contains(ps[0], want) {
			t.Errorf("entry %q: problems %v, want one containing %q", entry, ps, want)
		}
	}
}
