package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

func TestNewDefaultsAndSchemas(t *testing.T) {
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	md, err := p.Metadata(context.Background(), sdk.MetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if md.Name != "builtin" {
		t.Errorf("name = %q, want builtin", md.Name)
	}
	var names []string
	for _, spec := range md.Tools {
		names = append(names, spec.Name)
		if ps := toolspec.Check(spec); len(ps) > 0 {
			t.Errorf("tool %s: invalid spec: %v", spec.Name, ps)
		}
		var schema map[string]any
		if err := json.Unmarshal(spec.Parameters, &schema); err != nil {
			t.Fatalf("tool %s: %v", spec.Name, err)
		}
		if schema["additionalProperties"] != false {
			t.Errorf("tool %s: additionalProperties must be false", spec.Name)
		}
		if len(spec.Description) < 80 {
			t.Errorf("tool %s: description too thin to guide a model: %q", spec.Name, spec.Description)
		}
	}
	if got := strings.Join(names, ","); got != "calculator,current_time" {
		t.Errorf("default tools = %s, want calculator,current_time", got)
	}
}

func TestSchemasRejectBadArguments(t *testing.T) {
	for _, tool := range []sdk.Tool{calculatorTool(), currentTimeTool(time.Now)} {
		s, err := toolspec.Compile(tool.Spec.Parameters)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(json.RawMessage(`{"bogus": 1}`)); err == nil {
			t.Errorf("%s: schema accepts an unknown argument", tool.Spec.Name)
		}
	}
	s, _ := toolspec.Compile(calculatorTool().Spec.Parameters)
	if err := s.Validate(json.RawMessage(`{}`)); err == nil {
		t.Error("calculator: schema accepts a missing expression")
	}
	if err := s.Validate(json.RawMessage(`{"expression": "` + strings.Repeat("1", 1001) + `"}`)); err == nil {
		t.Error("calculator: schema accepts a 1001-character expression")
	}
}

func TestNewErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		opts Options
		want []string
	}{
		{Options{Enable: []string{"calc"}}, []string{`unknown tool "calc"`, "known tools: calculator, current_time, http_fetch, list_files, read_file, write_file"}},
		{Options{Enable: []string{"calculator", "calculator"}}, []string{`tool "calculator" is enabled twice`}},
		{Options{Enable: []string{"http_fetch"}}, []string{"http_fetch.allow_hosts is empty"}},
		{Options{Enable: []string{"read_file", "nope"}}, []string{"workspace_root is empty: read_file is enabled", `unknown tool "nope"`}},
		// Every problem at once.
		{
			Options{
				Enable:        []string{"http_fetch", "write_file", "list_files", "bogus"},
				HTTPFetch:     HTTPFetchOptions{AllowedHosts: []string{"https://example.com/", "*", "*.com", "ok.example.com:99999"}, MaxBytes: -1, Timeout: sdk.Duration(-time.Second)},
				WorkspaceRoot: filepath.Join(t.TempDir(), "missing"),
			},
			[]string{
				`unknown tool "bogus"`,
				`http_fetch.allow_hosts[0]: "https://example.com/" is not a host`,
				`http_fetch.allow_hosts[1]: "*" would allow every host`,
				`http_fetch.allow_hosts[2]: "*.com" is too broad`,
				`http_fetch.allow_hosts[3]: "ok.example.com:99999": port "99999"`,
				"http_fetch.max_bytes is -1",
				"http_fetch.timeout is -1s: it must be positive, or 0 for the default of 10s",
				"does not exist",
			},
		},
		{Options{Enable: []string{"http_fetch"}, HTTPFetch: HTTPFetchOptions{AllowedHosts: []string{"a.example"}, MaxBytes: 1 << 30}}, []string{"http_fetch.max_bytes is 1073741824: the most allowed is"}},
		{Options{Enable: []string{"list_files"}, WorkspaceRoot: file}, []string{"is not a directory"}},
		{Options{Enable: []string{"list_files"}, WorkspaceRoot: string(filepath.Separator)}, []string{"is the root of the file system"}},
	}
	for _, c := range cases {
		p, err := New(c.opts)
		if err == nil {
			t.Errorf("New(%+v): no error", c.opts)
			continue
		}
		if p != nil {
			t.Errorf("New(%+v): non-nil provider with an error", c.opts)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("New(%+v) error %q does not contain %q", c.opts, err, w)
			}
		}
	}
}

