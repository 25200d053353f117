package model

import "time"

// Defaults the providers fill in where the config names nothing.
const (
	// DefaultAPIKeyEnv is where every OpenAI client looks for the key.
	DefaultAPIKeyEnv = "OPENAI_API_KEY"
	// DefaultAnthropicAPIKeyEnv is where Anthropic's clients look for the
	// key.
	DefaultAnthropicAPIKeyEnv = "ANTHROPIC_API_KEY"
	// DefaultMaxTokens is the anthropic provider's max_tokens when the
	// config sets none: the Messages API requires one, and every current
	// Claude model allows this much output.
	DefaultMaxTokens = 8192
)

// Config is the "model" block of 10xgraph.json, as the providers read it
// (package config checks it and fills in its defaults). It lives here, with
// the interface the providers implement, so that a provider depends on
// nothing above it.
type Config struct {
	// Provider is a registered provider's name (Register): "openai" (any
	// OpenAI-compatible endpoint: OpenAI, Ollama, vLLM, llama.cpp, LM
	// Studio), "anthropic" (Anthropic's Messages API, or a server that
	// speaks it) or "scripted" (deterministic rules from Script, for
	// demos and tests that must run offline).
	Provider string `json:"provider"`
	// Model is the model name sent to the endpoint; required for openai
	// and anthropic, where there is no sensible guess.
	Model string `json:"model"`
	// BaseURL is empty for the provider's own endpoint (OPENAI_BASE_URL
	// or ANTHROPIC_BASE_URL may override it at run time). Anthropic's is
	// the API root, without /v1.
	BaseURL string `json:"base_url"`
	// APIKeyEnv names the environment variable holding the key (default
	// OPENAI_API_KEY for openai, ANTHROPIC_API_KEY for anthropic), so the
	// key never sits in the file.
	APIKeyEnv string `json:"api_key_env"`
	// MaxTokens bounds one answer's output tokens (anthropic only, which
	// must send one: default DefaultMaxTokens).
	MaxTokens int `json:"max_tokens"`
	// Script is the scripted model's rule file (absolute).
	Script string `json:"script"`
	// SystemPrompt is prepended to every conversation; empty for none.
	SystemPrompt string `json:"system_prompt"`
	// MaxSteps bounds model calls per run (default 25), so a model that
	// loops on tools ends with an error instead of a bill.
	MaxSteps int `json:"max_steps"`
	// Timeout bounds one model call; 0 leaves it to the provider's default.
	Timeout time.Duration `json:"timeout"`
	// MaxRetries is how often a failed call is retried (default 2); 0
	// turns retries off.
	MaxRetries int `json:"max_retries"`
}
