package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// http_fetch limits.
const (
	defaultFetchMaxBytes = 1 << 20
	maxFetchMaxBytes     = 64 << 20
	defaultFetchTimeout  = 10 * time.Second
	maxRedirects         = 5
	maxHeaderValueLen    = 8192
)

// refusedHeaders are request headers a model may not set: the transport owns
// them (framing, connection management, compression it decodes itself), or
// they would speak to a proxy, or (Host) they would send the request to a
// name other than the one the allowlist checked.
//
// Authorization and Cookie are allowed, so a model can call an API with a
// credential the user gave it; the HTTP client drops both when a redirect
// leaves the original host and its subdomains.
var refusedHeaders = map[string]string{
	"Host":              "the host is the URL's; put a different host in the URL instead",
	"Content-Length":    "the client sets the framing itself",
	"Transfer-Encoding": "the client sets the framing itself",
	"Te":                "the client manages transfer codings itself",
	"Trailer":           "the client sets the framing itself",
	"Connection":        "the client manages connections itself",
	"Keep-Alive":        "the client manages connections itself",
	"Upgrade":           "protocol upgrades are not supported",
	"Expect":            "requests have no body",
	"Accept-Encoding":   "the client negotiates compression and decodes the body itself",
	"Proxy-Connection":  "requests never go through a proxy",
}

const httpFetchSchema = `{
  "type": "object",
  "properties": {
    "url": {
      "type": "string",
      "minLength": 1,
      "maxLength": 8192,
      "description": "The absolute http:// or https:// URL to fetch, e.g. \"https://api.example.com/v1/items?limit=10\". Its host must be one of the allowed hosts listed in the tool description."
    },
    "method": {
      "type": "string",
      "enum": ["GET", "HEAD"],
      "default": "GET",
      "description": "GET (the default) returns the body; HEAD returns the status and headers only, to check that a URL exists or how large it is."
    },
    "headers": {
      "type": "object",
      "maxProperties": 32,
      "additionalProperties": {"type": "string", "maxLength": 8192},
      "description": "Extra request headers, name to value, e.g. {\"Accept\": \"application/json\"}. Host, Content-Length, Transfer-Encoding, TE, Trailer, Connection, Keep-Alive, Upgrade, Expect, Accept-Encoding and Proxy-* headers are refused."
    }
  },
  "required": ["url"],
  "additionalProperties": false
}`

// fetcher is http_fetch, configured.
type fetcher struct {
	allow    allowlist
	maxBytes int64
	timeout  time.Duration
	client   *http.Client
	// dialer makes every connection the client opens; its Control hook
	// checks each address. Tests point its Resolver at a DNS server they
	// run, so the addresses a name resolves to are theirs to choose.
	dialer *net.Dialer
}

// newFetcher checks o and builds the fetcher, reporting every problem.
func newFetcher(o HTTPFetchOptions) (*fetcher, []string) {
	f := &fetcher{maxBytes: o.MaxBytes, timeout: time.Duration(o.Timeout)}
	var problems []string
	if len(o.AllowedHosts) == 0 {
		problems = append(problems, `http_fetch.allow_hosts is empty: http_fetch is enabled, and a model may only fetch from the hosts listed there, such as ["api.example.com"]`)
	}
	var ps []string
	f.allow, ps = parseAllowlist(o.AllowedHosts)
	problems = append(problems, ps...)
	switch {
	case o.MaxBytes < 0:
		problems = append(problems, fmt.Sprintf("http_fetch.max_bytes is %d: it must be positive, or 0 for the default of %d", o.MaxBytes, defaultFetchMaxBytes))
	case o.MaxBytes > maxFetchMaxBytes:
		problems = append(problems, fmt.Sprintf("http_fetch.max_bytes is %d: the most allowed is %d (64 MiB), since the body is handed to a model", o.MaxBytes, maxFetchMaxBytes))
	case o.MaxBytes == 0:
		f.maxBytes = defaultFetchMaxBytes
	}
	switch {
	case o.Timeout < 0:
		problems = append(problems, fmt.Sprintf("http_fetch.timeout is %s: it must be positive, or 0 for the default of %s", o.Timeout, defaultFetchTimeout))
	case o.Timeout == 0:
		f.timeout = defaultFetchTimeout
	}
	if len(problems) > 0 {
		return nil, problems
	}
	// A client of its own: no proxy from the environment (HTTP_PROXY and
	// friends are ignored, so the allowlist judges the real destination, the
	// address check sees the address actually reached, and nothing is sent
	// to a proxy the configuration does not show), no cookie jar, every
	// redirect checked against the allowlist, and every connection's
	// address checked by the dialer once DNS has answered.
	f.dialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: f.allow.dialControl}
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            f.dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           16,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
	f.client = &http.Client{Transport: transport, CheckRedirect: f.checkRedirect}
	return f, nil
}

