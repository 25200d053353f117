package openai_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/model/openai"
	"github.com/tenxgraph/tenxgraph/host/model/openai/openaitest"
)

func TestFromConfigKeys(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("MY_KEY", "")

	// OpenAI itself without a key: a clear error at startup.
	_, err := openai.FromConfig(&model.Config{Provider: "openai", Model: "gpt-4o-mini", APIKeyEnv: "OPENAI_API_KEY"})
	if err == nil || !strings.Contains(err.Error(), "set the environment variable OPENAI_API_KEY") || !strings.Contains(err.Error(), "https://api.openai.com/v1") {
		t.Fatalf("error %v", err)
	}
	// Any other remote host too, naming the configured variable.
	_, err = openai.FromConfig(&model.Config{Provider: "openai", Model: "m", BaseURL: "https://api.example.com/v1", APIKeyEnv: "MY_KEY"})
	if err == nil || !strings.Contains(err.Error(), "MY_KEY") {
		t.Fatalf("error %v", err)
	}
	// A local server needs none, and none is sent.
	srv := openaitest.NewServer(t, openaitest.Text("local ok"))
	m, err := openai.FromConfig(&model.Config{Provider: "openai", Model: "llama3.2", BaseURL: srv.URL, APIKeyEnv: "OPENAI_API_KEY", MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := m.Generate(ctx, userReq("hi")); err != nil || resp.Message.Text() != "local ok" {
		t.Fatalf("%q %v", resp.Message.Text(), err)
	}
	if h := srv.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Fatalf("Authorization %q sent to a local server without a key", h)
	}
	// With the variable set, the key is sent, also to a local server.
	t.Setenv("MY_KEY", "sk-local")
	srv = openaitest.NewServer(t, openaitest.Text("keyed"))
	srv.RequireKey("sk-local")
	m, err = openai.FromConfig(&model.Config{Provider: "openai", Model: "m", BaseURL: srv.URL, APIKeyEnv: "MY_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := m.Generate(ctx, userReq("hi")); err != nil || resp.Message.Text() != "keyed" {
		t.Fatalf("%q %v", resp.Message.Text(), err)
	}
	// No variable named: OPENAI_API_KEY.
	t.Setenv("OPENAI_API_KEY", "sk-default")
	if _, err := openai.FromConfig(&model.Config{Provider: "openai", Model: "m"}); err != nil {
		t.Fatal(err)
	}
}

func TestFromConfigBaseURLPrecedence(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	fromEnv := openaitest.NewServer(t, openaitest.Text("from env"))
	fromConfig := openaitest.NewServer(t, openaitest.Text("from config"))
	t.Setenv("OPENAI_BASE_URL", fromEnv.URL)

	// No base_url: the environment variable replaces OpenAI's default.
	m, err := openai.FromConfig(&model.Config{Provider: "openai", Model: "m", APIKeyEnv: "OPENAI_API_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := m.Generate(ctx, userReq("hi")); err != nil || resp.Message.Text() != "from env" {
		t.Fatalf("%q %v", resp.Message.Text(), err)
	}
	// An explicit base_url wins over the environment.
	m, err = openai.FromConfig(&model.Config{Provider: "openai", Model: "m", BaseURL: fromConfig.URL, APIKeyEnv: "OPENAI_API_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := m.Generate(ctx, userReq("hi")); err != nil || resp.Message.Text() != "from config" {
		t.Fatalf("%q %v", resp.Message.Text(), err)
	}
	if len(fromEnv.Requests()) != 1 || len(fromConfig.Requests()) != 1 {
		t.Fatalf("requests: env server %d, config server %d", len(fromEnv.Requests()), len(fromConfig.Requests()))
	}
	// A broken variable is named.
	t.Setenv("OPENAI_BASE_URL", "localhost:11434")
	if _, err := openai.FromConfig(&model.Config{Provider: "openai", Model: "m", APIKeyEnv: "OPENAI_API_KEY"}); err == nil || !strings.Contains(err.Error(), "$OPENAI_BASE_URL") {
		t.Fatalf("error %v", err)
	}
}

func TestFromConfigTimeoutAndRetries(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	srv := openaitest.NewServer(t, openaitest.ServerError(), openaitest.Reply{Text: "late", Delay: 5 * time.Second})
	m, err := openai.FromConfig(&model.Config{Provider: "openai", Model: "m", BaseURL: srv.URL, MaxRetries: 1, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(ctx, userReq("hi"))
	if err == nil || !strings.Contains(err.Error(), "within 200ms") || !strings.Contains(err.Error(), "after 2 attempts") {
		t.Fatalf("error %v", err)
	}
}
