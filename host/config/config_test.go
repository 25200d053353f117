package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// weatherSum is a real sha256, so the example is not accepted by accident
// of a lax pattern.
var weatherSum = func() string {
	s := sha256.Sum256([]byte("weather-plugin binary"))
	return hex.EncodeToString(s[:])
}()

// designExample is the example of DESIGN.md, section "Config: 10xgraph.json".
var designExample = `{
  "agent": "tenxgraph:react",
  "remote_tools": [
    {"node": "tools", "name": "read_clipboard", "description": "Read the current clipboard text.",
     "parameters": {"type": "object", "properties": {}, "required": []}}
  ],
  "model": {"provider": "openai", "model": "gpt-4o-mini",
            "base_url": "http://127.0.0.1:11434/v1", "api_key_env": "OPENAI_API_KEY"},
  "builtin_tools": {"node": "tools", "enable": ["calculator", "current_time"]},
  "mcp_servers": {
    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "./data"]},
    "search": {"url": "http://127.0.0.1:3001/mcp", "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}}
  },
  "plugins": [{"name": "weather", "command": ["./bin/weather-plugin"], "sha256": "` + weatherSum + `", "node": "tools"}],
  "checkpointer": {"type": "sqlite", "path": ".tenxgraph/state.db"},
  "server": {"addr": "127.0.0.1:8123"}
}`

func mustParse(t *testing.T, src, dir string) *Config {
	t.Helper()
	cfg, err := Parse([]byte(src), dir)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg
}

func TestSeedExample(t *testing.T) {
	// The seed's own example, with the node_name alias.
	cfg := mustParse(t, `{
	  "agent": "graph.agent:app",
	  "remote_tools": [{"node_name": "browser", "name": "read_clipboard",
	    "description": "Read the current clipboard text.",
	    "parameters": {"type": "object", "properties": {}, "required": []}},
	    {"name": "no_args"}]
	}`, "/p")
	if got := cfg.RemoteTools[0].Node; got != "browser" {
		t.Errorf("node_name: got %q", got)
	}
	if got := cfg.RemoteTools[1]; got.Node != "tools" || got.Parameters != nil {
		t.Errorf("defaults: got %+v", got)
	}
}

