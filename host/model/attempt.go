package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"
)

type attemptsKey struct{}

// CountAttempts returns ctx carrying a count of the HTTP attempts that
// Attempt makes under it, so a provider's error can say how often a call
// was tried ("after 3 attempts").
func CountAttempts(ctx context.Context) (context.Context, *atomic.Int32) {
	n := new(atomic.Int32)
	return context.WithValue(ctx, attemptsKey{}, n), n
}

// Attempt is the body of a provider SDK's middleware around every HTTP
// attempt, one for both SDKs: it counts the attempt (CountAttempts), sends
// the body in one write, and bounds the attempt alone by timeout (0: no
// bound). The SDKs' own per-attempt timeout also covers the wait before
// the next retry, so a slow failure followed by a Retry-After wait ended in
// a bare "context deadline exceeded". The bound lasts until the answer's
// body is closed, so it covers a whole stream.
//
// inspect sees every answer first (the provider puts error answers in the
// shape its SDK reads, or turns an error sent as an event into its
// status). An answer that is an error after it must be in memory: its
// bound ends there.
func Attempt(req *http.Request, next func(*http.Request) (*http.Response, error), timeout time.Duration, inspect func(*http.Response)) (*http.Response, error) {
	if n, ok := req.Context().Value(attemptsKey{}).(*atomic.Int32); ok {
		n.Add(1)
	}
	// The SDKs wrap each attempt's body in a reader net/http cannot tell is
	// in memory, and net/http then writes the headers and the body apart:
	// two writes, two packets, and a second read for the server. The body
	// GetBody gives (the same bytes) is one it knows.
	if req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
		if body, err := req.GetBody(); err == nil {
			_ = req.Body.Close()
			req.Body = body
		}
	}
	cancel := context.CancelFunc(func() {})
	if timeout > 0 {
		var ctx context.Context
		ctx, cancel = context.WithTimeout(req.Context(), timeout)
		req = req.WithContext(ctx)
	}
	res, err := next(req)
	if err != nil || res == nil || res.Body == nil {
		cancel()
		return res, err
	}
	inspect(res)
	if res.StatusCode >= 400 {
		cancel()
		return res, nil
	}
	res.Body = &cancelOnClose{ReadCloser: res.Body, cancel: cancel}
	return res, nil
}

// cancelOnClose ends an attempt's bound when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// Tries is " (after N attempts)" for a call tried more than once, "" for
// one tried once: the words both providers' errors put after the endpoint.
func Tries(attempts int) string {
	if attempts > 1 {
		return fmt.Sprintf(" (after %d attempts)", attempts)
	}
	return ""
}

// ExplainTransport words a call that failed without an answer from the
// server, for provider (its errors' prefix) at baseURL: a timeout names
// model.timeout, a refused connection and an unknown host say what to
// check. tries is Tries' words.
func ExplainTransport(provider, baseURL string, timeout time.Duration, tries string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %s did not finish answering within %s (model.timeout)%s: %w", provider, baseURL, timeout, tries, context.DeadlineExceeded)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%s: cannot reach %s%s: connection refused; is the server running and is model.base_url right? (%w)", provider, baseURL, tries, err)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return fmt.Errorf("%s: cannot resolve the host of %s%s: %w", provider, baseURL, tries, err)
	}
	return fmt.Errorf("%s: %s%s: %w", provider, baseURL, tries, err)
}
