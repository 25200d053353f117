package toolspec

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCompileAndValidate(t *testing.T) {
	s, err := Compile(json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1}},"required":["city"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(json.RawMessage(`{"city":"Paris","days":2}`)); err != nil {
		t.Fatalf("valid arguments refused: %v", err)
	}
	for args, want := range map[string]string{
		`{"days":2}`:             "missing properties",
		`{"city":"P","days":0}`:  "at /days",
		`{"city":"P","extra":1}`: "extra",
		`{"city":5}`:             "at /city",
		`[1]`:                    "expected object",
		`{"city":"P"} trailing`:  "not valid JSON",
		`{"city":`:               "not valid JSON",
	} {
		err := s.Validate(json.RawMessage(args))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error mentioning %q", args, err, want)
		}
	}
	// No parameters: a tool without arguments, which accepts an empty object.
	empty, err := Compile(nil)
	if err != nil || empty.Validate(nil) != nil {
		t.Fatalf("empty schema: %v", err)
	}
}

func TestCompileRefusals(t *testing.T) {
	for schema, want := range map[string]string{
		`{"type":"array"}`:  `"type": "object"`,
		`{"properties":{}}`: "no type",
		`[]`:                "JSON Schema object",
		`{"type":"object","properties":{"a":{"type":"bogus"}}}`: "not a valid JSON Schema",
		`{"type":"object","$ref":"http://example.com/s.json"}`:  "self-contained",
		`{"type":"object",`: "not valid JSON",
	} {
		_, err := Compile(json.RawMessage(schema))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error mentioning %q", schema, err, want)
		}
	}
}

func TestParseRunTool(t *testing.T) {
	flat, ps := ParseRunTool(json.RawMessage(`{"name":"a","description":"d","parameters":{"type":"object","properties":{}}}`))
	openai, ps2 := ParseRunTool(json.RawMessage(`{"type":"function","function":{"name":"a","description":"d","parameters":{"type":"object","properties":{}},"strict":true}}`))
	if len(ps) > 0 || len(ps2) > 0 || flat.Name != "a" || openai.Name != "a" || string(flat.Parameters) != string(openai.Parameters) {
		t.Fatalf("the two shapes differ: %+v %v / %+v %v", flat, ps, openai, ps2)
	}
	for raw, paths := range map[string][]string{
		`{"name":"bad name"}`:                                     {"name"},
		`{"name":"a","colour":1}`:                                 {"colour"},
		`{"type":"function","function":{"name":"a","x":1},"y":2}`: {"function.x", "y"},
		`{"type":"tool","function":{}}`:                           {"type"},
		`{"name":"a","parameters":{"type":"string"}}`:             {"parameters"},
		`{"name":"a","strict":true}`:                              {"strict"},
		`5`:                                                       {""},
	} {
		_, ps := ParseRunTool(json.RawMessage(raw))
		var got []string
		for _, p := range ps {
			got = append(got, p.Path)
		}
		if strings.Join(got, ",") != strings.Join(paths, ",") {
			t.Errorf("%s: problems at %v, want %v (%v)", raw, got, paths, ps)
		}
	}
	_, err := ParseRunTools([]json.RawMessage{json.RawMessage(`{"name":"a"}`), json.RawMessage(`{"name":"a"}`)})
	if err == nil || !strings.Contains(err.Error(), "remote_tools[1].name") {
		t.Fatalf("duplicate per-run tools: %v", err)
	}
}

// Arguments with a key twice, or that are not UTF-8, are refused before the
// schema sees them: a validator reading the last "path" would pass what a
// tool reading the first one does differently.
func TestValidateRefusesDuplicateKeysAndBadUTF8(t *testing.T) {
	s, err := Compile(json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string", "pattern": "^safe/"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(json.RawMessage(`{"path": "safe/a"}`)); err != nil {
		t.Fatalf("valid arguments: %v", err)
	}
	for args, want := range map[string]string{
		`{"path": "../etc/passwd", "path": "safe/a"}`: "path: duplicate key",
		"{\"path\": \"safe/\xff\"}":                   "path: invalid UTF-8",
	} {
		err := s.Validate(json.RawMessage(args))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", args, err, want)
		}
	}
}

// CheckValue lists every problem of a value at its own path under the
// prefix: unknown keys at the key, with the allowed ones; values at their
// property, through objects and arrays.
func TestCheckValue(t *testing.T) {
	s, err := Compile(json.RawMessage(`{"type":"object","additionalProperties":false,"required":["city"],
		"properties":{"city":{"type":"string"},"units":{"enum":["metric","imperial"]},
		"stations":{"type":"array","items":{"type":"object","additionalProperties":false,"properties":{"id":{"type":"integer","minimum":1}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if ps := CheckValue(s, "plugins[0].options", json.RawMessage(`{"city":"Paris","stations":[{"id":2}]}`)); len(ps) != 0 {
		t.Fatalf("valid options refused: %v", ps)
	}
	got := CheckValue(s, "plugins[0].options", json.RawMessage(`{"unit":"kelvin","units":"kelvin","stations":[{"id":0},{"idd":1}]}`))
	want := []string{
		`plugins[0].options: missing properties: 'city'`,
		`plugins[0].options.unit: unknown key: did you mean "units"? (allowed: city, stations, units)`,
		`plugins[0].options.units: value must be one of "metric", "imperial"`,
		`plugins[0].options.stations[0].id: must be >= 1 but found 0`,
		`plugins[0].options.stations[1].idd: unknown key: did you mean "id"? (allowed: id)`,
	}
	lines := strings.Split(got.Error(), "\n")
	for _, w := range want {
		found := false
		for _, l := range lines {
			found = found || l == w
		}
		if !found {
			t.Errorf("no problem %q in:\n%s", w, got.Error())
		}
	}
	if len(lines) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(lines), len(want), got.Error())
	}
	if got := CheckValue(s, "options", json.RawMessage(`{"city":"P"} x`)).Error(); !strings.Contains(got, "options: not valid JSON") {
		t.Errorf("trailing data: %q", got)
	}
}
