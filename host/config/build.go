package config

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// The builders below keep the section schemas short. Every object is
// closed (additionalProperties false), as the reader is strict.

// Prop is one property of an object schema: its name and its schema.
type Prop struct {
	Name string
	Of   *jsonschema.Schema
}

// Object is a closed object schema: its properties in order, and no other
// key (additionalProperties false).
func Object(desc string, props ...Prop) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Description: desc, Properties: map[string]*jsonschema.Schema{}, AdditionalProperties: falseSchema()}
	for _, p := range props {
		s.Properties[p.Name] = p.Of
		s.PropertyOrder = append(s.PropertyOrder, p.Name)
	}
	return s
}

// Props joins property lists, for keys shared by several objects.
func Props(lists ...[]Prop) []Prop {
	var out []Prop
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func falseSchema() *jsonschema.Schema { return &jsonschema.Schema{Not: &jsonschema.Schema{}} }

// Str is a string.
func Str(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc}
}

// Text is a string that must not be empty.
func Text(desc string) *jsonschema.Schema {
	one := 1
	return &jsonschema.Schema{Type: "string", Description: desc, MinLength: &one}
}

// Pattern is a string that matches re; validate.go's patternMessages
// words a mismatch.
func Pattern(desc, re string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc, Pattern: re}
}

// Boolean is true or false.
func Boolean(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "boolean", Description: desc}
}

// Integer is a whole number from lo to hi.
func Integer(desc string, lo, hi int64) *jsonschema.Schema {
	fl, fh := float64(lo), float64(hi)
	return &jsonschema.Schema{Type: "integer", Description: desc, Minimum: &fl, Maximum: &fh}
}

// durationPattern is what time.ParseDuration takes, without a sign: the
// SDK's, so the file and the options sent to plugins (sdk.Duration) agree
// on what a duration is. The reader also refuses zero.
const durationPattern = sdk.DurationPattern

// Duration is a Go duration string such as "30s" (the reader refuses
// zero and negative ones).
func Duration(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc + ` A duration such as "30s", "1m30s" or "500ms".`, Pattern: durationPattern}
}

// Enum is one of values.
func Enum(desc string, values ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string", Description: desc}
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
	return s
}

// Array is a list of items.
func Array(desc string, items *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Description: desc, Items: items}
}

// StrMap is an object of strings under any keys.
func StrMap(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Description: desc, AdditionalProperties: &jsonschema.Schema{Type: "string"}}
}

// envNameSchema is the name of an environment variable.
func envNameSchema(desc string) *jsonschema.Schema {
	return Pattern(desc, envNamePattern.String())
}

// WithDefault sets s's default, which editors offer and show.
func WithDefault(s *jsonschema.Schema, v any) *jsonschema.Schema {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err) // defaults are literals of this package
	}
	s.Default = raw
	return s
}

// Requires is a schema that holds when every key is present.
func Requires(keys ...string) *jsonschema.Schema {
	return &jsonschema.Schema{Required: keys}
}

// When is "if the value's key is one of values, then then".
func When(key string, values []string, then *jsonschema.Schema) *jsonschema.Schema {
	cond := &jsonschema.Schema{Properties: map[string]*jsonschema.Schema{key: {}}, Required: []string{key}}
	var vs []any
	for _, v := range values {
		vs = append(vs, v)
	}
	cond.Properties[key].Enum = vs
	return &jsonschema.Schema{If: cond, Then: then}
}

// Forbids is a schema that holds when none of keys is present.
func Forbids(keys ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{}
	for _, k := range keys {
		s.AllOf = append(s.AllOf, &jsonschema.Schema{Not: Requires(k)})
	}
	return s
}

// Property is the property name of an object schema, s: a Prop written
// from a provider kind's own package.
func Property(name string, s *jsonschema.Schema) Prop { return Prop{Name: name, Of: s} }
