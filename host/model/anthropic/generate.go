package anthropic

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	anth "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/tenxgraph/tenxgraph/host/model"
)

// Generate implements model.ChatModel: it streams when req.OnDelta is set
// (or max_tokens is too large for one plain answer) and makes one plain
// request otherwise.
func (m *Model) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	body, err := m.request(ctx, req)
	if err != nil {
		return model.Response{}, err
	}
	ctx, attempts := model.CountAttempts(ctx)
	resp, err := m.call(ctx, body, streams(req, m.maxTokens), req.OnDelta)
	if err != nil {
		return model.Response{}, m.explain(ctx, err, int(attempts.Load()))
	}
	return resp, nil
}

// attempt is the SDK middleware around every HTTP attempt (model.Attempt):
// a streamed answer is peeked at for an error sent as its first event,
// error answers get the shape the SDK reads, and the retries end when the
// server asks for too long a wait.
func (m *Model) attempt(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	return model.Attempt(req, next, m.timeout, func(res *http.Response) {
		if res.StatusCode < 300 {
			peekStream(res)
		}
		if res.StatusCode >= 400 {
			normaliseError(res)
			if wait, ok := retryAfter(res.Header); ok && wait > maxRetryAfter {
				res.Header.Set("x-should-retry", "false")
			}
		}
	})
}

// peekMax bounds what peekStream reads ahead.
const peekMax = 64 << 10

// peekStream reads a streamed answer up to its first content delta. An
// error event before it (Anthropic's servers answer 200 and then send
// overloaded_error as an event when they are busy) means nothing has been
// said, so the answer becomes the error status the event stands for, and
// the SDK's retry loop retries it like any other: one retry mechanism,
// one count of attempts. Whatever was read is handed on unchanged
// otherwise.
func peekStream(res *http.Response) {
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt != "text/event-stream" {
		return
	}
	br := bufio.NewReaderSize(res.Body, 4096)
	var seen bytes.Buffer
	var name string
	var data bytes.Buffer
	for seen.Len() < peekMax {
		line, err := br.ReadSlice('\n')
		seen.Write(line)
		if err != nil {
			break // a long line, the end or a broken stream: the reader will say
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 {
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "event":
				name = string(value)
			case "data":
				data.Write(value)
			}
			continue
		}
		if name == "" && data.Len() > 0 {
			var probe struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(data.Bytes(), &probe)
			name = probe.Type
		}
		switch name {
		case "content_block_delta", "message_delta", "message_stop":
			res.Body = &replayBody{Reader: io.MultiReader(bytes.NewReader(seen.Bytes()), br), Closer: res.Body}
			return
		case "error":
			var ev struct {
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			_ = json.Unmarshal(data.Bytes(), &ev)
			status := map[string]int{"overloaded_error": statusOverloaded, "api_error": http.StatusInternalServerError, "rate_limit_error": http.StatusTooManyRequests}[ev.Error.Type]
			if status == 0 {
				break
			}
			body, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": ev.Error.Type,
				"message": strings.TrimRight(ev.Error.Message, ". ") + " (an error event before the answer began)"}})
			_ = res.Body.Close()
			res.StatusCode, res.Status = status, fmt.Sprintf("%d %s", status, errorType(status))
			res.Header.Set("Content-Type", "application/json")
			res.Body, res.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			return
		}
		name = ""
		data.Reset()
	}
	res.Body = &replayBody{Reader: io.MultiReader(bytes.NewReader(seen.Bytes()), br), Closer: res.Body}
}

// replayBody is a body whose start was read ahead: what was read, then the
// rest.
type replayBody struct {
	io.Reader
	io.Closer
}

// retryAfter is the wait the server asks for, as the SDK reads it:
// retry-after-ms, else retry-after in seconds or as an HTTP date.
func retryAfter(h http.Header) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil {
			return time.Duration(s * float64(time.Second)), true
		}
		if t, err := time.Parse(time.RFC1123, v); err == nil {
			return time.Until(t), true
		}
	}
	return 0, false
}