func (f *fetcher) description() string {
	return `Fetch a URL over HTTP or HTTPS and return the final URL (after redirects), the status code, a few response headers (content-type, content-length, last-modified, etag) and the body. ` +
		`Use it to read a web page, a document or a JSON API response that you need and do not already have; use method HEAD to check a URL without downloading it. ` +
		`Only these hosts can be fetched: ` + f.allow.describe() + ` (an entry without a port allows the default port only; "*.domain" allows its subdomains; an address range such as "10.0.0.0/8" allows URLs whose host is an IP address in it). Do not try other hosts: they are refused. ` +
		`A host that resolves to a loopback, private, link-local or cloud metadata address is refused too, unless the list names that range. ` +
		fmt.Sprintf(`Redirects are followed up to %d times and only to allowed hosts. `, maxRedirects) +
		fmt.Sprintf(`At most %d bytes of body are returned; a longer body is cut and "truncated" is true. `, f.maxBytes) +
		`Text bodies are returned as text; a binary body (not UTF-8) is base64 with "encoding": "base64". ` +
		`A 4xx or 5xx status is a normal result to read, not a failure. ` +
		fmt.Sprintf(`A fetch is stopped after %s.`, f.timeout)
}

func (f *fetcher) tool() sdk.Tool {
	return sdk.Func("http_fetch", f.description(), json.RawMessage(httpFetchSchema), f.fetch)
}

// redirectError is a redirect CheckRedirect refused.
type redirectError struct {
	target string
	reason string
}

func (e *redirectError) Error() string {
	return fmt.Sprintf("redirect to %s refused: %s", e.target, e.reason)
}

func (f *fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return &redirectError{target: req.URL.String(), reason: fmt.Sprintf("stopped after %d redirects; fetch the final URL directly if it is on an allowed host", maxRedirects)}
	}
	if err := f.checkURL(req.URL); err != nil {
		return &redirectError{target: req.URL.String(), reason: err.Error()}
	}
	return nil
}

// checkURL says why u may not be fetched, or returns nil.
func (f *fetcher) checkURL(u *url.URL) error {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		if u.Scheme == "" {
			return errors.New(`the URL has no scheme: pass an absolute URL starting with "https://" or "http://"`)
		}
		return fmt.Errorf("scheme %q is not supported: only http and https URLs can be fetched", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return errors.New(`the URL has no host: pass an absolute URL such as "https://api.example.com/path"`)
	case u.User != nil:
		return errors.New(`URLs with credentials ("user:password@host") are refused: pass a credential the user gave you in an "Authorization" header instead`)
	}
	if err := f.allow.check(u); err != nil {
		return err
	}
	// An address literal is checked now, for a clear message before any
	// connection; names are checked when their addresses are known.
	if addr, err := netip.ParseAddr(u.Hostname()); err == nil {
		port := u.Port()
		if port == "" {
			port = defaultPort(u.Scheme)
		}
		if ap, err := netip.ParseAddrPort(net.JoinHostPort(addr.String(), port)); err == nil {
			return f.allow.checkAddr(ap)
		}
	}
	return nil
}

