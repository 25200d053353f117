package config

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	jsv5 "github.com/santhosh-tekuri/jsonschema/v5"
)

// everyKey is a valid config that sets every key the schema knows, so the
// schema cannot refuse a key Parse takes without this test seeing it.
var everyKey = `{
  "$schema": "./10xgraph.schema.json",
  "agent": "tenxgraph:react",
  "remote_tools": [{"node_name": "tools", "name": "read_clipboard", "description": "d",
    "parameters": {"type": "object", "properties": {}}, "timeout": "2m"}],
  "remote_tool_defaults": {"timeout": "5m"},
  "model": {"provider": "anthropic", "model": "claude-sonnet-4-5", "base_url": "https://api.anthropic.com",
    "api_key_env": "ANTHROPIC_API_KEY", "system_prompt": "s", "max_steps": 3, "timeout": "1m30s", "max_retries": 0, "max_tokens": 100},
  "provider_defaults": {"timeout": "30s", "max_argument_bytes": 1000, "max_result_bytes": 2000000,
    "env": {"A": "1"}, "pass_env": ["LANG"], "limits": {"memory_mb": 512, "cpu_seconds": 10, "open_files": 64, "processes": 32},
    "network": "none", "user": "nobody", "group": "nogroup", "filesystem": {"read": ["r"], "write": ["w"]}},
  "builtin_tools": {"node": "tools", "enable": ["calculator", "http_fetch", "read_file"],
    "http_fetch": {"allow_hosts": ["api.example.com"], "max_bytes": 1000, "timeout": "5s"},
    "workspace": {"root": "ws"}, "timeout": "1m", "max_argument_bytes": 10, "max_result_bytes": 20,
    "tool_timeouts": {"calculator": "1s"}, "require_approval": ["http_fetch"],
    "env": {"B": "2"}, "pass_env": ["TZ"], "limits": {"memory_mb": 64}, "network": "host", "user": "nobody", "filesystem": {"read": ["x"]}},
  "mcp_servers": {
    "files": {"type": "stdio", "command": "npx", "args": ["-y", "srv"], "env": {"K": "${V}"}, "cwd": "data",
      "max_output_bytes": 1000, "node": "tools", "allow_tools": ["read"], "disabled": true,
      "timeout": "10s", "max_argument_bytes": 10, "max_result_bytes": 2000, "tool_timeouts": {"read": "1s"}, "require_approval": true,
      "pass_env": ["HOME"], "limits": {"processes": 9}, "network": "host", "user": "nobody", "group": "nogroup", "filesystem": {"write": ["w"]}},
    "search": {"type": "streamable_http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${T}"}, "deny_tools": ["rm"]}
  },
  "plugins": [{"name": "weather", "command": ["./bin/w", "--flag"], "sha256": "` + weatherSum + `", "node": "tools",
    "env": {"C": "3"}, "start": "lazy", "cwd": "work", "prefix": "wx_",
    "timeout": "1s", "max_argument_bytes": 1, "max_result_bytes": 2, "tool_timeouts": {"forecast": "2s"}, "require_approval": ["forecast"],
    "pass_env": ["TZ"], "limits": {"open_files": 10}, "network": "none", "user": "u", "group": "g", "filesystem": {"read": ["/"]},
    "options": {"units": "imperial", "stations": [1, 2]}}],
  "checkpointer": {"type": "sqlite", "path": "state.db", "lease": "10s", "keep_history": -1, "idle_ttl": "24h", "durability": "async"},
  "server": {"addr": "127.0.0.1:0", "auth": {"tokens_env": ["TOKEN"]}, "cors": {"allow_origins": ["http://localhost:5173"]},
    "max_body_bytes": 1024, "shutdown_grace": "3s", "on_disconnect": "continue", "allowed_hosts": ["myhost.local"], "max_request_messages": 10},
  "cache": {"max_bytes": 1000},
  "media": {"allowed_types": ["image/png", "text/csv"], "max_blob_bytes": 1, "max_request_bytes": 2, "max_image_pixels": 3,
    "fetch": {"allow_hosts": ["example.com"], "timeout": "3s"}}
}`

