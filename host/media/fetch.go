package media

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/tenxgraph/tenxgraph/internal/hostallow"
)

// maxRedirects bounds the redirects of one fetch, as http_fetch's.
const maxRedirects = 5

// fetcher gets a url source's bytes under http_fetch's address rules
// (internal/hostallow): https only, a listed host when the policy lists
// any, and at every connection (after DNS, on every redirect) an address
// that is public or in a listed CIDR range, so a url cannot reach the
// host's own services, its network or a cloud's metadata service by a
// name, a redirect or a DNS answer that changes.
type fetcher struct {
	rules   []hostallow.Rule
	listed  bool // the policy lists hosts: only those are fetched
	none    bool // the policy lists none: nothing is fetched
	timeout time.Duration
	client  *http.Client
}

func newFetcher(p Policy) (*fetcher, error) {
	f := &fetcher{timeout: p.FetchTimeout, listed: p.FetchHosts != nil, none: p.FetchHosts != nil && len(p.FetchHosts) == 0}
	if f.timeout == 0 {
		f.timeout = DefaultFetchTimeout
	}
	var errs []error
	for i, e := range p.FetchHosts {
		r, err := hostallow.Parse(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("fetch hosts[%d]: %w", i, err))
			continue
		}
		f.rules = append(f.rules, r)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// A client of its own: no proxy from the environment (the rules judge
	// the real destination), no cookies, every redirect checked, every
	// connection's address checked by the dialer.
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: f.dialControl}
	f.client = &http.Client{
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            dialer.DialContext,
			TLSClientConfig:        &tls.Config{RootCAs: p.RootCAs, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:      true,
			MaxIdleConns:           8,
			IdleConnTimeout:        30 * time.Second,
			TLSHandshakeTimeout:    10 * time.Second,
			MaxResponseHeaderBytes: 64 << 10,
			DisableCompression:     true, // the bytes as served: a size limit on what is read is a limit on what is stored
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return refused("stopped after %d redirects", maxRedirects)
			}
			if err := f.checkURL(req.URL); err != nil {
				var me *mediaError
				if errors.As(err, &me) {
					return &mediaError{kind: me.kind, msg: "redirect to " + req.URL.Redacted() + ": " + me.msg}
				}
				return err
			}
			return nil
		},
	}
	return f, nil
}

// checkURL says why u may not be fetched, or returns nil.
func (f *fetcher) checkURL(u *url.URL) error {
	switch {
	case f.none:
		return refused("this server fetches no urls (media.fetch.allow_hosts is empty): send the bytes as data")
	case u.Scheme != "https":
		return refused("only https urls are fetched, not %q", u.Scheme+":")
	case u.Hostname() == "":
		return refused("the url has no host")
	case u.User != nil:
		return refused("urls with credentials (user:password@host) are refused")
	}
	if f.listed {
		match, listed, port, err := hostallow.MatchURL(f.rules, u)
		switch {
		case err != nil:
			return refused("%v", err)
		case listed && !match:
			return refused("port %s of host %q is not allowed (media.fetch.allow_hosts lists it for other ports)", port, u.Hostname())
		case !match:
			return refused("host %q is not in media.fetch.allow_hosts", u.Hostname())
		}
	}
	// An address literal is judged now, for a clear message before any
	// connection; names are judged when their addresses are known.
	if addr, err := netip.ParseAddr(u.Hostname()); err == nil {
		port := u.Port()
		if port == "" {
			port = "443"
		}
		if n, err := strconv.Atoi(port); err == nil && n > 0 && n < 65536 {
			return f.checkAddr(netip.AddrPortFrom(addr, uint16(n)))
		}
	}
	return nil
}

// checkAddr says why a connection to ap may not be made, or returns nil.
func (f *fetcher) checkAddr(ap netip.AddrPort) error {
	if what := hostallow.RefuseAddr(f.rules, ap); what != "" {
		return refused("address %s is %s, which media urls do not reach (media.fetch.allow_hosts may open its range as a CIDR)", netip.AddrPortFrom(ap.Addr().WithZone(""), ap.Port()), what)
	}
	return nil
}

// dialControl checks every connection's address before it is made.
func (f *fetcher) dialControl(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refused("connecting to %q (%s): not an IP address and port", address, network)
	}
	return f.checkAddr(ap)
}

// Fetch gets the bytes at rawURL, at most max of them, and the type the
// server says they are (for a caller's information only: Inspect judges
// the bytes). Every refusal wraps ErrRefused, a body over max ErrTooLarge.
func (c *Checker) Fetch(ctx context.Context, rawURL string, max int64) ([]byte, string, error) {
	f := c.fetch
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, "", refused("%q is not a url", rawURL)
	}
	if err := f.checkURL(u); err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", refused("%v", err)
	}
	req.Header.Set("Accept", "*/*")
	resp, err := f.client.Do(req)
	if err != nil {
		// A refusal (of an address at the dial, of a redirect) as it was
		// said, without the client's wrapping.
		var me *mediaError
		if errors.As(err, &me) {
			return nil, "", me
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, "", refused("fetching %s took longer than %s", u.Redacted(), f.timeout)
		}
		return nil, "", refused("fetching %s failed: %v", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", refused("fetching %s: the server answered %s", u.Redacted(), resp.Status)
	}
	if resp.ContentLength > max {
		return nil, "", tooLarge("%s is %d bytes, more than the %d allowed", u.Redacted(), resp.ContentLength, max)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	switch {
	case err != nil:
		return nil, "", refused("reading %s: %v", u.Redacted(), err)
	case int64(len(data)) > max:
		return nil, "", tooLarge("%s is more than the %d bytes allowed", u.Redacted(), max)
	}
	return data, resp.Header.Get("Content-Type"), nil
}

func jsonValid(data []byte) bool { return json.Valid(data) }
