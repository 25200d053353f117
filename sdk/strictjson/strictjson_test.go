package strictjson_test

import (
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

type inner struct {
	Loud bool `json:"loud"`
	N    int  `json:"n"`
}

// block decodes itself with the package, as message blocks do.
type block struct{ Text string }

func (b *block) UnmarshalJSON(data []byte) error {
	var w struct {
		Text string `json:"text"`
	}
	if err := strictjson.Unmarshal(data, &w); err != nil {
		return err
	}
	if w.Text == "" {
		return errors.New("text: missing")
	}
	b.Text = w.Text
	return nil
}

type req struct {
	Input struct {
		Messages []json.RawMessage `json:"messages"`
	} `json:"input"`
	Config map[string]json.RawMessage `json:"config"`
	Nested inner                      `json:"nested"`
	List   []inner                    `json:"list"`
	M      map[string]inner           `json:"m"`
	Blocks []block                    `json:"blocks"`
	Addr   netip.Addr                 `json:"addr"`
}

// Every rule gives an *Error whose text names the path and the problem.
func TestUnmarshalErrors(t *testing.T) {
	const dup = "duplicate key: JSON readers disagree on which value wins, so send each key once"
	for in, want := range map[string]string{
		``:                               "empty: want a JSON value",
		`{"input": `:                     "invalid JSON: the text ends before the JSON value does",
		`{"input": }`:                    "input: invalid JSON at byte 11: missing value after object name",
		`hello`:                          "invalid JSON at byte 1: invalid character 'h' at start of value",
		`{} {}`:                          "unexpected data after the JSON value",
		`{"input": {}} x`:                "unexpected data after the JSON value",
		`[]`:                             "must be an object, got array",
		`true`:                           "must be an object, got bool",
		`{"input": {"messages": {}}}`:    "input.messages: must be an array, got object",
		`{"nested": {"loud": "yes"}}`:    "nested.loud: must be true or false, got string",
		`{"nested": {"n": 1.5}}`:         "nested.n: must be an integer, got number 1.5",
		`{"m": {"0": {"n": "a"}}}`:       "m.0.n: must be an integer, got string",
		`{"m": {"a b": {"n": "a"}}}`:     `m["a b"].n: must be an integer, got string`,
		`{"inputs": 1}`:                  "inputs: unknown key",
		`{"list": [{"n": 1}, {"x": 1}]}`: "list[1].x: unknown key",
		`{"Input": {}}`:                  `Input: unknown key (keys are case-sensitive: did you mean "input"?)`,
		`{"input": {"Messages": []}}`:    `input.Messages: unknown key (keys are case-sensitive: did you mean "messages"?)`,
		`{"nested": {"LOUD": true}}`:     `nested.LOUD: unknown key (keys are case-sensitive: did you mean "loud"?)`,
		`{"input": {}, "input": {}}`:     "input: " + dup,
		`{"config": {"a": 1, "a": 2}}`:   "config.a: " + dup,
		`{"m": {"k": {}, "k": {}}}`:      "m.k: " + dup,
		`{"input": {"messages": [{"role": "user", "role": "x"}]}}`: "input.messages[0].role: " + dup,
		"{\"input\": {\"messages\": [\"\xff\"]}}":                  "input.messages[0]: invalid UTF-8 at byte 26: JSON text must be UTF-8",
		"{\"config\": {\"k\": \"a\xc3\"}}":                         "config.k: invalid UTF-8 at byte 20: JSON text must be UTF-8",
		`{"blocks": [{"text": "a"}, {"text": ""}]}`:                "blocks[1]: text: missing",
		`{"blocks": [{"text": "a"}, {"text": "b", "bold": true}]}`: "blocks[1].bold: unknown key",
		`{"blocks": [{"text": "a"}, {"Text": "b"}]}`:               `blocks[1].Text: unknown key (keys are case-sensitive: did you mean "text"?)`,
		`{"addr": 1}`:     "addr: must be a string, got number",
		`{"addr": [1]}`:   "addr: must be a string, got array",
		`{"addr": "::x"}`: `addr: ParseAddr("::x"): each colon-separated field must have at least one digit (at "x")`,
	} {
		var v req
		err := strictjson.Unmarshal([]byte(in), &v)
		var se *strictjson.Error
		if !errors.As(err, &se) {
			t.Errorf("%s: got %v (%T), want an *Error", in, err, err)
			continue
		}
		if err.Error() != want {
			t.Errorf("%s:\n got %q\nwant %q", in, err, want)
		}
	}
}

// A valid value decodes, and exact keys are matched.
func TestUnmarshalValid(t *testing.T) {
	var v req
	in := `{"input": {"messages": [{"role": "user"}]}, "config": {"thread_id": "t"}, "nested": {"loud": true, "n": 3}, "blocks": [{"text": "hi"}]}`
	if err := strictjson.Unmarshal([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Input.Messages) != 1 || string(v.Config["thread_id"]) != `"t"` || !v.Nested.Loud || v.Nested.N != 3 || v.Blocks[0].Text != "hi" {
		t.Fatalf("decoded %+v", v)
	}
}

// Check applies the syntax rules to raw values, at any depth.
func TestCheck(t *testing.T) {
	for in, want := range map[string]string{
		`{"a": 1}`:                            "",
		`{"a": {"b": [1, {"c": 2, "c": 3}]}}`: "a.b[1].c: duplicate key: JSON readers disagree on which value wins, so send each key once",
		"{\"a\": \"\xed\xa0\x80\"}":           "a: invalid UTF-8 at byte 8: JSON text must be UTF-8",
		`{"a": 1} 2`:                          "unexpected data after the JSON value",
		`{"A": 1, "a": 2}`:                    "",
	} {
		err := strictjson.Check([]byte(in))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("%s:\n got %q\nwant %q", in, got, want)
		}
	}
}

// At places an error found in a part at the part's path.
func TestAt(t *testing.T) {
	var v inner
	err := strictjson.At("input.messages[3]", strictjson.Unmarshal([]byte(`{"loud": 1}`), &v))
	if err.Error() != "input.messages[3].loud: must be true or false, got number" {
		t.Fatal(err)
	}
	if err := strictjson.At("x", errors.New("role: missing")); err.Error() != "x: role: missing" {
		t.Fatal(err)
	}
}

// Decode gives what encoding/json's Decoder gives with UseNumber, numbers
// kept as their text, for every kind of value and at every depth.
func TestDecodeAsUseNumber(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `null`, `true`, `"s"`, `0`, `-1.50e+10`,
		`{"a":1,"b":[1,2.5,{"c":null}],"d":"\u00e9\ud83d\ude00","e":{"f":true,"g":false}}`,
		`{"big":123456789012345678901234567890,"tiny":1e-400,"neg":-0,"int":9007199254740993}`,
		` [ [ [ 1 ] , { "x" : [ ] } ] ] `,
	} {
		got, err := strictjson.Decode([]byte(in))
		if err != nil {
			t.Fatalf("Decode(%s): %v", in, err)
		}
		dec := json.NewDecoder(strings.NewReader(in))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Decode(%s) = %#v, want %#v", in, got, want)
		}
	}
}

// Decode refuses what Check refuses, with the same error.
func TestDecodeRefusesAsCheck(t *testing.T) {
	for _, in := range []string{`{"a":1,"a":2}`, "{\"a\":\"\xff\"}", `{"a":1} x`, `[1,]`, ``, strings.Repeat("[", strictjson.MaxDepth+1)} {
		_, err := strictjson.Decode([]byte(in))
		want := strictjson.Check([]byte(in))
		if err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("Decode(%q): %v, want Check's %v", in, err, want)
		}
	}
}