// goodConfigs are configs Parse accepts: the schema must accept them too.
func goodConfigs(t *testing.T) map[string]string {
	t.Helper()
	good := map[string]string{"design example": designExample, "every key": everyKey,
		"postgres": `{"agent": "a", "checkpointer": {"type": "postgres", "dsn_env": "DATABASE_URL"}}`,
		"scripted": `{"agent": "a", "model": {"provider": "scripted", "script": "s.json"}}`,
	}
	found, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", "10xgraph.json"))
	if err != nil || len(found) == 0 {
		t.Fatalf("no example configs found (%v)", err)
	}
	for _, f := range found {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		good[filepath.ToSlash(f)] = string(data)
	}
	for name, src := range good {
		if _, err := Parse([]byte(src), t.TempDir()); err != nil {
			t.Fatalf("%s: Parse refuses it: %v", name, err)
		}
	}
	return good
}

// badConfigs are configs with mistakes a schema can express: the schema
// must refuse each (Parse refuses them too, as TestBadConfigs shows).
var badConfigs = map[string]string{
	"unknown top key":      `{"agent": "a", "agnet": "b"}`,
	"missing agent":        `{}`,
	"agent wrong type":     `{"agent": 5}`,
	"$schema wrong type":   `{"agent": "a", "$schema": 1}`,
	"bad provider":         `{"agent": "a", "model": {"provider": "gemini"}}`,
	"openai without model": `{"agent": "a", "model": {"provider": "openai"}}`,
	"max_tokens on openai": `{"agent": "a", "model": {"provider": "openai", "model": "m", "max_tokens": 100}}`,
	"unknown model key":    `{"agent": "a", "model": {"provider": "openai", "model": "m", "baseUrl": "x"}}`,
	"max_steps fraction":   `{"agent": "a", "model": {"provider": "scripted", "script": "s", "max_steps": 2.5}}`,
	"duration as number":   `{"agent": "a", "model": {"provider": "scripted", "script": "s", "timeout": 60}}`,
	"bad duration":         `{"agent": "a", "model": {"provider": "scripted", "script": "s", "timeout": "60"}}`,
	"unknown builtin":      `{"agent": "a", "builtin_tools": {"enable": ["calculator", "shell"]}}`,
	"builtin no enable":    `{"agent": "a", "builtin_tools": {}}`,
	"server name":          `{"agent": "a", "mcp_servers": {"my.server": {"command": "c"}}}`,
	"command and url":      `{"agent": "a", "mcp_servers": {"x": {"command": "c", "url": "http://h/mcp"}}}`,
	"neither":              `{"agent": "a", "mcp_servers": {"x": {"type": "stdio"}}}`,
	"stdio keys on http":   `{"agent": "a", "mcp_servers": {"x": {"url": "http://h/mcp", "args": []}}}`,
	"headers on stdio":     `{"agent": "a", "mcp_servers": {"x": {"command": "c", "headers": {"A": "b"}}}}`,
	"stdio with url":       `{"agent": "a", "mcp_servers": {"x": {"type": "stdio", "url": "http://h/mcp"}}}`,
	"http with command":    `{"agent": "a", "mcp_servers": {"x": {"type": "http", "command": "c"}}}`,
	"allow and deny":       `{"agent": "a", "mcp_servers": {"x": {"command": "c", "allow_tools": ["a"], "deny_tools": ["b"]}}}`,
	"plugin no command":    `{"agent": "a", "plugins": [{"name": "p"}]}`,
	"plugin empty command": `{"agent": "a", "plugins": [{"name": "p", "command": []}]}`,
	"plugin empty exe":     `{"agent": "a", "plugins": [{"name": "p", "command": ["", "x"]}]}`,
	"plugin sha256":        `{"agent": "a", "plugins": [{"name": "p", "command": ["p"], "sha256": "abc"}]}`,
	"plugin unknown key":   `{"agent": "a", "plugins": [{"name": "p", "command": ["p"], "args": []}]}`,
	"plugin options list":  `{"agent": "a", "plugins": [{"name": "p", "command": ["p"], "options": ["x"]}]}`,
	"empty limits":         `{"agent": "a", "provider_defaults": {"limits": {}}}`,
	"network":              `{"agent": "a", "provider_defaults": {"network": "bridge"}}`,
	"path on memory":       `{"agent": "a", "checkpointer": {"type": "memory", "path": "x.db"}}`,
	"dsn_env on sqlite":    `{"agent": "a", "checkpointer": {"dsn_env": "D"}}`,
	"postgres without dsn": `{"agent": "a", "checkpointer": {"type": "postgres"}}`,
	"auth without tokens":  `{"agent": "a", "server": {"auth": {}}}`,
	"node and node_name":   `{"agent": "a", "remote_tools": [{"node": "tools", "node_name": "tools", "name": "t"}]}`,
	"unknown media type":   `{"agent": "a", "media": {"allowed_types": ["image/svg+xml"]}}`,
}

