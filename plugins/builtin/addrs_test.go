package builtin

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

// countingServer is a loopback HTTP server that counts its requests and
// remembers the last Host header.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int32, *atomic.Value) {
	t.Helper()
	var hits atomic.Int32
	var host atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		host.Store(r.Host)
		fmt.Fprint(w, "internal")
	}))
	t.Cleanup(srv.Close)
	return srv, &hits, &host
}

// TestFetchRefusesNamesResolvingInside resolves allowed names, through a
// DNS server the test runs, to loopback and other internal addresses in
// every spelling: each fetch is refused before a connection is made.
func TestFetchRefusesNamesResolvingInside(t *testing.T) {
	srv, hits, gotHost := countingServer(t)
	port := portOf(t, srv)
	dns := newTestDNS(t, map[string][]netip.Addr{
		"internal.test": {netip.MustParseAddr("127.0.0.1")},
		"loop6.test":    {netip.MustParseAddr("::1")},
		"mapped.test":   {netip.MustParseAddr("::ffff:127.0.0.1")},
		"nat64.test":    {netip.MustParseAddr("64:ff9b::7f00:1")},
		"private.test":  {netip.MustParseAddr("10.0.0.1")},
		"cgnat.test":    {netip.MustParseAddr("100.64.0.1")},
		"meta.test":     {netip.MustParseAddr("169.254.169.254")},
		"meta6.test":    {netip.MustParseAddr("fd00:ec2::254")},
		"zero.test":     {netip.MustParseAddr("0.0.0.0")},
	})
	names := []struct{ name, want string }{
		{"internal.test", "address 127.0.0.1:" + port + " is a loopback address"},
		{"loop6.test", "is a loopback address"},
		{"mapped.test", "is a loopback address"},
		{"nat64.test", "(127.0.0.1, inside 64:ff9b::7f00:1)"},
		{"private.test", "is a private network address"},
		{"cgnat.test", "carrier-grade NAT"},
		{"meta.test", "cloud metadata"},
		{"meta6.test", "cloud metadata"},
		{"zero.test", "the unspecified address"},
	}
	var allow []string
	for _, n := range names {
		allow = append(allow, n.name+":"+port)
	}
	f := newTestFetcherDNS(t, HTTPFetchOptions{AllowedHosts: allow}, dns)
	for _, n := range names {
		mustFail(t, context.Background(), f, fetchArgsT{URL: "http://" + n.name + ":" + port + "/"},
			"GET http://"+n.name+":"+port+"/ refused", n.want, "allow_hosts")
		if !dns.asked(n.name) {
			t.Errorf("%s was refused without being resolved: the check must judge the resolved address", n.name)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback server was reached %d times", n)
	}

	// The legitimate case: the user allows the loopback address as a CIDR,
	// with the server's port; the same name now reaches the server. A CIDR
	// for another port does not.
	other := "127.0.0.1/32:1"
	if port == "1" {
		other = "127.0.0.1/32:2"
	}
	f = newTestFetcherDNS(t, HTTPFetchOptions{AllowedHosts: []string{"internal.test:" + port, other}}, dns)
	mustFail(t, context.Background(), f, fetchArgsT{URL: "http://internal.test:" + port + "/"}, "is a loopback address")
	f = newTestFetcherDNS(t, HTTPFetchOptions{AllowedHosts: []string{"internal.test:" + port, "mapped.test:" + port, "127.0.0.0/8:" + port}}, dns)
	for _, name := range []string{"internal.test", "mapped.test"} {
		if r := mustFetch(t, f, fetchArgsT{URL: "http://" + name + ":" + port + "/"}); r.Body != "internal" {
			t.Errorf("%s with the CIDR allowed: %+v", name, r)
		}
		if h := gotHost.Load(); h != name+":"+port {
			t.Errorf("the server saw Host %v, want %s:%s", h, name, port)
		}
	}
	if n := hits.Load(); n != 2 {
		t.Errorf("the server was reached %d times, want 2", n)
	}
}

// TestFetchRefusesRedirectsInside follows redirects from an allowed server
// to a cloud metadata address and to loopback listeners: by address
// literal, by a name that resolves there, and where a broad CIDR covers
// the metadata address without naming it.
func TestFetchRefusesRedirectsInside(t *testing.T) {
	target, targetHits, _ := countingServer(t)
	tport := portOf(t, target)
	dns := newTestDNS(t, map[string][]netip.Addr{
		"rebind.test":   {netip.MustParseAddr("127.0.0.1")},
		"metadata.test": {netip.MustParseAddr("169.254.169.254")},
	})
	to := map[string]string{
		"/meta":        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
		"/meta-mapped": "http://[::ffff:169.254.169.254]/latest/meta-data/",
		"/meta-name":   "http://metadata.test/latest/meta-data/",
		"/loop":        "http://127.0.0.1:" + tport + "/",
		"/loop-name":   "http://rebind.test:" + tport + "/",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, ok := to[r.URL.Path]; ok {
			http.Redirect(w, r, u, http.StatusFound)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	// Names are allowed, and so is the whole link-local range: neither may
	// open the metadata service or a loopback port the list does not name.
	f := newTestFetcherDNS(t, HTTPFetchOptions{AllowedHosts: []string{allowOf(t, srv), "rebind.test:" + tport, "metadata.test", "169.254.0.0/16"}}, dns)
	cases := []struct{ path, want string }{
		{"/meta", "address 169.254.169.254:80 is a cloud metadata service address"},
		{"/meta-mapped", `host "::ffff:169.254.169.254" is not allowed`},
		{"/meta-name", "address 169.254.169.254:80 is a cloud metadata service address"},
		{"/loop", `port ` + tport + ` of host "127.0.0.1" is not allowed`},
		{"/loop-name", "address 127.0.0.1:" + tport + " is a loopback address"},
	}
	for _, c := range cases {
		mustFail(t, context.Background(), f, fetchArgsT{URL: srv.URL + c.path}, "redirect to "+to[c.path]+" refused", c.want)
	}
	if n := targetHits.Load(); n != 0 {
		t.Errorf("the loopback target was reached %d times", n)
	}
	// That the link-local range and the metadata address named alone are
	// allowed is TestCheckAddr's: connecting there would reach a real
	// metadata service where the tests run in a cloud.
}

// TestFetchIgnoresProxyEnvironment checks that a proxy from the environment
// is not used: it would connect on the fetch's behalf, to an address the
// check never saw.
func TestFetchIgnoresProxyEnvironment(t *testing.T) {
	proxy, proxyHits, _ := countingServer(t)
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"} {
		t.Setenv(k, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	srv, hits, _ := countingServer(t)
	port := portOf(t, srv)
	dns := newTestDNS(t, map[string][]netip.Addr{"internal.test": {netip.MustParseAddr("127.0.0.1")}})
	f := newTestFetcherDNS(t, HTTPFetchOptions{AllowedHosts: []string{"internal.test:" + port}}, dns)
	mustFail(t, context.Background(), f, fetchArgsT{URL: "http://internal.test:" + port + "/"}, "is a loopback address")
	f = newTestFetcherDNS(t, HTTPFetchOptions{AllowedHosts: []string{"internal.test:" + port, allowOf(t, srv)}}, dns)
	mustFetch(t, f, fetchArgsT{URL: "http://internal.test:" + port + "/"})
	if p, n := proxyHits.Load(), hits.Load(); p != 0 || n != 1 {
		t.Errorf("the proxy was reached %d times and the server %d times; want 0 and 1", p, n)
	}
}

func TestClassifyAddr(t *testing.T) {
	forbidden := map[string]string{
		"127.0.0.1":              "loopback",
		"127.255.255.254":        "loopback",
		"::1":                    "loopback",
		"::ffff:127.0.0.1":       "loopback",
		"0.0.0.0":                "unspecified",
		"::":                     "unspecified",
		"0.1.2.3":                "this network",
		"10.0.0.1":               "private",
		"172.16.0.1":             "private",
		"172.31.255.255":         "private",
		"192.168.1.1":            "private",
		"fd12::1":                "private",
		"::ffff:192.168.1.1":     "private",
		"100.64.0.1":             "carrier-grade NAT",
		"100.127.255.255":        "carrier-grade NAT",
		"169.254.1.1":            "link-local",
		"fe80::1":                "link-local",
		"fe80::1%eth0":           "link-local",
		"224.0.0.1":              "multicast",
		"239.255.255.250":        "multicast",
		"ff02::1":                "multicast",
		"255.255.255.255":        "broadcast",
		"240.0.0.1":              "reserved",
		"192.0.2.1":              "documentation",
		"2001:db8::1":            "documentation",
		"198.18.0.1":             "benchmarking",
		"::127.0.0.1":            "IPv4-compatible",
		"64:ff9b::7f00:1":        "loopback",
		"64:ff9b::a9fe:a9fe":     "cloud metadata",
		"64:ff9b:1::1":           "local-use NAT64",
		"2002:7f00:1::1":         "loopback",
		"2002:a00:1::1":          "private",
		"2001:0:4136:e378::1":    "Teredo",
		"169.254.169.254":        "cloud metadata",
		"::ffff:169.254.169.254": "cloud metadata",
		"169.254.170.2":          "cloud metadata",
		"fd00:ec2::254":          "cloud metadata",
		"fd20:ce::254":           "cloud metadata",
		"100.100.100.200":        "cloud metadata",
		"168.63.129.16":          "cloud metadata",
	}
	for s, want := range forbidden {
		what, _ := classifyAddr(netip.MustParseAddr(s))
		if !strings.Contains(what, want) {
			t.Errorf("%s: %q, want it to say %q", s, what, want)
		}
	}
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "93.184.215.14", "100.63.255.255", "100.128.0.0", "172.32.0.1", "2606:4700::1111", "2a00:1450::1", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"} {
		if what, _ := classifyAddr(netip.MustParseAddr(s)); what != "" {
			t.Errorf("%s is public but classified as %q", s, what)
		}
	}
}

func TestCheckAddr(t *testing.T) {
	cases := []struct {
		entries []string
		allow   []string
		deny    []string
	}{
		{[]string{"api.example.com"}, // names open no address
			[]string{"8.8.8.8:443", "[2606:4700::1111]:80", "8.8.8.8:22"},
			[]string{"127.0.0.1:80", "10.0.0.1:443", "169.254.169.254:80"}},
		{[]string{"10.0.0.0/8"},
			[]string{"10.1.2.3:80", "10.1.2.3:443", "[::ffff:10.1.2.3]:80", "11.0.0.1:80"},
			[]string{"10.1.2.3:8080", "192.168.0.1:80", "[64:ff9b::a00:1]:80"}},
		{[]string{"10.0.0.0/8:8080"},
			[]string{"10.1.2.3:8080"},
			[]string{"10.1.2.3:80", "10.1.2.3:443"}},
		{[]string{"127.0.0.1/32:8080"},
			[]string{"127.0.0.1:8080", "[::ffff:127.0.0.1]:8080"},
			[]string{"127.0.0.2:8080", "127.0.0.1:8081", "[::1]:8080", "[64:ff9b::7f00:1]:8080"}},
		{[]string{"169.254.0.0/16", "0.0.0.0/32", "100.64.0.0/10"}, // the invalid entry is dropped by the parser
			[]string{"169.254.1.1:80", "100.64.0.1:80"},
			[]string{"169.254.169.254:80", "169.254.170.2:80", "100.100.100.200:80", "0.0.0.0:80"}},
		{[]string{"169.254.169.254/32"},
			[]string{"169.254.169.254:80"},
			[]string{"169.254.169.253:80", "169.254.169.254:8080"}},
		{[]string{"fd00::/8"},
			[]string{"[fd12::1]:443"},
			[]string{"[fd00:ec2::254]:80", "[fe80::1]:80"}},
	}
	for _, c := range cases {
		a, _ := parseAllowlist(c.entries)
		for _, s := range c.allow {
			if err := a.checkAddr(netip.MustParseAddrPort(s)); err != nil {
				t.Errorf("%v refuses %s: %v", c.entries, s, err)
			}
			if err := a.dialControl("tcp", s, nil); err != nil {
				t.Errorf("%v: dialControl refuses %s: %v", c.entries, s, err)
			}
		}
		for _, s := range c.deny {
			if err := a.checkAddr(netip.MustParseAddrPort(s)); err == nil {
				t.Errorf("%v allows %s", c.entries, s)
			}
			if err := a.dialControl("tcp", s, nil); err == nil {
				t.Errorf("%v: dialControl allows %s", c.entries, s)
			}
		}
	}
	var a allowlist
	if err := a.dialControl("tcp", "not-an-address:80", nil); err == nil {
		t.Error("dialControl allows an address it cannot parse")
	}
}
