package builtin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/toolspec"
	"github.com/tenxgraph/tenxgraph/sdk"
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
	cases := []struct {
		enable []string
		want   []string
	}{
		{[]string{"calc"}, []string{`unknown tool "calc"`, "known tools: calculator, current_time, http_fetch, list_files, read_file, write_file"}},
		{[]string{"calculator", "calculator"}, []string{`tool "calculator" is enabled twice`}},
		{[]string{"http_fetch"}, []string{`tool "http_fetch" is not implemented yet`, "available now: calculator, current_time"}},
		{[]string{"read_file", "nope"}, []string{`"read_file" is not implemented yet`, `unknown tool "nope"`}},
	}
	for _, c := range cases {
		p, err := New(Options{Enable: c.enable})
		if err == nil {
			t.Errorf("New(%v): no error", c.enable)
			continue
		}
		if p != nil {
			t.Errorf("New(%v): non-nil provider with an error", c.enable)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("New(%v) error %q does not contain %q", c.enable, err, w)
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
