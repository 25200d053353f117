package sdk

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tenxgraph/tenxgraph/sdk/internal/schema"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// NewTool builds a Tool from a typed function: the parameters schema is
// derived from In, the arguments are decoded into an In, and fn's Out is
// encoded as the result. It is Func without the JSON plumbing:
//
//	type weatherArgs struct {
//		City  string `json:"city" jsonschema:"the city name"`
//		Units string `json:"units,omitempty" jsonschema:"metric or imperial"`
//	}
//
//	tool, err := sdk.NewTool("current_weather", "Get the current weather in a city.",
//		func(ctx context.Context, in weatherArgs) (Weather, error) { ... })
//
// The schema follows github.com/google/jsonschema-go, as the official MCP
// Go SDK does: properties are In's exported fields under their JSON names,
// a field is required unless its json tag says omitempty or omitzero, a
// jsonschema tag is the property's description, and unknown properties are
// not allowed. In must be a struct or a pointer to one, since tool
// arguments are always a JSON object. Use opts, such as WithProperty, for
// what a Go type cannot say: allowed values, ranges, patterns.
//
// A required slice field refuses null (jsonschema-go would allow it, and
// the tool would receive nil); a pointer field admits null. The schema is
// built once, here, and checked with the validator the host uses
// (santhosh-tekuri/jsonschema), so a tool NewTool accepts is one the host
// loads. At call time the arguments
// are decoded strictly: an unknown field, or a value of the wrong JSON type,
// gives an error result naming the field, without calling fn. The host has
// already validated the arguments against the schema, so this only guards
// against a caller that did not. An error from fn becomes an error result
// the model reads (see ErrorResult), as with Func.
func NewTool[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error), opts ...ToolOption) (Tool, error) {
	switch {
	case !ToolNamePattern.MatchString(name):
		return Tool{}, fmt.Errorf("tool %q: name must match %s", name, ToolNamePattern)
	case fn == nil:
		return Tool{}, fmt.Errorf("tool %q: nil function", name)
	}
	var b toolBuild
	params, err := typedSchema[In](&b, opts)
	if err != nil {
		return Tool{}, fmt.Errorf("tool %q: %w", name, err)
	}
	t := Func(name, description, params, func(ctx context.Context, args json.RawMessage) (any, error) {
		in, err := decodeArgs[In](args)
		if err != nil {
			return nil, err
		}
		return fn(ctx, in)
	})
	t.Spec.RequiresApproval = b.requiresApproval
	return t, nil
}

// MustTool is NewTool for tools defined at package level; it panics on an
// invalid tool, at init time, where the mistake is found at once.
func MustTool[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error), opts ...ToolOption) Tool {
	t, err := NewTool(name, description, fn, opts...)
	if err != nil {
		panic(err)
	}
	return t
}

// ToolOption refines the tool NewTool builds: its parameters schema, before
// it is checked and frozen (WithProperty for the usual needs, WithSchema for
// anything else), or its spec (RequiresApproval).
type ToolOption func(t *toolBuild) error

// toolBuild is what options refine while NewTool builds a tool.
type toolBuild struct {
	schema           *jsonschema.Schema
	requiresApproval bool
}

// RequiresApproval marks the tool as one a person approves before each
// call: for a tool that acts on the world in ways hard to undo (sending,
// deleting, paying). The host pauses the run with an approval request
// before every call, and runs the tool only once it is approved; an
// operator can require approval of more tools, never of fewer. It sets
// ToolSpec.RequiresApproval, which a tool built with Func sets itself.
func RequiresApproval() ToolOption {
	return func(t *toolBuild) error {
		t.requiresApproval = true
		return nil
	}
}

// WithSchema changes the parameters schema NewTool derives from In with
// edit, for what WithProperty cannot say, using
// github.com/google/jsonschema-go. The result is checked as any other.
func WithSchema(edit func(schema *jsonschema.Schema) error) ToolOption {
	return func(t *toolBuild) error { return edit(t.schema) }
}

// WithProperty merges JSON Schema keywords, given as a JSON object, into
// the schema of the top-level property name (its JSON name), replacing
// keywords already there. It says what a Go type cannot:
//
//	sdk.WithProperty("units", `{"enum": ["metric", "imperial"]}`)
//	sdk.WithProperty("days", `{"minimum": 1, "maximum": 7}`)
//
// The host validates every call against the result, so the tool's function
// sees only allowed values and the model is told precisely what was wrong.
// A property In does not have, or keywords that are not a JSON object, make
// NewTool fail.
func WithProperty(name, keywords string) ToolOption {
	return WithSchema(func(s *jsonschema.Schema) error {
		prop, ok := s.Properties[name]
		if !ok {
			return fmt.Errorf("WithProperty(%q): no such property (properties: %s)", name, strings.Join(s.PropertyOrder, ", "))
		}
		var add map[string]json.RawMessage
		if err := json.Unmarshal([]byte(keywords), &add); err != nil || add == nil {
			return fmt.Errorf("WithProperty(%q): keywords must be a JSON object such as {\"minimum\": 1}", name)
		}
		raw, err := json.Marshal(prop)
		if err != nil {
			return fmt.Errorf("WithProperty(%q): %w", name, err)
		}
		var merged map[string]json.RawMessage
		if err := json.Unmarshal(raw, &merged); err != nil {
			return fmt.Errorf("WithProperty(%q): %w", name, err)
		}
		for k, v := range add {
			merged[k] = v
		}
		if raw, err = json.Marshal(merged); err != nil {
			return fmt.Errorf("WithProperty(%q): %w", name, err)
		}
		next := new(jsonschema.Schema)
		if err := json.Unmarshal(raw, next); err != nil {
			return fmt.Errorf("WithProperty(%q, %s): %w", name, keywords, keywordError(err))
		}
		if _, err := next.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
			return fmt.Errorf("WithProperty(%q, %s): %w", name, keywords, keywordError(err))
		}
		s.Properties[name] = next
		return nil
	})
}