func TestParametersKeptRaw(t *testing.T) {
	cfg := mustParse(t, `{"agent": "a", "remote_tools": [{"name": "t", "parameters":
	  {"type": "object", "description": "a <b> & \"c\" é \u00e9",
	   "properties": {"z": {"type": "number", "maximum": 1e400}, "a": {"type": "integer", "minimum": 12345678901234567890}}}}]}`, "/p")
	want := `{"type":"object","description":"a <b> & \"c\" é é","properties":{"z":{"type":"number","maximum":1e400},"a":{"type":"integer","minimum":12345678901234567890}}}`
	if got := string(cfg.RemoteTools[0].Parameters); got != want {
		t.Errorf("parameters:\ngot  %s\nwant %s", got, want)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "10xgraph.json")
	if err := os.WriteFile(path, []byte(`{"agent": "a", "model": {"provider": "scripted", "script": "r.json"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Dir != dir || cfg.Model.Script != filepath.Join(dir, "r.json") {
		t.Errorf("Load: Dir %q, script %q", cfg.Dir, cfg.Model.Script)
	}

	missing := filepath.Join(dir, "nope", "10xgraph.json")
	_, err = Load(missing)
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "--config") {
		t.Errorf("missing file: %v", err)
	}

	if err := os.WriteFile(path, []byte(`{"agent": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	var ps toolspec.Problems
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Path != "agent" {
		t.Errorf("Load of a bad file should return its Problems, got %#v", err)
	}
}

// problems asserts err is a toolspec.Problems and returns it.
func problems(t *testing.T, err error) toolspec.Problems {
	t.Helper()
	if err == nil {
		t.Fatal("Parse accepted a bad config")
	}
	ps, ok := err.(toolspec.Problems)
	if !ok {
		t.Fatalf("error is %T, not toolspec.Problems: %v", err, err)
	}
	return ps
}

func paths(ps toolspec.Problems) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Path
	}
	slices.Sort(out)
	return out
}

const (
	okTool   = `{"name": "t"}`
	schemaOK = `{"type": "object", "properties": {"a": {"type": "string"}}}`
)

func TestBadConfigs(t *testing.T) {
	deep := strings.Repeat("[", 2000) + strings.Repeat("]", 2000)
	cases := []struct {
		name  string
		src   string
		paths []string // every problem's path, sorted
		msg   string   // a fragment the messages must contain
	}{
		// JSON itself.
		{"malformed", "{\n  \"agent\": \"a\",\n  \"model\" {}\n}", []string{""}, "line 3, column 11"},
		{"malformed literal", `{"agent": tru}`, []string{""}, "line 1, column 14"},
		{"truncated", `{"agent": "a", "remote_tools": [`, []string{""}, "ends before"},
		{"trailing comma", `{"agent": "a",}`, []string{""}, "line 1, column 15"},
		{"trailing data", `{"agent": "a"} {"agent": "b"}`, []string{""}, "after the top-level object"},
		{"top-level array", `[{"agent": "a"}]`, []string{""}, "must be a JSON object, got an array"},
		{"top-level null", `null`, []string{""}, "must be a JSON object, got null"},
		{"empty file", "  \n", []string{""}, "empty"},
		{"too deep", `{"agent": "a", "x": ` + deep + `}`, []string{""}, "nested more than"},
		{"duplicate top key", "{\"agent\": \"a\",\n \"agent\": \"b\"}", []string{"agent"}, "duplicate key \"agent\" (first on line 1)"},
		{"duplicate nested key", `{"agent": "a", "model": {"provider": "scripted", "script": "s", "provider": "openai"}}`, []string{"model.provider"}, "duplicate key"},
		{"duplicate key in parameters", `{"agent": "a", "remote_tools": [{"name": "t", "parameters": {"type": "object", "type": "object"}}]}`, []string{"remote_tools[0].parameters.type"}, "duplicate key"},
		{"duplicate server key", `{"agent": "a", "server": {"addr": "127.0.0.1:1", "addr": "0.0.0.0:1"}}`, []string{"server.addr"}, "duplicate key"},
		{"wrong-case top key", `{"Agent": "a"}`, []string{"Agent", "agent"}, `did you mean "agent"?`},
		{"wrong-case nested key", `{"agent": "a", "model": {"provider": "scripted", "Script": "s"}}`, []string{"model.Script", "model.script"}, `did you mean "script"?`},
		{"wrong-case key in a list", `{"agent": "a", "remote_tools": [{"NAME": "t"}]}`, []string{"remote_tools[0].NAME", "remote_tools[0].name"}, `did you mean "name"?`},
		{"invalid UTF-8 in a value", "{\"agent\": \"a\",\n \"server\": {\"addr\": \"h\xffst:1\"}}", []string{"server.addr"}, "line 2, column 23: invalid UTF-8"},
		{"invalid UTF-8 in a key", "{\"agent\": \"a\", \"mod\xc3l\": {}}", []string{"[\"mod\ufffdl\"]"}, "line 1, column 20: invalid UTF-8"},

		// Top level.
		{"unknown top key", `{"agent": "a", "agnet": "b"}`, []string{"agnet"}, "allowed: agent, remote_tools, model"},
		{"camelCase key", `{"agent": "a", "mcpServers": {}}`, []string{"mcpServers"}, `did you mean "mcp_servers"?`},
		{"odd key quoted in path", `{"agent": "a", "a.b": 1}`, []string{`["a.b"]`}, "unknown key"},
		{"missing agent", `{}`, []string{"agent"}, `"tenxgraph:react"`},
		{"agent wrong type", `{"agent": 5}`, []string{"agent"}, "must be a string, got a number"},
		{"agent empty", `{"agent": ""}`, []string{"agent"}, "must not be empty"},

		// remote_tools.
		{"remote_tools not an array", `{"agent": "a", "remote_tools": {"name": "t"}}`, []string{"remote_tools"}, "must be an array, got an object"},
		{"remote tool not an object", `{"agent": "a", "remote_tools": ["t"]}`, []string{"remote_tools[0]"}, "must be an object, got a string"},
		{"unknown key in remote tool", `{"agent": "a", "remote_tools": [` + okTool + `, {"name": "u", "nodes": "tools"}]}`, []string{"remote_tools[1].nodes"}, "allowed: node, node_name, name, description, parameters"},
		{"duplicate tool names", `{"agent": "a", "remote_tools": [` + okTool + `, ` + okTool + `]}`, []string{"remote_tools[1].name"}, "duplicate tool name"},
		{"invalid schema", `{"agent": "a", "remote_tools": [{"name": "t", "parameters": {"type":"object","properties":{"a":{"type":"bogus"}}}}]}`, []string{"remote_tools[0].parameters"}, "not a valid JSON Schema"},
		{"root schema not an object", `{"agent": "a", "remote_tools": [{"name": "t", "parameters": {"type": "string"}}]}`, []string{"remote_tools[0].parameters"}, `"type": "object"`},
		{"parameters not an object", `{"agent": "a", "remote_tools": [{"name": "t", "parameters": [1]}]}`, []string{"remote_tools[0].parameters"}, "JSON Schema object"},
		{"bad tool name", `{"agent": "a", "remote_tools": [{"name": "read clipboard"}]}`, []string{"remote_tools[0].name"}, "not a valid tool name"},
		{"missing tool name", `{"agent": "a", "remote_tools": [{"description": "d"}]}`, []string{"remote_tools[0].name"}, "missing"},
		{"tool name wrong type said once", `{"agent": "a", "remote_tools": [{"name": 5}]}`, []string{"remote_tools[0].name"}, "must be a string, got a number"},
		{"node and node_name", `{"agent": "a", "remote_tools": [{"node": "tools", "node_name": "tools", "name": "t"}]}`, []string{"remote_tools[0].node_name"}, "use one of node or node_name"},
		{"empty node_name", `{"agent": "a", "remote_tools": [{"node_name": "", "name": "t"}]}`, []string{"remote_tools[0].node_name"}, "must not be empty"},
		{"description wrong type", `{"agent": "a", "remote_tools": [{"name": "t", "description": null}]}`, []string{"remote_tools[0].description"}, "must be a string, got null"},

		// model.
		{"model wrong type", `{"agent": "a", "model": "gpt-4o"}`, []string{"model"}, "must be an object, got a string"},
		{"missing provider", `{"agent": "a", "model": {"model": "m"}}`, []string{"model.provider"}, `"openai"`},
		{"bad provider", `{"agent": "a", "model": {"provider": "gemini"}}`, []string{"model.provider"}, `must be one of "openai", "anthropic", "scripted"`},
		{"anthropic without model", `{"agent": "a", "model": {"provider": "anthropic"}}`, []string{"model.model"}, "claude"},
		{"anthropic base_url with /v1", `{"agent": "a", "model": {"provider": "anthropic", "model": "m", "base_url": "https://proxy.example.com/anthropic/v1/"}}`, []string{"model.base_url"}, `without /v1 (it appends /v1/messages): use "https://proxy.example.com/anthropic"`},
		{"max_tokens on openai", `{"agent": "a", "model": {"provider": "openai", "model": "m", "max_tokens": 100}}`, []string{"model.max_tokens"}, "only the anthropic provider takes max_tokens"},
		{"max_tokens zero", `{"agent": "a", "model": {"provider": "anthropic", "model": "m", "max_tokens": 0}}`, []string{"model.max_tokens"}, "at least 1"},
		{"openai without model", `{"agent": "a", "model": {"provider": "openai"}}`, []string{"model.model"}, "missing"},
		{"scripted without script", `{"agent": "a", "model": {"provider": "scripted"}}`, []string{"model.script"}, "missing"},
		{"max_steps zero", `{"agent": "a", "model": {"provider": "scripted", "script": "s", "max_steps": 0}}`, []string{"model.max_steps"}, "at least 1"},
		{"max_steps fraction", `{"agent": "a", "model": {"provider": "scripted", "script": "s", "max_steps": 2.5}}`, []string{"model.max_steps"}, "whole number"},
		{"max_steps string", `{"agent": "a", "model": {"provider": "scripted", "script": "s", "max_steps": "5"}}`, []string{"model.max_steps"}, "must be a whole number, got a string"},
		{"max_retries negative", `{"agent": "a", "model": {"provider": "scripted", "script": "s", "max_retries": -1}}`, []string{"model.max_retries"}, "at least 0"},
		{"bad duration", `{"agent": "a", "model": {"provider": "scripted", "script": "s", "timeout": "60"}}`, []string{"model.timeout"}, "not a duration"},
		{"duration as number", `{"agent": "a", "model": {"provider": "scripted", "script": "s", "timeout": 60}}`, []string{"model.timeout"}, "duration string"},
		{"negative duration", `{"agent": "a", "model": {"provider": "scripted", "script": "s", "timeout": "-5s"}}`, []string{"model.timeout"}, "longer than zero"},
		{"base_url not a URL", `{"agent": "a", "model": {"provider": "openai", "model": "m", "base_url": "localhost:11434"}}`, []string{"model.base_url"}, "http or https URL"},
		{"api_key_env holds a key", `{"agent": "a", "model": {"provider": "openai", "model": "m", "api_key_env": "sk-abc123"}}`, []string{"model.api_key_env"}, "not an environment variable name"},
		{"unknown model key", `{"agent": "a", "model": {"provider": "openai", "model": "m", "baseUrl": "x"}}`, []string{"model.baseUrl"}, `did you mean "base_url"?`},

		// builtin_tools.
		{"builtin without enable", `{"agent": "a", "builtin_tools": {}}`, []string{"builtin_tools.enable"}, "calculator"},
		{"unknown builtin", `{"agent": "a", "builtin_tools": {"enable": ["calculator", "shell"]}}`, []string{"builtin_tools.enable[1]"}, `got "shell"`},
		{"duplicate builtin", `{"agent": "a", "builtin_tools": {"enable": ["calculator", "calculator"]}}`, []string{"builtin_tools.enable[1]"}, "already enabled at [0]"},
		{"file tool without workspace", `{"agent": "a", "builtin_tools": {"enable": ["read_file", "list_files"]}}`, []string{"builtin_tools.workspace.root"}, "read_file is enabled"},
		{"http_fetch without hosts", `{"agent": "a", "builtin_tools": {"enable": ["http_fetch"], "http_fetch": {"allow_hosts": []}}}`, []string{"builtin_tools.http_fetch.allow_hosts"}, "missing"},
		{"allow_hosts with URL", `{"agent": "a", "builtin_tools": {"enable": ["http_fetch"], "http_fetch": {"allow_hosts": ["https://x.com/"]}}}`, []string{"builtin_tools.http_fetch.allow_hosts[0]"}, "not a host"},
		{"allow_hosts reaching this machine or a public suffix", `{"agent": "a", "builtin_tools": {"enable": ["http_fetch"], "http_fetch": {"allow_hosts": ["api.example.com", "localhost", "0.0.0.0", "*.co.uk", "127.0.0.1:8080", "10.0.0.0/8", "127.0.0.1/32:8080"]}}}`,
			[]string{"builtin_tools.http_fetch.allow_hosts[1]", "builtin_tools.http_fetch.allow_hosts[2]", "builtin_tools.http_fetch.allow_hosts[3]", "builtin_tools.http_fetch.allow_hosts[4]"}, "always means this machine"},
		{"allow_hosts unspecified address", `{"agent": "a", "builtin_tools": {"enable": ["http_fetch"], "http_fetch": {"allow_hosts": ["0.0.0.0"]}}}`, []string{"builtin_tools.http_fetch.allow_hosts[0]"}, "the unspecified address"},
		{"allow_hosts public suffix", `{"agent": "a", "builtin_tools": {"enable": ["http_fetch"], "http_fetch": {"allow_hosts": ["*.co.uk"]}}}`, []string{"builtin_tools.http_fetch.allow_hosts[0]"}, `"co.uk" is a public suffix`},
		{"allow_hosts loopback without CIDR", `{"agent": "a", "builtin_tools": {"enable": ["http_fetch"], "http_fetch": {"allow_hosts": ["127.0.0.1:8080"]}}}`, []string{"builtin_tools.http_fetch.allow_hosts[0]"}, `write "127.0.0.1/32:8080"`},
		{"workspace wrong type", `{"agent": "a", "builtin_tools": {"enable": ["write_file"], "workspace": "./ws"}}`, []string{"builtin_tools.workspace"}, "must be an object, got a string"},
		{"unknown key in http_fetch", `{"agent": "a", "builtin_tools": {"enable": [], "http_fetch": {"hosts": []}}}`, []string{"builtin_tools.http_fetch.hosts"}, "allowed: allow_hosts, max_bytes, timeout"},

		// mcp_servers.
		{"unknown key in server", `{"agent": "a", "mcp_servers": {"x": {"command": "c", "autoApprove": []}}}`, []string{"mcp_servers.x.autoApprove"}, "allowed: type, command"},
		{"command and url", `{"agent": "a", "mcp_servers": {"x": {"command": "c", "url": "http://h/mcp"}}}`, []string{"mcp_servers.x"}, "not both"},
		{"neither command nor url", `{"agent": "a", "mcp_servers": {"x": {"type": "stdio"}}}`, []string{"mcp_servers.x"}, "missing command"},
		{"stdio with url", `{"agent": "a", "mcp_servers": {"x": {"type": "stdio", "url": "http://h/mcp"}}}`, []string{"mcp_servers.x.url"}, "stdio"},
		{"http with command", `{"agent": "a", "mcp_servers": {"x": {"type": "http", "command": "c"}}}`, []string{"mcp_servers.x.command"}, "reached by url"},
		{"bad transport", `{"agent": "a", "mcp_servers": {"x": {"type": "websocket", "url": "ws://h"}}}`, []string{"mcp_servers.x.type", "mcp_servers.x.url"}, `"websocket"`},
		{"bad server name", `{"agent": "a", "mcp_servers": {"my.server": {"command": "c"}, "` + strings.Repeat("s", 33) + `": {"command": "c"}}}`, []string{`mcp_servers.` + strings.Repeat("s", 33), `mcp_servers["my.server"]`}, "1 to 32"},
		{"server not an object", `{"agent": "a", "mcp_servers": {"x": "npx server"}}`, []string{"mcp_servers.x"}, "must be an object"},
		{"mcp_servers not an object", `{"agent": "a", "mcp_servers": []}`, []string{"mcp_servers"}, "must be an object, got an array"},
		{"server timeout in seconds", `{"agent": "a", "mcp_servers": {"x": {"command": "c", "timeout": 30}}}`, []string{"mcp_servers.x.timeout"}, "duration string"},
		{"allow and deny", `{"agent": "a", "mcp_servers": {"x": {"command": "c", "allow_tools": ["a"], "deny_tools": ["b"]}}}`, []string{"mcp_servers.x.deny_tools"}, "not both"},
		{"stdio keys on http", `{"agent": "a", "mcp_servers": {"x": {"url": "http://h/mcp", "args": [], "env": {}}}}`, []string{"mcp_servers.x.args", "mcp_servers.x.env"}, "only used by \"stdio\""},
		{"headers on stdio", `{"agent": "a", "mcp_servers": {"x": {"command": "c", "headers": {"A": "b"}}}}`, []string{"mcp_servers.x.headers"}, "only used by \"http\""},
		{"env value wrong type", `{"agent": "a", "mcp_servers": {"x": {"command": "c", "env": {"A": 1, "B": "ok"}}}}`, []string{"mcp_servers.x.env.A"}, "must be a string, got a number"},
		{"bad header", `{"agent": "a", "mcp_servers": {"x": {"url": "http://h", "headers": {"Bad Name": "v", "X": "a\nb"}}}}`, []string{`mcp_servers.x.headers.X`, `mcp_servers.x.headers["Bad Name"]`}, "header"},
		{"max_output_bytes too large", `{"agent": "a", "mcp_servers": {"x": {"command": "c", "max_output_bytes": 1000000000}, "y": {"command": "c", "max_output_bytes": 0}}}`, []string{"mcp_servers.x.max_output_bytes", "mcp_servers.y.max_output_bytes"}, "201326592"},
		{"disabled wrong type", `{"agent": "a", "mcp_servers": {"x": {"command": "c", "disabled": "yes"}}}`, []string{"mcp_servers.x.disabled"}, "must be a boolean"},
		{"args as a string", `{"agent": "a", "mcp_servers": {"x": {"command": "c", "args": "-y pkg"}}}`, []string{"mcp_servers.x.args"}, `such as ["-y pkg"]`},
		{"bad url", `{"agent": "a", "mcp_servers": {"x": {"url": "h:3000/mcp"}}}`, []string{"mcp_servers.x.url"}, "http or https URL"},

		// plugins.
		{"sha256 too short", `{"agent": "a", "plugins": [{"name": "p", "command": ["p"], "sha256": "` + weatherSum[:63] + `"}]}`, []string{"plugins[0].sha256"}, "64 hexadecimal characters"},
		{"sha256 not hex", `{"agent": "a", "plugins": [{"name": "p", "command": ["p"], "sha256": "` + strings.Repeat("g", 64) + `"}]}`, []string{"plugins[0].sha256"}, "64 hexadecimal"},
		{"sha256 placeholder", `{"agent": "a", "plugins": [{"name": "p", "command": ["p"], "sha256": "…"}]}`, []string{"plugins[0].sha256"}, "64 hexadecimal"},
		{"duplicate plugin", `{"agent": "a", "plugins": [{"name": "p", "command": ["p"]}, {"name": "p", "command": ["q"]}]}`, []string{"plugins[1].name"}, "first at plugins[0]"},
		{"plugin without name and command", `{"agent": "a", "plugins": [{}]}`, []string{"plugins[0].command", "plugins[0].name"}, "missing"},
		{"plugin bad name", `{"agent": "a", "plugins": [{"name": "my plugin", "command": ["p"]}]}`, []string{"plugins[0].name"}, "1 to 64"},
		{"plugin empty command", `{"agent": "a", "plugins": [{"name": "p", "command": []}]}`, []string{"plugins[0].command"}, "must not be empty"},
		{"plugin command string", `{"agent": "a", "plugins": [{"name": "p", "command": "./bin/p"}]}`, []string{"plugins[0].command"}, `such as ["./bin/p"]`},
		{"plugin command empty exe", `{"agent": "a", "plugins": [{"name": "p", "command": ["", "x"]}]}`, []string{"plugins[0].command[0]"}, "must not be empty"},
		{"plugin command element type", `{"agent": "a", "plugins": [{"name": "p", "command": ["p", 1]}]}`, []string{"plugins[0].command[1]"}, "must be a string"},
		{"plugin bad start", `{"agent": "a", "plugins": [{"name": "p", "command": ["p"], "start": "eager"}]}`, []string{"plugins[0].start"}, `"startup", "lazy"`},
		{"plugin unknown key", `{"agent": "a", "plugins": [{"name": "p", "command": ["p"], "args": []}]}`, []string{"plugins[0].args"}, "allowed: name, command, sha256, node, env, start"},

		// checkpointer.
		{"bad checkpointer type", `{"agent": "a", "checkpointer": {"type": "redis", "path": "x"}}`, []string{"checkpointer.type"}, `"redis"`},
		{"path on memory", `{"agent": "a", "checkpointer": {"type": "memory", "path": "x.db"}}`, []string{"checkpointer.path"}, `only used when type is "sqlite"`},
		{"postgres without dsn_env", `{"agent": "a", "checkpointer": {"type": "postgres"}}`, []string{"checkpointer.dsn_env"}, "missing"},
		{"postgres with path", `{"agent": "a", "checkpointer": {"type": "postgres", "dsn_env": "D", "path": "x"}}`, []string{"checkpointer.path"}, "only used"},
		{"dsn_env on default sqlite", `{"agent": "a", "checkpointer": {"dsn_env": "D"}}`, []string{"checkpointer.dsn_env"}, `only used when type is "postgres"`},
		{"dsn in dsn_env", `{"agent": "a", "checkpointer": {"type": "postgres", "dsn_env": "postgres://u:p@h/db"}}`, []string{"checkpointer.dsn_env"}, "not an environment variable name"},

		// server.
		{"addr without port", `{"agent": "a", "server": {"addr": "8123"}}`, []string{"server.addr"}, "host:port"},
		{"addr bad port", `{"agent": "a", "server": {"addr": "localhost:99999"}}`, []string{"server.addr"}, "0 to 65535"},
		{"empty tokens_env", `{"agent": "a", "server": {"auth": {"tokens_env": []}}}`, []string{"server.auth.tokens_env"}, "at least one"},
		{"auth without tokens_env", `{"agent": "a", "server": {"auth": {}}}`, []string{"server.auth.tokens_env"}, "missing"},
		{"on_disconnect unknown", `{"agent": "a", "server": {"on_disconnect": "detach"}}`, []string{"server.on_disconnect"}, `must be one of "cancel", "continue"`},
		{"on_disconnect wrong case", `{"agent": "a", "server": {"On_Disconnect": "continue"}}`, []string{"server.On_Disconnect"}, `did you mean "on_disconnect"?`},
		{"max_body_bytes zero", `{"agent": "a", "server": {"max_body_bytes": 0}}`, []string{"server.max_body_bytes"}, "at least 1"},
		{"max_body_bytes huge", `{"agent": "a", "server": {"max_body_bytes": 1e30}}`, []string{"server.max_body_bytes"}, "whole number"},
		{"max_request_messages zero", `{"agent": "a", "server": {"max_request_messages": 0}}`, []string{"server.max_request_messages"}, "at least 1"},
		{"max_request_messages a fraction", `{"agent": "a", "server": {"max_request_messages": 1.5}}`, []string{"server.max_request_messages"}, "whole number"},
		{"max_request_messages a string", `{"agent": "a", "server": {"max_request_messages": "1000"}}`, []string{"server.max_request_messages"}, "must be a whole number, got a string"},
		{"origin with slash", `{"agent": "a", "server": {"cors": {"allow_origins": ["http://localhost:5173/"]}}}`, []string{"server.cors.allow_origins[0]"}, `such as "http://localhost:5173"`},
		{"unknown server key", `{"agent": "a", "server": {"port": 8123}}`, []string{"server.port"}, "allowed: addr, auth, cors, max_body_bytes"},
	}
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "/p")
			ps := problems(t, err)
			if got := paths(ps); !slices.Equal(got, tc.paths) {
				t.Errorf("paths: got %q, want %q\n%v", got, tc.paths, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("message should contain %q:\n%v", tc.msg, err)
			}
			for _, p := range ps {
				if p.Message == "" {
					t.Errorf("empty message at %q", p.Path)
				}
			}
		})
	}
}

