package config

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
)

// The builders below keep the section schemas short. Every object is
// closed (additionalProperties false), as the reader is strict.

// prop is one property of an object schema.
type prop struct {
	name string
	s    *jsonschema.Schema
}

func object(desc string, props ...prop) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Description: desc, Properties: map[string]*jsonschema.Schema{}, AdditionalProperties: falseSchema()}
	for _, p := range props {
		s.Properties[p.name] = p.s
		s.PropertyOrder = append(s.PropertyOrder, p.name)
	}
	return s
}

// props joins property lists, for keys shared by several objects.
func props(lists ...[]prop) []prop {
	var out []prop
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func falseSchema() *jsonschema.Schema { return &jsonschema.Schema{Not: &jsonschema.Schema{}} }

func str(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc}
}

// text is a string that must not be empty.
func text(desc string) *jsonschema.Schema {
	one := 1
	return &jsonschema.Schema{Type: "string", Description: desc, MinLength: &one}
}

func pattern(desc, re string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc, Pattern: re}
}

func boolean(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "boolean", Description: desc}
}

func integer(desc string, lo, hi int64) *jsonschema.Schema {
	fl, fh := float64(lo), float64(hi)
	return &jsonschema.Schema{Type: "integer", Description: desc, Minimum: &fl, Maximum: &fh}
}

// durationPattern is what time.ParseDuration takes, without a sign: the
// reader also refuses zero.
const durationPattern = `^(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`

func duration(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc + ` A duration such as "30s", "1m30s" or "500ms".`, Pattern: durationPattern}
}

func enum(desc string, values ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string", Description: desc}
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
	return s
}

func array(desc string, items *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Description: desc, Items: items}
}

// strMap is an object of strings under any keys.
func strMap(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Description: desc, AdditionalProperties: &jsonschema.Schema{Type: "string"}}
}

// envNameSchema is the name of an environment variable.
func envNameSchema(desc string) *jsonschema.Schema {
	return pattern(desc, envNamePattern.String())
}

// withDefault sets s's default, which editors offer and show.
func withDefault(s *jsonschema.Schema, v any) *jsonschema.Schema {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err) // defaults are literals of this package
	}
	s.Default = raw
	return s
}

// requires is a schema that holds when every key is present.
func requires(keys ...string) *jsonschema.Schema {
	return &jsonschema.Schema{Required: keys}
}

// when is "if the value's key is one of values, then then".
func when(key string, values []string, then *jsonschema.Schema) *jsonschema.Schema {
	cond := &jsonschema.Schema{Properties: map[string]*jsonschema.Schema{key: {}}, Required: []string{key}}
	var vs []any
	for _, v := range values {
		vs = append(vs, v)
	}
	cond.Properties[key].Enum = vs
	return &jsonschema.Schema{If: cond, Then: then}
}

// forbids is a schema that holds when none of keys is present.
func forbids(keys ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{}
	for _, k := range keys {
		s.AllOf = append(s.AllOf, &jsonschema.Schema{Not: requires(k)})
	}
	return s
}
