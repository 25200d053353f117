package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

type greetArgs struct {
	Name   string   `json:"name" jsonschema:"who to greet"`
	Times  int      `json:"times,omitempty" jsonschema:"how many times"`
	Tags   []string `json:"tags,omitempty"`
	Nested struct {
		Loud bool `json:"loud"`
	} `json:"nested,omitzero"`
}

type greeting struct {
	Text string `json:"text"`
}

func greet(_ context.Context, in greetArgs) (greeting, error) {
	if in.Name == "nobody" {
		return greeting{}, errors.New("there is nobody to greet")
	}
	text := "hello " + in.Name
	if in.Nested.Loud {
		text = strings.ToUpper(text)
	}
	parts := make([]string, max(in.Times, 1))
	for i := range parts {
		parts[i] = text
	}
	return greeting{Text: strings.Join(parts, " ")}, nil
}

func TestNewToolSchema(t *testing.T) {
	tool, err := sdk.NewTool("greet", "Greet someone.", greet)
	if err != nil {
		t.Fatal(err)
	}
	if ps := toolspec.Check(tool.Spec); len(ps) > 0 {
		t.Fatalf("spec fails toolspec.Check: %v", ps)
	}
	want := `{"type":"object","properties":{` +
		`"name":{"type":"string","description":"who to greet"},` +
		`"times":{"type":"integer","description":"how many times"},` +
		`"tags":{"type":["null","array"],"items":{"type":"string"}},` +
		`"nested":{"type":"object","properties":{"loud":{"type":"boolean"}},"required":["loud"],"additionalProperties":false}},` +
		`"required":["name"],"additionalProperties":false}`
	if got := string(tool.Spec.Parameters); got != want {
		t.Errorf("schema:\n got %s\nwant %s", got, want)
	}
	if tool.Spec.Name != "greet" || tool.Spec.Description != "Greet someone." {
		t.Errorf("spec: %+v", tool.Spec)
	}
}