func TestNewAllTools(t *testing.T) {
	p, err := New(Options{
		Enable:        []string{"list_files", "http_fetch", "read_file", "write_file", "calculator", "current_time"},
		HTTPFetch:     HTTPFetchOptions{AllowedHosts: []string{"api.example.com", "*.example.org", "127.0.0.1/32:8080", "[::1/128]:8080"}},
		WorkspaceRoot: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	md, err := p.Metadata(context.Background(), sdk.MetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, spec := range md.Tools {
		names = append(names, spec.Name)
		if ps := toolspec.Check(spec); len(ps) > 0 {
			t.Errorf("tool %s: invalid spec: %v", spec.Name, ps)
		}
		var schema map[string]any
		if err := json.Unmarshal(spec.Parameters, &schema); err != nil {
			t.Fatalf("tool %s: %v", spec.Name, err)
		}
		if schema["additionalProperties"] != false {
			t.Errorf("tool %s: additionalProperties must be false", spec.Name)
		}
		if len(spec.Description) < 200 {
			t.Errorf("tool %s: description too thin to guide a model: %q", spec.Name, spec.Description)
		}
		s, err := toolspec.Compile(spec.Parameters)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(json.RawMessage(`{"bogus": 1}`)); err == nil {
			t.Errorf("%s: schema accepts an unknown argument", spec.Name)
		}
	}
	if got := strings.Join(names, ","); got != "calculator,current_time,http_fetch,list_files,read_file,write_file" {
		t.Errorf("tools = %s", got)
	}
	for _, spec := range md.Tools {
		if spec.Name == "http_fetch" && !strings.Contains(spec.Description, "api.example.com, *.example.org, 127.0.0.1/32:8080") {
			t.Errorf("http_fetch description does not list the allowed hosts: %s", spec.Description)
		}
	}
}

func TestSchemasOfNewTools(t *testing.T) {
	ws := &workspace{real: t.TempDir()}
	f, ps := newFetcher(HTTPFetchOptions{AllowedHosts: []string{"example.com"}})
	if ps != nil {
		t.Fatal(ps)
	}
	cases := []struct {
		tool      sdk.Tool
		good, bad []string
	}{
		{
			tool: f.tool(),
			good: []string{`{"url":"https://example.com"}`, `{"url":"https://example.com","method":"HEAD","headers":{"Accept":"text/html"}}`},
			bad:  []string{`{}`, `{"url":""}`, `{"url":"https://example.com","method":"POST"}`, `{"url":"x","headers":{"A":1}}`, `{"url":"x","headers":"A: b"}`},
		},
		{
			tool: readFileTool(ws),
			good: []string{`{"path":"a.txt"}`, `{"path":"a.txt","max_bytes":16777216}`},
			bad:  []string{`{}`, `{"path":""}`, `{"path":"a","max_bytes":0}`, `{"path":"a","max_bytes":16777217}`, `{"path":"a","max_bytes":1.5}`},
		},
		{
			tool: writeFileTool(ws),
			good: []string{`{"path":"a.txt","content":""}`, `{"path":"a/b.txt","content":"x","append":true,"create_dirs":true}`},
			bad:  []string{`{"path":"a.txt"}`, `{"content":"x"}`, `{"path":"a","content":1}`, `{"path":"a","content":"x","append":"yes"}`},
		},
		{
			tool: listFilesTool(ws),
			good: []string{`{}`, `{"path":"src","recursive":true,"max_entries":10}`},
			bad:  []string{`{"path":""}`, `{"max_entries":0}`, `{"max_entries":10001}`, `{"recursive":1}`},
		},
	}
	for _, c := range cases {
		tool := c.tool
		s, err := toolspec.Compile(tool.Spec.Parameters)
		if err != nil {
			t.Fatalf("%s: %v", tool.Spec.Name, err)
		}
		for _, g := range c.good {
			if err := s.Validate(json.RawMessage(g)); err != nil {
				t.Errorf("%s: schema rejects %s: %v", tool.Spec.Name, g, err)
			}
		}
		for _, b := range c.bad {
			if err := s.Validate(json.RawMessage(b)); err == nil {
				t.Errorf("%s: schema accepts %s", tool.Spec.Name, b)
			}
		}
	}
}

func TestUnknownToolCall(t *testing.T) {
	p, err := New(Options{Enable: []string{"current_time"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.CallTool(context.Background(), sdk.CallToolRequest{Name: "calculator", Arguments: json.RawMessage(`{"expression":"1"}`)})
	if err == nil {
		t.Fatal("calling a tool that was not enabled succeeded")
	}
}