type fetchArgs struct {
	URL     *string           `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
}

type fetchResult struct {
	URL       string            `json:"url"`
	Status    int               `json:"status"`
	Headers   map[string]string `json:"headers"`
	Body      string            `json:"body"`
	Encoding  string            `json:"encoding,omitempty"`
	Truncated bool              `json:"truncated"`
}

// keptHeaders are the response headers returned to the model: enough to
// interpret the body and to tell versions apart, without cookies or server
// internals.
var keptHeaders = []string{"Content-Type", "Content-Length", "Last-Modified", "ETag"}

func (f *fetcher) fetch(ctx context.Context, raw json.RawMessage) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var args fetchArgs
	if err := decodeArgs(raw, &args); err != nil {
		return nil, err
	}
	if args.URL == nil || strings.TrimSpace(*args.URL) == "" {
		return nil, errors.New(`missing "url": pass the absolute URL to fetch, e.g. {"url": "https://api.example.com/items"}`)
	}
	method := args.Method
	switch method {
	case "":
		method = http.MethodGet
	case http.MethodGet, http.MethodHead:
	default:
		return nil, fmt.Errorf(`method %q is not supported: use "GET" (the default) or "HEAD"`, args.Method)
	}
	rawURL := strings.TrimSpace(*args.URL)
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%q is not a valid URL: %v", rawURL, unwrapURLError(err))
	}
	if err := f.checkURL(u); err != nil {
		return nil, fmt.Errorf("cannot fetch %s: %w", rawURL, err)
	}
	header, err := requestHeader(args.Headers)
	if err != nil {
		return nil, err
	}

	fctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(fctx, method, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("cannot fetch %s: %v", rawURL, err)
	}
	req.Header = header
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, f.failure(ctx, fctx, method, rawURL, req.URL.String(), err)
	}
	defer resp.Body.Close()

	var body []byte
	if method != http.MethodHead {
		body, err = io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
		if err != nil {
			return nil, f.failure(ctx, fctx, method, rawURL, req.URL.String(), fmt.Errorf("reading the body: %w", err))
		}
	}
	truncated := int64(len(body)) > f.maxBytes
	if truncated {
		body = body[:f.maxBytes]
	}
	text, encoding := encodeContent(body, truncated)
	headers := map[string]string{}
	for _, h := range keptHeaders {
		if v := resp.Header.Get(h); v != "" {
			headers[strings.ToLower(h)] = v
		}
	}
	return fetchResult{
		URL:       resp.Request.URL.String(),
		Status:    resp.StatusCode,
		Headers:   headers,
		Body:      text,
		Encoding:  encoding,
		Truncated: truncated,
	}, nil
}

// failure turns a failed fetch into a message saying what happened and what
// to do: the call was cancelled, the fetch timed out, a redirect was refused,
// or the request failed.
//
// reqURL is the first request's URL, to tell a refused redirect target from
// a refused first address.
func (f *fetcher) failure(ctx, fctx context.Context, method, rawURL, reqURL string, err error) error {
	var (
		re *redirectError
		ae *addrError
		ue *url.Error
	)
	switch {
	case errors.As(err, &re):
		return fmt.Errorf("%s %s: %v", method, rawURL, re)
	case errors.As(err, &ae) && errors.As(err, &ue) && ue.URL != reqURL:
		return fmt.Errorf("%s %s: redirect to %s refused: %v", method, rawURL, ue.URL, ae)
	case errors.As(err, &ae):
		return fmt.Errorf("%s %s refused: %v", method, rawURL, ae)
	case ctx.Err() != nil:
		return fmt.Errorf("%s %s was cancelled before it completed (%v)", method, rawURL, context.Cause(ctx))
	case errors.Is(fctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s %s timed out after %s (the limit for one fetch, redirects and body included): the server is slow or unreachable; try again later, or fetch a smaller resource", method, rawURL, f.timeout)
	}
	return fmt.Errorf("%s %s failed: %v", method, rawURL, unwrapURLError(err))
}

// unwrapURLError drops *url.Error's "Get "url": " prefix, which repeats what
// the messages above already say.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// requestHeader checks the model's headers and builds the request's.
func requestHeader(in map[string]string) (http.Header, error) {
	h := http.Header{}
	seen := map[string]string{}
	for name, value := range in {
		if !validHeaderName(name) {
			return nil, fmt.Errorf("header name %q is not valid: use letters, digits and '-', such as \"Accept\"", name)
		}
		key := http.CanonicalHeaderKey(name)
		if why, refused := refusedHeaders[key]; refused {
			return nil, fmt.Errorf("header %q is not allowed: %s; remove it", name, why)
		}
		if strings.HasPrefix(key, "Proxy-") {
			return nil, fmt.Errorf("header %q is not allowed: requests never go through a proxy; remove it", name)
		}
		if other, dup := seen[key]; dup {
			return nil, fmt.Errorf("headers %q and %q are the same header (names ignore case): pass it once", other, name)
		}
		seen[key] = name
		if len(value) > maxHeaderValueLen {
			return nil, fmt.Errorf("header %q is %d bytes long; the limit is %d", name, len(value), maxHeaderValueLen)
		}
		if strings.ContainsFunc(value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return nil, fmt.Errorf("header %q contains a control character (a line break, NUL, ...), which a header value cannot hold", name)
		}
		h.Set(key, value)
	}
	if h.Get("User-Agent") == "" {
		h.Set("User-Agent", "tenxgraph-http_fetch/"+Version)
	}
	return h, nil
}

// validHeaderName reports whether name is an HTTP token (RFC 9110).
func validHeaderName(name string) bool {
	if name == "" || len(name) > 256 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