// TestEveryProblemAtOnce checks that one pass reports everything, so a user
// fixes the file in one edit.
func TestEveryProblemAtOnce(t *testing.T) {
	src := `{
	  "agent": "a",
	  "agnet": "typo",
	  "remote_tools": [
	    {"name": "dup", "parameters": ` + schemaOK + `},
	    {"name": "dup"},
	    {"name": "bad", "parameters": {"type":"object","properties":{"a":{"type":"bogus"}}}},
	    {"node": "tools", "node_name": "tools", "name": "both"},
	    {"name": "extra", "color": "red"}
	  ],
	  "model": {"provider": "openai", "timeout": "soon"},
	  "mcp_servers": {"files": {"command": "npx", "bogus": true}},
	  "plugins": [{"name": "weather", "command": ["./w"], "sha256": "abc"}],
	  "checkpointer": {"type": "memory", "path": "x"},
	  "server": {"addr": "nope"}
	}`
	_, err := Parse([]byte(src), "/p")
	want := []string{
		"agnet",
		"checkpointer.path",
		"mcp_servers.files.bogus",
		"model.model",
		"model.timeout",
		"plugins[0].sha256",
		"remote_tools[1].name",
		"remote_tools[2].parameters",
		"remote_tools[3].node_name",
		"remote_tools[4].color",
		"server.addr",
	}
	if got := paths(problems(t, err)); !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q\n%v", got, want, err)
	}
}

