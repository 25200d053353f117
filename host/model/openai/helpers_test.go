package openai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"time"
)

// slowStream is a transport whose every answer is an SSE stream of text
// chunks, one every so often, that stops when the request's context ends
// (as a real connection does).
type slowStream struct {
	chunks int
	every  time.Duration
}

func (s *slowStream) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	pr, pw := io.Pipe()
	go func() {
		write := func(data string) bool {
			select {
			case <-req.Context().Done():
				pw.CloseWithError(req.Context().Err())
				return false
			case <-time.After(s.every):
			}
			_, err := fmt.Fprintf(pw, "data: %s\n\n", data)
			return err == nil
		}
		for i := 0; i < s.chunks; i++ {
			if !write(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":"%d "},"finish_reason":null}]}`, i)) {
				return
			}
		}
		if write(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`) && write("[DONE]") {
			pw.Close()
		}
	}()
	return &http.Response{
		StatusCode: http.StatusOK,
		Status:     "200 OK",
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       &ctxBody{ctx: req.Context(), r: pr},
		Request:    req,
	}, nil
}

// ctxBody fails reads once ctx ends, like a body of a real transport.
type ctxBody struct {
	ctx context.Context
	r   *io.PipeReader
}

func (b *ctxBody) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := b.r.Read(p)
		done <- result{n, err}
	}()
	select {
	case r := <-done:
		return r.n, r.err
	case <-b.ctx.Done():
		b.r.CloseWithError(b.ctx.Err())
		<-done
		return 0, b.ctx.Err()
	}
}

func (b *ctxBody) Close() error { return b.r.Close() }
