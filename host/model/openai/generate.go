package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/tenxgraph/tenxgraph/host/model"
)

// Generate implements model.ChatModel: it streams when req.OnDelta is set
// and makes one plain request otherwise.
func (m *Model) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	params, err := m.params(ctx, req)
	if err != nil {
		return model.Response{}, err
	}
	ctx, attempts := model.CountAttempts(ctx)
	var resp model.Response
	if req.OnDelta != nil {
		resp, err = m.stream(ctx, params, req.OnDelta)
	} else {
		resp, err = m.complete(ctx, params)
	}
	if err != nil {
		return model.Response{}, m.explain(ctx, err, int(attempts.Load()))
	}
	return resp, nil
}

// attempt is the SDK middleware around every HTTP attempt (model.Attempt):
// error answers get the shape the SDK reads.
func (m *Model) attempt(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	return model.Attempt(req, next, m.timeout, func(res *http.Response) {
		if res.StatusCode >= 400 {
			normaliseError(res)
		}
	})
}

// normaliseError rewrites an error answer into OpenAI's shape,
// {"error": {"message": ...}}, which is the only one the SDK reads: servers
// also answer {"error": "text"} (Ollama's native shape), {"message": ...}
// (vLLM), {"detail": ...} (FastAPI-based servers) or an HTML page (a
// proxy), and the SDK would report those as a JSON decoding error with the
// status lost.
func normaliseError(res *http.Response) {
	data, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	_ = res.Body.Close()
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &probe) != nil || !bytes.HasPrefix(bytes.TrimSpace(probe.Error), []byte("{")) {
		data, _ = json.Marshal(map[string]map[string]string{"error": {"message": errorMessage(data)}})
	}
	res.Body = io.NopCloser(bytes.NewReader(data))
	res.ContentLength = int64(len(data))
}

// explain turns a failed call into an error that says what happened and,
// where it helps, what to change.
func (m *Model) explain(ctx context.Context, err error, attempts int) error {
	if ctx.Err() != nil {
		return fmt.Errorf("openai: %w", context.Cause(ctx))
	}
	tries := model.Tries(attempts)
	var apiErr *oai.Error
	if errors.As(err, &apiErr) {
		msg := apiMessage(apiErr)
		if h := m.hint(apiErr.StatusCode); h != "" {
			msg = strings.TrimRight(msg, ". ") + h
		}
		return fmt.Errorf("openai: %s answered %d %s%s: %s", m.baseURL, apiErr.StatusCode, http.StatusText(apiErr.StatusCode), tries, msg)
	}
	var pe *protocolError
	if errors.As(err, &pe) {
		return fmt.Errorf("openai: %s: %w", m.baseURL, err)
	}
	return model.ExplainTransport("openai", m.baseURL, m.timeout, tries, err)
}

// apiMessage is the server's own words for an error status.
func apiMessage(e *oai.Error) string {
	if msg := strings.TrimSpace(e.Message); msg != "" {
		return msg
	}
	if raw := strings.TrimSpace(e.RawJSON()); raw != "" && raw != "{}" {
		return snippet([]byte(raw))
	}
	return "(no message)"
}

func (m *Model) hint(status int) string {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		if !m.hasKey {
			env := m.apiKeyEnv
			if env == "" {
				env = model.DefaultAPIKeyEnv
			}
			return fmt.Sprintf(". No API key was sent: set %s (model.api_key_env names the variable)", env)
		}
		if m.apiKeyEnv != "" {
			return fmt.Sprintf(". Check the key in %s", m.apiKeyEnv)
		}
		return ". Check the API key"
	case http.StatusNotFound:
		return fmt.Sprintf(". Check the model name (%q) and that base_url is the API root (for most servers it ends in /v1)", m.name)
	case http.StatusTooManyRequests:
		return ". The server is rate limiting or the account is out of quota; model.max_retries and the server's Retry-After decide how long tenxgraph waits"
	}
	return ""
}
