package model

import "testing"

func TestIsLocal(t *testing.T) {
	for base, want := range map[string]bool{
		"http://127.0.0.1:11434/v1":                true,
		"http://localhost:1234/v1":                 true,
		"http://LOCALHOST.:8080/v1":                true,
		"http://[::1]:8000/v1":                     true,
		"http://0.0.0.0:8000/v1":                   true,
		"http://192.168.1.20:8000/v1":              true,
		"http://10.0.0.5/v1":                       true,
		"http://172.20.0.3:11434/v1":               true,
		"http://[fd00::5]:8000/v1":                 true,
		"http://169.254.10.1/v1":                   true,
		"http://ollama:11434/v1":                   true,
		"http://host.docker.internal:11434/v1":     true,
		"http://gpu-box.local:8000/v1":             true,
		"http://vllm.default.svc.cluster.local/v1": true,
		"https://api.openai.com/v1":                false,
		"https://api.groq.com/openai/v1":           false,
		"http://8.8.8.8/v1":                        false,
		"http://172.32.0.1/v1":                     false,
		"not a url":                                false,
	} {
		if got := IsLocal(base); got != want {
			t.Errorf("IsLocal(%q) = %v, want %v", base, got, want)
		}
	}
}