// normaliseError rewrites an error answer into Anthropic's shape,
// {"type": "error", "error": {"type": ..., "message": ...}}, which is the
// one the SDK reads: proxies and compatible servers also answer
// {"error": "text"}, {"message": ...}, {"detail": ...}, OpenAI's
// {"error": {"message": ...}} or an HTML page, and the message would be
// lost.
func normaliseError(res *http.Response) {
	data, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	_ = res.Body.Close()
	var probe struct {
		Error struct {
			Message *string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &probe) != nil || probe.Error.Message == nil {
		data, _ = json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": errorType(res.StatusCode), "message": errorMessage(data)}})
	}
	res.Body = io.NopCloser(bytes.NewReader(data))
	res.ContentLength = int64(len(data))
}

// errorType is the Anthropic error type of a status, for answers that
// carry none.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case statusOverloaded:
		return "overloaded_error"
	}
	return "api_error"
}

// statusOverloaded is the status Anthropic answers with when its servers
// are overloaded (retried, like a 5xx).
const statusOverloaded = 529

// explain turns a failed call into an error that says what happened and,
// where it helps, what to change.
func (m *Model) explain(ctx context.Context, err error, attempts int) error {
	if ctx.Err() != nil {
		return fmt.Errorf("anthropic: %w", context.Cause(ctx))
	}
	tries := model.Tries(attempts)
	var apiErr *anth.Error
	if errors.As(err, &apiErr) {
		msg := apiMessage(apiErr)
		if h := m.hint(apiErr.StatusCode, msg); h != "" {
			msg = strings.TrimRight(msg, ". ") + h
		}
		status := http.StatusText(apiErr.StatusCode)
		if apiErr.StatusCode == statusOverloaded {
			status = "Overloaded"
		}
		return fmt.Errorf("anthropic: %s answered %d %s%s: %s", m.baseURL, apiErr.StatusCode, status, tries, msg)
	}
	var se *streamError
	if errors.As(err, &se) {
		return fmt.Errorf("anthropic: %s: %w", m.baseURL, err)
	}
	var pe *protocolError
	if errors.As(err, &pe) {
		return fmt.Errorf("anthropic: %s: %w", m.baseURL, err)
	}
	return model.ExplainTransport("anthropic", m.baseURL, m.timeout, tries, err)
}

// apiMessage is the server's own words for an error status.
func apiMessage(e *anth.Error) string {
	if msg := strings.TrimSpace(e.Message); msg != "" {
		return msg
	}
	if raw := strings.TrimSpace(e.RawJSON()); raw != "" && raw != "{}" {
		return snippet([]byte(raw))
	}
	return "(no message)"
}

func (m *Model) hint(status int, msg string) string {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		env := m.apiKeyEnv
		if env == "" {
			env = model.DefaultAnthropicAPIKeyEnv
		}
		if !m.hasKey {
			return fmt.Sprintf(". No API key was sent: set %s (model.api_key_env names the variable)", env)
		}
		return fmt.Sprintf(". Check the key in %s", env)
	case http.StatusNotFound:
		return fmt.Sprintf(". Check the model name (%q) and that base_url is the API root, without /v1", m.name)
	case http.StatusBadRequest:
		if strings.Contains(msg, "max_tokens") {
			return fmt.Sprintf(". tenxgraph sent max_tokens %d: set model.max_tokens to what the model allows", m.maxTokens)
		}
		if strings.Contains(msg, "thinking") {
			return ". tenxgraph keeps no thinking blocks in the thread, so a model that must get its thinking back with its tool results cannot run tools here yet: use a model that does not think unless asked"
		}
	case http.StatusRequestEntityTooLarge:
		return ". The thread is larger than the API takes in one request"
	case http.StatusTooManyRequests:
		return ". The API is rate limiting this key; model.max_retries and the server's retry-after decide how long tenxgraph waits"
	case statusOverloaded:
		return ". Anthropic's servers are overloaded; try again later (model.max_retries sets how often tenxgraph retries)"
	}
	return ""
}
