package model

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tenxgraph/tenxgraph/host/telemetry"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
)

// CheckBaseURL reports what is wrong with a provider's base URL: it must be
// an http:// or https:// URL with a host.
func CheckBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("want an http:// or https:// URL")
	}
	if u.Host == "" {
		return errors.New("no host")
	}
	return nil
}

// IsLocal reports whether base names a server on this machine or a private
// network, where model servers (Ollama, llama.cpp, vLLM, LM Studio) run
// without keys: a loopback, private, link-local or unspecified address,
// localhost, a single-label host name such as a Compose service, or a name
// under .localhost, .local or .internal. Providers require a key for any
// other host, so a key never goes missing silently.
func IsLocal(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified()
	}
	if host == "localhost" || !strings.Contains(host, ".") {
		return true
	}
	for _, suffix := range []string{".localhost", ".local", ".internal"} {
		if strings.HasSuffix(host, suffix) {
			return true
		}
	}
	return false
}

// defaultResponseHeaderTimeout is what the model SDKs' own default clients
// use: a server that accepts the connection and never answers fails
// instead of hanging forever, without bounding long streams.
const defaultResponseHeaderTimeout = 10 * time.Minute

// MaxIdleConnsPerHost is how many idle connections DefaultTransport keeps
// to the model server, sized for the model calls a busy host has in flight
// at once (one per run). net/http's default of 2 made every call beyond the
// second open a new connection under concurrency, and left the closed ones
// in TIME-WAIT: against a hosted model, a TLS handshake per call. Idle
// connections are closed after the transport's IdleConnTimeout (90 s).
const MaxIdleConnsPerHost = 256

// DefaultTransport is the transport of a provider whose config brings no
// HTTP client: a clone of http.DefaultTransport (proxy from the
// environment, dial and TLS timeouts), speaking HTTP/2 to a TLS server that
// offers it and keeping enough idle connections that concurrent calls
// reuse them. Each call returns a transport of its own.
func DefaultTransport() http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t = t.Clone()
	t.ResponseHeaderTimeout = defaultResponseHeaderTimeout
	t.ForceAttemptHTTP2 = true
	t.MaxIdleConns = max(t.MaxIdleConns, MaxIdleConnsPerHost)
	t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	if telemetry.Enabled() {
		// Each request carries the run's traceparent to the model
		// server and is a span of its own under the call's.
		return otelhttp.NewTransport(t)
	}
	return t
}