// schemaJSON is Schema as `tenxgraph schema` prints it.
func schemaJSON(t *testing.T) []byte {
	t.Helper()
	out, err := json.MarshalIndent(Schema(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkWithPython is the independent check: Python's jsonschema (another
// implementation than the one the host validates with) checks the schema
// against the draft 2020-12 metaschema, then judges each config. It returns
// the names of the configs it refused, with why.
const checkWithPython = `
import json, sys
import jsonschema
req = json.load(sys.stdin)
jsonschema.Draft202012Validator.check_schema(req["schema"])
v = jsonschema.Draft202012Validator(req["schema"])
out = {}
for name, doc in req["configs"].items():
    errs = sorted(e.message for e in v.iter_errors(json.loads(doc)))
    if errs:
        out[name] = errs
json.dump(out, sys.stdout)
`

// python finds a python3 with the jsonschema package (Debian's
// python3-jsonschema), which scripts/test.sh installs.
func python(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import jsonschema.validators; jsonschema.Draft202012Validator").Run() == nil {
			return path
		}
	}
	t.Skip("no python3 with the jsonschema package (Debian: apt-get install python3-jsonschema)")
	return ""
}

func refusedByPython(t *testing.T, configs map[string]string) map[string][]string {
	t.Helper()
	req, err := json.Marshal(map[string]any{"schema": json.RawMessage(schemaJSON(t)), "configs": configs})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python(t), "-c", checkWithPython)
	cmd.Stdin = bytes.NewReader(req)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python's jsonschema: %v\n%s", err, stderr.String())
	}
	var refused map[string][]string
	if err := json.Unmarshal(out, &refused); err != nil {
		t.Fatalf("python's answer %q: %v", out, err)
	}
	return refused
}

// The schema is a valid draft 2020-12 schema by an independent validator,
// and it accepts every example config.
func TestSchemaIsValidAndAcceptsTheExamples(t *testing.T) {
	if refused := refusedByPython(t, goodConfigs(t)); len(refused) > 0 {
		t.Errorf("the schema refuses configs Parse accepts: %v", refused)
	}
}

// The schema refuses the mistakes a schema can express, by the independent
// validator and by the one the host uses.
func TestSchemaRefusesMistakes(t *testing.T) {
	for name, src := range badConfigs {
		if _, err := Parse([]byte(src), "/p"); err == nil {
			t.Fatalf("%s: Parse accepts it", name)
		}
	}
	refused := refusedByPython(t, badConfigs)
	for name := range badConfigs {
		if _, ok := refused[name]; !ok {
			t.Errorf("%s: the schema accepts %s", name, badConfigs[name])
		}
	}
}

// The host's own validator compiles the schema and agrees on the same
// files, so the schema can serve as the host's first check.
func TestSchemaCompilesForTheHost(t *testing.T) {
	c := jsv5.NewCompiler()
	c.Draft = jsv5.Draft2020
	if err := c.AddResource("10xgraph.schema.json", bytes.NewReader(schemaJSON(t))); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("10xgraph.schema.json")
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	check := func(src string) error {
		dec := json.NewDecoder(strings.NewReader(src))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return s.Validate(v)
	}
	for name, src := range goodConfigs(t) {
		if err := check(src); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, src := range badConfigs {
		if check(src) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Every key and every object of the schema says what it is for: the
// descriptions are what an editor shows on hover.
func TestSchemaDescribesEveryKey(t *testing.T) {
	var walk func(path string, s map[string]any)
	walk = func(path string, s map[string]any) {
		ps, _ := s["properties"].(map[string]any)
		for k, v := range ps {
			sub, _ := v.(map[string]any)
			if d, _ := sub["description"].(string); d == "" {
				t.Errorf("%s.%s has no description", path, k)
			}
			walk(path+"."+k, sub)
		}
		for _, k := range []string{"items", "additionalProperties"} {
			if sub, ok := s[k].(map[string]any); ok {
				walk(path+"."+k, sub)
			}
		}
	}
	var root map[string]any
	if err := json.Unmarshal(schemaJSON(t), &root); err != nil {
		t.Fatal(err)
	}
	if root["$schema"] != SchemaID {
		t.Errorf("$schema %v, want %s", root["$schema"], SchemaID)
	}
	walk("", root)
}

func TestRegisterRefusesDuplicates(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a second section with the key agent was registered")
		}
	}()
	register(Section{Key: "agent"})
	sections = sections[:len(sections)-1] // undo the registration the test found wrong
}