func TestProblemsAreStable(t *testing.T) {
	src := `{"mcp_servers": {"b": {"command": "c", "env": {"X": 1, "Y": 2, "Z": 3}, "headers": {"A": "b"}}, "a": {}}, "x": 1, "y": 2}`
	_, first := Parse([]byte(src), "/p")
	for range 20 {
		if _, err := Parse([]byte(src), "/p"); err.Error() != first.Error() {
			t.Fatalf("report changed between runs:\n%v\n---\n%v", first, err)
		}
	}
}

func TestBOM(t *testing.T) {
	mustParse(t, "\uFEFF"+`{"agent": "a"}`, "/p")
}

func TestEncodeRoundTrip(t *testing.T) {
	in := `{"a":[1,-2.5e3,true,false,null,"x\u0000\"\\<>&"],"b":{},"c":[]}`
	var ps toolspec.Problems
	v := parse([]byte(in), &ps)
	var buf bytes.Buffer
	v.encode(&buf)
	var x, y any
	if err := json.Unmarshal([]byte(in), &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(buf.Bytes(), &y); err != nil {
		t.Fatalf("re-encoded JSON is invalid: %v: %s", err, buf.Bytes())
	}
	if !reflect.DeepEqual(x, y) {
		t.Errorf("round trip changed the value: %s", buf.Bytes())
	}
}

// A config nests at most as deep as strictjson reads, which the plugins
// and tools its options go to use: 128 levels get past the parser (to
// other problems here), 129 are refused with the limit.
func TestConfigDepthIsStrictJSONs(t *testing.T) {
	nested := func(n int) string {
		// The top-level object and builtin_tools' are two levels.
		return `{"agent": "a", "builtin_tools": {"calculator": ` + strings.Repeat("[", n-2) + strings.Repeat("]", n-2) + `}}`
	}
	tooDeep := fmt.Sprintf("nested more than %d levels deep", strictjson.MaxDepth)
	_, err := Parse([]byte(nested(strictjson.MaxDepth)), "/p")
	if strings.Contains(fmt.Sprint(err), tooDeep) {
		t.Fatalf("%d levels: %v", strictjson.MaxDepth, err)
	}
	_, err = Parse([]byte(nested(strictjson.MaxDepth+1)), "/p")
	ps := problems(t, err)
	if len(ps) != 1 || !strings.Contains(ps[0].String(), tooDeep) {
		t.Fatalf("problems %v, want one saying the config is %s", ps, tooDeep)
	}
}
