package config

import (
	"testing"
	"time"
)

// The anthropic provider's model section: its defaults, and every key read.
func TestAnthropicModel(t *testing.T) {
	cfg := mustParse(t, `{"agent": "a", "model": {"provider": "anthropic", "model": "claude-sonnet-4-5"}}`, "/p")
	m := cfg.Model
	if m.Provider != "anthropic" || m.Model != "claude-sonnet-4-5" || m.APIKeyEnv != DefaultAnthropicAPIKeyEnv || m.MaxTokens != DefaultMaxTokens ||
		m.BaseURL != "" || m.MaxRetries != DefaultMaxRetries {
		t.Fatalf("defaults: %+v", m)
	}
	cfg = mustParse(t, `{"agent": "a", "model": {"provider": "anthropic", "model": "m", "base_url": "http://127.0.0.1:4000",
	  "api_key_env": "PROXY_KEY", "max_tokens": 64000, "timeout": "2m", "max_retries": 5, "system_prompt": "be brief"}}`, "/p")
	m = cfg.Model
	if m.BaseURL != "http://127.0.0.1:4000" || m.APIKeyEnv != "PROXY_KEY" || m.MaxTokens != 64000 || m.Timeout != 2*time.Minute || m.MaxRetries != 5 || m.SystemPrompt != "be brief" {
		t.Fatalf("values: %+v", m)
	}
	// The openai provider keeps its own default key variable and no max_tokens.
	if m := mustParse(t, `{"agent": "a", "model": {"provider": "openai", "model": "m"}}`, "/p").Model; m.APIKeyEnv != DefaultAPIKeyEnv || m.MaxTokens != 0 {
		t.Fatalf("openai: %+v", m)
	}
}