// keywordError says what is wrong with a keyword in JSON Schema's words
// ("minimum" must be a number), not in those of the Go types
// jsonschema-go decodes it into.
func keywordError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		// jsonschema-go's own words, without the name of its Go type.
		msg := strings.TrimPrefix(err.Error(), "jsonschema.Schema: ")
		msg = strings.TrimPrefix(msg, "<anonymous schema>: ")
		if rest, ok := strings.CutPrefix(msg, "validating root: "); ok {
			msg = "its default does not pass its own schema: " + rest
		}
		return errors.New(msg)
	}
	var path []string
	for _, f := range strings.Split(te.Field, ".") {
		if f != "" && !strings.HasPrefix(f, "schema") { // schemaWithoutMethods and the like: jsonschema-go's internals
			path = append(path, f)
		}
	}
	want := "an object"
	switch te.Type.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int64, reflect.Uint64:
		want = "a number"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Slice:
		want = "an array"
	}
	return fmt.Errorf("%q must be %s, not %s", strings.Join(path, "."), want, jsonKind(te.Value))
}

// jsonKind names a JSON value's kind as encoding/json reports it, with
// its article.
func jsonKind(v string) string {
	switch v {
	case "array", "object", "":
		return "an " + cmp.Or(v, "other value")
	}
	return "a " + v
}

// typedSchema derives, refines, checks and encodes the parameters schema
// of In.
func typedSchema[In any](b *toolBuild, opts []ToolOption) (json.RawMessage, error) {
	rt := reflect.TypeFor[In]()
	st := rt
	if st.Kind() == reflect.Pointer {
		st = st.Elem() // a nil *In is not a valid argument: the root is not nullable
	}
	if st.Kind() != reflect.Struct {
		return nil, fmt.Errorf("arguments type %v must be a struct or a pointer to a struct: tool arguments are a JSON object", rt)
	}
	s, err := jsonschema.ForType(st, &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[Duration](): {Type: "string", Pattern: DurationPattern},
	}})
	if err != nil {
		return nil, fmt.Errorf("schema of %v: %w", rt, err)
	}
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{} // as EmptyObjectSchema: some model APIs want the key
	}
	requiredNotNull(s)
	b.schema = s
	for _, o := range opts {
		if err := o(b); err != nil {
			return nil, err
		}
	}
	if s.Type != "object" {
		return nil, fmt.Errorf(`the root schema must have "type": "object", got %q`, s.Type)
	}
	// Resolve checks what marshalling would not: patterns that do not
	// compile, defaults that break their own schema, bad references.
	if _, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
		return nil, fmt.Errorf("schema of %v: %w", rt, err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("schema of %v: %w", rt, err)
	}
	// The host's own check, with the host's validator: what passes here
	// loads there.
	if _, err := schema.Compile(raw); err != nil {
		return nil, fmt.Errorf("schema of %v: the host would refuse it: %w", rt, err)
	}
	return raw, nil
}

// requiredNotNull makes every required slice property refuse null.
// jsonschema-go types a slice ["null", "array"], since a nil slice encodes
// as null; but a model that sends null for a required list leaves the tool
// a nil slice it did not ask for. A pointer field keeps its null: a pointer
// is how Go says "may be absent". An author who wants null for a slice says
// so with WithProperty(name, `{"type": ["null", "array"]}`).
func requiredNotNull(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for _, name := range s.Required {
		if p := s.Properties[name]; p != nil && slices.Equal(p.Types, []string{"null", "array"}) {
			p.Type, p.Types = "array", nil
		}
	}
	for _, p := range s.Properties {
		requiredNotNull(p)
	}
	requiredNotNull(s.Items)
	requiredNotNull(s.AdditionalProperties)
	for _, d := range s.Defs {
		requiredNotNull(d)
	}
}

// decodeArgs decodes arguments into an In: a JSON object, with no field In
// lacks, no key twice and no trailing data (see package strictjson).
func decodeArgs[In any](raw json.RawMessage) (In, error) {
	var in In
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	if raw[0] != '{' {
		return in, errors.New("invalid arguments: they must be a JSON object")
	}
	if err := strictjson.Unmarshal(raw, &in); err != nil {
		return in, fmt.Errorf("invalid arguments: %w", err)
	}
	return in, nil
}
