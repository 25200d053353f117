package config

import (
	"testing"

	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

func FuzzParse(f *testing.F) {
	seeds := []string{
		designExample,
		`{"agent": "a"}`,
		`{"agent": "a", "remote_tools": [{"node_name": "n", "name": "t", "parameters": {"type": "object", "properties": {"c": {"type": "string"}}}}]}`,
		`{"agent": "a", "model": {"provider": "scripted", "script": "s.json", "max_steps": 3, "timeout": "5s"}}`,
		`{"agent": "a", "builtin_tools": {"enable": ["http_fetch", "read_file"], "http_fetch": {"allow_hosts": ["x.com"]}, "workspace": {"root": "."}}}`,
		`{"agent": "a", "mcp_servers": {"x": {"type": "sse", "url": "${U}", "headers": {"A": "b"}}, "y": {"command": "./c", "env": {"K": "v"}}}}`,
		`{"agent": "a", "checkpointer": {"type": "postgres", "dsn_env": "D"}, "server": {"auth": {"tokens_env": ["T"]}, "cors": {"allow_origins": ["*"]}}}`,
		// Invalid ones.
		``,
		`[]`,
		`{"agent": "a",}`,
		`{"agent": "a"} trailing`,
		`{"agent": "a", "agent": "b", "x": {"y": [1, 2, {"z": null}]}}`,
		`{"agent": 1, "remote_tools": [{"name": "t"}, {"name": "t", "node": "", "node_name": 3, "parameters": {"type":"object","properties":{"a":{"type":"bogus"}}}}]}`,
		`{"model": {"provider": "openai", "max_steps": 1e99, "timeout": 30, "max_retries": -1.5}}`,
		`{"mcp_servers": {"a b": {"command": "c", "url": "u", "type": "stdio", "allow_tools": [""], "deny_tools": [1]}}}`,
		`{"plugins": [{"name": "p", "command": "x", "sha256": "zz"}, {"name": "p", "command": [], "start": 1}, 7]}`,
		`{"checkpointer": {"type": "memory", "path": 1, "dsn_env": "1x"}, "server": {"addr": "x", "auth": [], "max_body_bytes": "1"}}`,
		"{\"agent\": \"\xff\", \"\u00e9\": \"x\\ud800\"}",
		`{"a":[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "/fuzz")
		if err == nil {
			if cfg == nil {
				t.Fatal("nil config without an error")
			}
			return
		}
		if cfg != nil {
			t.Fatal("a config returned along with an error")
		}
		ps, ok := err.(toolspec.Problems)
		if !ok {
			t.Fatalf("error is %T, not toolspec.Problems: %v", err, err)
		}
		if len(ps) == 0 {
			t.Fatal("an error with no problems")
		}
		for _, p := range ps {
			if p.Message == "" {
				t.Fatalf("problem at %q has no message", p.Path)
			}
		}
	})
}
