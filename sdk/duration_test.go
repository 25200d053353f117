package sdk_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

type timeouts struct {
	Timeout sdk.Duration            `json:"timeout,omitzero"`
	Tools   map[string]sdk.Duration `json:"tool_timeouts,omitempty"`
}

// A duration written by either JSON package reads back exactly with the
// strict decoder plugins use, down to the nanosecond and up to the largest.
func TestDurationRoundTrip(t *testing.T) {
	for _, d := range []time.Duration{time.Nanosecond, 1500 * time.Millisecond, 90 * time.Second, time.Hour + time.Nanosecond, math.MaxInt64} {
		in := timeouts{Timeout: sdk.Duration(d), Tools: map[string]sdk.Duration{"slow": sdk.Duration(d)}}
		raw, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var out timeouts
		if err := sdk.UnmarshalStrict(raw, &out); err != nil || out.Timeout != in.Timeout || out.Tools["slow"] != in.Tools["slow"] {
			t.Errorf("%v: %s read back as %+v, %v", d, raw, out, err)
		}
	}
	raw, err := json.Marshal(timeouts{Timeout: sdk.Duration(90 * time.Second)})
	if err != nil || string(raw) != `{"timeout":"1m30s"}` {
		t.Errorf("got %s, %v; want the config's spelling", raw, err)
	}
	if raw, _ := json.Marshal(timeouts{}); string(raw) != `{}` {
		t.Errorf("zero: got %s, want it left out", raw)
	}
	var out timeouts
	if err := sdk.UnmarshalStrict([]byte(`{"timeout": "0s"}`), &out); err != nil || out.Timeout != 0 {
		t.Errorf(`"0s": %v, %v`, out.Timeout, err)
	}
}

// A bare number, a negative duration and text that is no duration are each
// refused, with the key and what to write instead, by the strict decoder
// and by encoding/json alike.
func TestDurationRefusals(t *testing.T) {
	for in, want := range map[string]string{
		`{"timeout": 30}`:                   "timeout: must be a string, got number",
		`{"timeout": 1.5}`:                  "timeout: must be a string, got number",
		`{"timeout": true}`:                 "timeout: must be a string, got bool",
		`{"tool_timeouts": {"slow": 5000}}`: "tool_timeouts.slow: must be a string, got number",
		`{"timeout": "-1s"}`:                `timeout: must not be negative, got "-1s"`,
		`{"tool_timeouts": {"a": "-5m"}}`:   `tool_timeouts.a: must not be negative, got "-5m"`,
		`{"timeout": "30"}`:                 `timeout: "30" is not a duration: use a number with a unit, such as "30s", "1m30s" or "500ms"`,
		`{"timeout": "soon"}`:               `timeout: "soon" is not a duration: use a number with a unit, such as "30s", "1m30s" or "500ms"`,
		`{"timeout": ""}`:                   `timeout: "" is not a duration: use a number with a unit, such as "30s", "1m30s" or "500ms"`,
		`{"timeout": "9999999999h"}`:        `timeout: "9999999999h" is not a duration: use a number with a unit, such as "30s", "1m30s" or "500ms"`,
	} {
		var out timeouts
		if err := sdk.UnmarshalStrict([]byte(in), &out); err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", in, err, want)
		}
	}
	var d sdk.Duration
	if err := json.Unmarshal([]byte(`"-1s"`), &d); err == nil || err.Error() != `must not be negative, got "-1s"` {
		t.Errorf("encoding/json: %v", err)
	}
	if err := json.Unmarshal([]byte(`30`), &d); err == nil || d != 0 {
		t.Errorf("encoding/json took 30 as %v", d)
	}
}

// A Duration in typed arguments (or options: the same derivation) is a
// string of DurationPattern in the schema the host validates against, so a
// number is refused there, before the tool runs, and a duration reaches
// the tool whole.
func TestDurationSchema(t *testing.T) {
	type waitArgs struct {
		For sdk.Duration `json:"for" jsonschema:"how long to wait"`
	}
	tool := sdk.MustTool("wait", "Wait.", func(_ context.Context, in waitArgs) (string, error) { return in.For.String(), nil })
	var s struct {
		Properties map[string]map[string]any
	}
	if err := json.Unmarshal(tool.Spec.Parameters, &s); err != nil {
		t.Fatal(err)
	}
	if got := s.Properties["for"]; got["type"] != "string" || got["pattern"] != sdk.DurationPattern || got["description"] != "how long to wait" {
		t.Errorf("for: %v", got)
	}
	schema, err := toolspec.Compile(tool.Spec.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	for args, ok := range map[string]bool{`{"for": "1m30s"}`: true, `{"for": "0s"}`: true, `{"for": ".5h"}`: true,
		`{"for": 90}`: false, `{"for": "-1s"}`: false, `{"for": "90"}`: false, `{"for": "soon"}`: false} {
		if err := schema.Validate(json.RawMessage(args)); (err == nil) != ok {
			t.Errorf("%s: valid %v, want %v (%v)", args, err == nil, ok, err)
		}
	}
	p := sdk.MustTools("t", "1", tool)
	resp, err := p.CallTool(context.Background(), sdk.CallToolRequest{Name: "wait", Arguments: json.RawMessage(`{"for": "1m30s"}`)})
	if err != nil || string(resp.Content) != `"1m30s"` {
		t.Errorf("call: %s, %v", resp.Content, err)
	}
}