func TestNewToolSchemaChecks(t *testing.T) {
	cases := []struct {
		name string
		new  func() (sdk.Tool, error)
		want string
	}{
		{"pointer to struct", func() (sdk.Tool, error) {
			return sdk.NewTool("p", "", func(context.Context, *greetArgs) (string, error) { return "", nil })
		}, ""},
		{"empty struct", func() (sdk.Tool, error) {
			return sdk.NewTool("e", "", func(context.Context, struct{}) (string, error) { return "", nil })
		}, ""},
		{"string", func() (sdk.Tool, error) {
			return sdk.NewTool("s", "", func(context.Context, string) (string, error) { return "", nil })
		}, "must be a struct or a pointer to a struct"},
		{"map", func() (sdk.Tool, error) {
			return sdk.NewTool("m", "", func(context.Context, map[string]any) (string, error) { return "", nil })
		}, "must be a struct or a pointer to a struct"},
		{"unsupported field", func() (sdk.Tool, error) {
			return sdk.NewTool("c", "", func(context.Context, struct{ C chan int }) (string, error) { return "", nil })
		}, "unsupported"},
		{"bad name", func() (sdk.Tool, error) {
			return sdk.NewTool("no spaces", "", greet)
		}, "name must match"},
		{"nil fn", func() (sdk.Tool, error) {
			return sdk.NewTool[greetArgs, greeting]("n", "", nil)
		}, "nil function"},
		{"property missing", func() (sdk.Tool, error) {
			return sdk.NewTool("greet", "", greet, sdk.WithProperty("nmae", `{"minLength": 1}`))
		}, `WithProperty("nmae"): no such property (properties: name, times, tags, nested)`},
		{"keywords not an object", func() (sdk.Tool, error) {
			return sdk.NewTool("greet", "", greet, sdk.WithProperty("name", `["x"]`))
		}, "keywords must be a JSON object"},
		{"bad pattern", func() (sdk.Tool, error) {
			return sdk.NewTool("greet", "", greet, sdk.WithProperty("name", `{"pattern": "("}`))
		}, "pattern"},
		{"default breaks the schema", func() (sdk.Tool, error) {
			return sdk.NewTool("greet", "", greet, sdk.WithProperty("times", `{"maximum": 3, "default": 5}`))
		}, `WithProperty("times", {"maximum": 3, "default": 5}): its default does not pass its own schema: maximum`},
		{"keyword of the wrong type", func() (sdk.Tool, error) {
			return sdk.NewTool("greet", "", greet, sdk.WithProperty("times", `{"minimum": "one"}`))
		}, `WithProperty("times", {"minimum": "one"}): "minimum" must be a number, not a string`},
		{"enum not an array", func() (sdk.Tool, error) {
			return sdk.NewTool("greet", "", greet, sdk.WithProperty("name", `{"enum": "Ada"}`))
		}, `"enum" must be an array, not a string`},
		{"option changes the root type", func() (sdk.Tool, error) {
			return sdk.NewTool("greet", "", greet, sdk.WithSchema(func(s *jsonschema.Schema) error { s.Type = "array"; return nil }))
		}, `"type": "object"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tool, err := c.new()
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if ps := toolspec.Check(tool.Spec); len(ps) > 0 {
					t.Fatalf("spec fails toolspec.Check: %v\n%s", ps, tool.Spec.Parameters)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestWithProperty(t *testing.T) {
	tool := sdk.MustTool("greet", "Greet someone.", greet,
		sdk.WithProperty("name", `{"minLength": 1, "description": "the person's name"}`),
		sdk.WithProperty("times", `{"minimum": 1, "maximum": 3}`))
	if ps := toolspec.Check(tool.Spec); len(ps) > 0 {
		t.Fatalf("spec fails toolspec.Check: %v", ps)
	}
	var s struct {
		Properties map[string]map[string]any
	}
	if err := json.Unmarshal(tool.Spec.Parameters, &s); err != nil {
		t.Fatal(err)
	}
	if got := s.Properties["name"]; got["minLength"] != 1.0 || got["description"] != "the person's name" || got["type"] != "string" {
		t.Errorf("name: %v", got)
	}
	if got := s.Properties["times"]; got["minimum"] != 1.0 || got["maximum"] != 3.0 || got["description"] != "how many times" {
		t.Errorf("times: %v", got)
	}
	// The host validates against the refined schema.
	schema, err := toolspec.Compile(tool.Spec.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(json.RawMessage(`{"name": "ada", "times": 4}`)); err == nil || !strings.Contains(err.Error(), "/times") {
		t.Errorf("times 4 validated: %v", err)
	}
}

func TestMustToolPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(error).Error(), "must be a struct") {
			t.Errorf("recovered %v", r)
		}
	}()
	sdk.MustTool("bad", "", func(context.Context, int) (int, error) { return 0, nil })
}

func TestNewToolCall(t *testing.T) {
	p := sdk.MustTools("t", "1", sdk.MustTool("greet", "Greet someone.", greet),
		sdk.MustTool("pgreet", "Greet through a pointer.", func(ctx context.Context, in *greetArgs) (*greeting, error) {
			g, err := greet(ctx, *in)
			return &g, err
		}))
	cases := []struct {
		tool, args string
		want       string
		isError    bool
	}{
		{"greet", `{"name": "ada"}`, `{"text":"hello ada"}`, false},
		{"greet", `{"name": "ada", "times": 2, "nested": {"loud": true}}`, `{"text":"HELLO ADA HELLO ADA"}`, false},
		{"greet", ` {"name": "ada"} `, `{"text":"hello ada"}`, false},
		{"pgreet", `{"name": "ada"}`, `{"text":"hello ada"}`, false},
		{"pgreet", ``, `{"text":"hello "}`, false},
		{"greet", `{"name": "nobody"}`, `"there is nobody to greet"`, true},
		{"greet", `{"name": "ada", "colour": "red"}`, `"invalid arguments: colour: unknown key"`, true},
		{"greet", `{"name": "ada", "nested": {"loud": true, "x": 1}}`, `"invalid arguments: nested.x: unknown key"`, true},
		{"greet", `{"name": 7}`, `"invalid arguments: name: must be a string, got number"`, true},
		{"greet", `{"name": "ada", "times": 1.5}`, `"invalid arguments: times: must be an integer, got number 1.5"`, true},
		{"greet", `{"name": "ada", "nested": {"loud": "yes"}}`, `"invalid arguments: nested.loud: must be true or false, got string"`, true},
		{"greet", `{"name": "ada", "tags": "a"}`, `"invalid arguments: tags: must be an array, got string"`, true},
		{"greet", `["ada"]`, `"invalid arguments: they must be a JSON object"`, true},
		{"pgreet", `null`, `"invalid arguments: they must be a JSON object"`, true},
		{"greet", `{"name": "ada"} {}`, `"invalid arguments: unexpected data after the JSON value"`, true},
		{"greet", `{"name": "ada"`, `"invalid arguments: invalid JSON: the text ends before the JSON value does"`, true},
		{"greet", `{"name": "ada", "name": "eve"}`, `"invalid arguments: name: duplicate key: JSON readers disagree on which value wins, so send each key once"`, true},
		{"greet", `{"Name": "ada"}`, `"invalid arguments: Name: unknown key (keys are case-sensitive: did you mean \"name\"?)"`, true},
		{"greet", `{"name": "ada", "nested": {"LOUD": true}}`, `"invalid arguments: nested.LOUD: unknown key (keys are case-sensitive: did you mean \"loud\"?)"`, true},
	}
	for _, c := range cases {
		resp, err := p.CallTool(context.Background(), sdk.CallToolRequest{Name: c.tool, Arguments: json.RawMessage(c.args)})
		if err != nil {
			t.Errorf("%s %s: %v", c.tool, c.args, err)
			continue
		}
		if string(resp.Content) != c.want || resp.IsError != c.isError {
			t.Errorf("%s %s:\n got %s (is_error %v)\nwant %s (is_error %v)", c.tool, c.args, resp.Content, resp.IsError, c.want, c.isError)
		}
	}
}

func TestNewToolContext(t *testing.T) {
	type key struct{}
	tool := sdk.MustTool("ctx", "Read the context.", func(ctx context.Context, _ struct{}) (string, error) {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		return ctx.Value(key{}).(string), nil
	})
	ctx := context.WithValue(context.Background(), key{}, "value")
	resp, err := tool.Handler.CallTool(ctx, sdk.CallToolRequest{Name: "ctx", Arguments: json.RawMessage(`{}`)})
	if err != nil || string(resp.Content) != `"value"` {
		t.Errorf("got %s, %v", resp.Content, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	// A tool failing because its caller gave up is a cancelled call, not an
	// error result for a model that is no longer listening.
	resp, err = tool.Handler.CallTool(ctx, sdk.CallToolRequest{Name: "ctx", Arguments: json.RawMessage(`{}`)})
	if !errors.Is(err, context.Canceled) || resp.Content != nil {
		t.Errorf("cancelled: %s, %v; want context.Canceled", resp.Content, err)
	}
}

type listArgs struct {
	Cities []string       `json:"cities"`
	Note   *string        `json:"note"`
	Extra  []string       `json:"extra,omitempty"`
	Stops  []stopArgs     `json:"stops"`
	Limits map[string]int `json:"limits,omitempty"`
}

type stopArgs struct {
	Tags []string `json:"tags"`
}

// A required slice refuses null, checked by the host's own validator; a
// pointer and an optional slice admit it; WithProperty can allow it.
func TestNewToolRequiredSliceRefusesNull(t *testing.T) {
	var got []listArgs
	tool := sdk.MustTool("route", "Plan a route.", func(_ context.Context, in listArgs) (string, error) {
		got = append(got, in)
		return "ok", nil
	})
	schema, err := toolspec.Compile(tool.Spec.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{
		`{"cities": null, "note": null, "stops": []}`,
		`{"cities": [], "note": null, "stops": [{"tags": null}]}`,
	} {
		if err := schema.Validate(json.RawMessage(args)); err == nil || !strings.Contains(err.Error(), "expected array, but got null") {
			t.Errorf("%s: the host's check says %v, want null refused", args, err)
		}
	}
	ok := `{"cities": ["Paris"], "note": null, "extra": null, "stops": [{"tags": []}]}`
	if err := schema.Validate(json.RawMessage(ok)); err != nil {
		t.Errorf("%s: %v", ok, err)
	}

	nullable := sdk.MustTool("route", "Plan a route.", func(context.Context, listArgs) (string, error) { return "", nil },
		sdk.WithProperty("cities", `{"type": ["null", "array"]}`))
	schema, err = toolspec.Compile(nullable.Spec.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(json.RawMessage(`{"cities": null, "note": null, "stops": []}`)); err != nil {
		t.Errorf("the author allowed null, the host refuses it: %v", err)
	}
}

// NewTool refuses what the host's validator refuses, even when
// jsonschema-go accepts it.
func TestNewToolUsesTheHostsValidator(t *testing.T) {
	_, err := sdk.NewTool("greet", "", greet, sdk.WithProperty("name", `{"minLength": -1}`))
	if err == nil || !strings.Contains(err.Error(), "the host would refuse it") || !strings.Contains(err.Error(), "minLength") {
		t.Fatalf("err = %v, want the host validator's refusal of minLength", err)
	}
}
