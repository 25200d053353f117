package media_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/media"
)

// tlsServer serves png at /img, a redirect to target at /redirect, a
// body of n bytes at /big, and counts its requests.
func tlsServer(t *testing.T, target *string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	img := pngOf(4, 4)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/img":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(img)
		case "/redirect":
			http.Redirect(w, r, *target, http.StatusFound)
		case "/big":
			_, _ = w.Write(make([]byte, 5000))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func pool(srv *httptest.Server) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(srv.Certificate())
	return p
}

// A url is fetched over https from a host the policy allows; loopback
// (this test's server) only because its range is listed.
func TestFetchAllowed(t *testing.T) {
	target := ""
	srv, _ := tlsServer(t, &target)
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	c, err := media.New(media.Policy{FetchHosts: []string{"127.0.0.1/32:" + port}, RootCAs: pool(srv)})
	if err != nil {
		t.Fatal(err)
	}
	data, typ, err := c.Fetch(context.Background(), srv.URL+"/img", 1<<20)
	if err != nil || typ != "image/png" || media.Sniff(data) != "image/png" {
		t.Fatalf("Fetch = %d bytes %q, %v", len(data), typ, err)
	}
	if _, _, err := c.Fetch(context.Background(), srv.URL+"/big", 4999); !errors.Is(err, media.ErrTooLarge) {
		t.Fatalf("a body over the limit: %v", err)
	}
	if _, _, err := c.Fetch(context.Background(), srv.URL+"/missing", 1<<20); !errors.Is(err, media.ErrRefused) || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a 404: %v", err)
	}
}

// Every way to a loopback, private or metadata address is refused, before
// any connection when the url says the address, at the connection when a
// name resolves there or a redirect leads there; so are http, other
// hosts than the listed ones, and credentials.
func TestFetchRefused(t *testing.T) {
	target := ""
	srv, hits := tlsServer(t, &target)
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	public, err := media.New(media.Policy{RootCAs: pool(srv)}) // the default: any public host
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for u, says := range map[string]string{
		srv.URL + "/img":                           "a loopback address",
		"https://localhost:" + port + "/img":       "a loopback address",
		"https://[::ffff:127.0.0.1]:" + port + "/": "a loopback address",
		"https://169.254.169.254/latest/meta-data": "a cloud metadata service address",
		"https://10.1.2.3/x.png":                   "a private network address",
		"https://[fd00::1]/x.png":                  "a private network address",
		"http://example.com/x.png":                 `only https urls are fetched, not "http:"`,
		"ftp://example.com/x.png":                  "only https urls",
		"https://user:pw@example.com/x.png":        "credentials",
		"/v1/threads/t/blobs/x":                    "only https urls",
	} {
		if _, _, err := public.Fetch(ctx, u, 1<<20); !errors.Is(err, media.ErrRefused) || !strings.Contains(err.Error(), says) {
			t.Errorf("Fetch(%s) = %v; want refused saying %q", u, err, says)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback server was reached %d times", n)
	}

	// Allowed to reach the test server, but not where it redirects.
	listed, err := media.New(media.Policy{FetchHosts: []string{"127.0.0.1/32:" + port}, RootCAs: pool(srv)})
	if err != nil {
		t.Fatal(err)
	}
	for redirect, says := range map[string]string{
		"http://127.0.0.1:" + port + "/img":        `only https urls are fetched, not "http:"`,
		"https://127.0.0.2:" + port + "/img":       `host "127.0.0.2" is not in media.fetch.allow_hosts`,
		"https://127.0.0.1:1/img":                  "port 1 of host",
		"https://169.254.169.254/latest/meta-data": "is not in media.fetch.allow_hosts",
	} {
		target = redirect
		if _, _, err := listed.Fetch(ctx, srv.URL+"/redirect", 1<<20); !errors.Is(err, media.ErrRefused) || !strings.Contains(err.Error(), says) {
			t.Errorf("redirect to %s: %v; want refused saying %q", redirect, err, says)
		}
	}
	if _, _, err := listed.Fetch(ctx, "https://example.com/x.png", 1<<20); !errors.Is(err, media.ErrRefused) || !strings.Contains(err.Error(), `host "example.com" is not in media.fetch.allow_hosts`) {
		t.Errorf("a host not listed: %v", err)
	}
	none, err := media.New(media.Policy{FetchHosts: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := none.Fetch(ctx, "https://example.com/x.png", 1<<20); !errors.Is(err, media.ErrRefused) || !strings.Contains(err.Error(), "fetches no urls") {
		t.Errorf("with an empty list: %v", err)
	}
}
