// Package schema compiles and applies tool parameter schemas with the one
// JSON Schema validator of both sides (santhosh-tekuri/jsonschema): the
// host checks a plugin's tools and each call's arguments with it, and
// sdk.NewTool checks the schema it derives with it, so an author's checks
// are the host's.
package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// EmptyObject is the schema of a tool without arguments.
var EmptyObject = json.RawMessage(`{"type":"object","properties":{}}`)

// Schema is a compiled parameters schema.
type Schema struct {
	s *jsonschema.Schema
}

// cache holds compiled schemas by their bytes: per-run client tools arrive
// with every run, and compiling is far dearer than validating. It is dropped
// whole when it grows past cacheMax, which bounds memory against clients that
// send a new schema each time.
var (
	cacheMu  sync.Mutex
	cache    = map[string]*Schema{}
	cacheMax = 4096
)

// Compile checks that params is a JSON Schema whose root describes an object
// (what every model API requires of tool parameters) and compiles it. Empty
// params mean a tool without arguments. References to other documents are
// refused: a schema must be self-contained, and loading files or URLs named by
// a client would be a hole.
func Compile(params json.RawMessage) (*Schema, error) {
	params = bytes.TrimSpace(params)
	if len(params) == 0 {
		params = EmptyObject
	}
	cacheMu.Lock()
	s, ok := cache[string(params)] // a lookup the compiler makes without copying params
	cacheMu.Unlock()
	if ok {
		return s, nil
	}
	s, err := compile(params)
	if err != nil {
		return nil, err
	}
	cacheMu.Lock()
	if len(cache) >= cacheMax {
		cache = map[string]*Schema{}
	}
	cache[string(params)] = s
	cacheMu.Unlock()
	return s, nil
}

func compile(params json.RawMessage) (*Schema, error) {
	doc, err := strictjson.Decode(params)
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf(`must be a JSON Schema object with "type": "object"`)
	}
	if t, ok := root["type"]; !ok || t != "object" {
		return nil, fmt.Errorf(`the root schema must have "type": "object" (tool arguments are always an object), got %s`, describeType(root["type"], ok))
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("reference to %s: a parameters schema must be self-contained", u)
	}
	const url = "tenxgraph:///parameters.json"
	if err := c.AddResource(url, bytes.NewReader(params)); err != nil {
		return nil, fmt.Errorf("not a valid JSON Schema: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("not a valid JSON Schema: %s", schemaMessage(err))
	}
	return &Schema{s: s}, nil
}

func describeType(v any, present bool) string {
	if !present {
		return "no type"
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

func schemaMessage(err error) string {
	if se, ok := err.(*jsonschema.SchemaError); ok {
		if ve, ok := se.Err.(*jsonschema.ValidationError); ok {
			return leaves(ve)
		}
		return strings.TrimPrefix(se.Err.Error(), "jsonschema: ")
	}
	return strings.TrimPrefix(err.Error(), "jsonschema: ")
}

// Validate checks arguments against the schema and says what is wrong with
// them in words a model can act on.
func (s *Schema) Validate(args json.RawMessage) error {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		args = []byte(`{}`)
	}
	// Decoded strictly (duplicate keys, invalid UTF-8): a validator that
	// sees only the last of two "path" keys would pass what a tool then
	// reads differently.
	v, err := strictjson.Decode(args)
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if err := s.s.Validate(v); err != nil {
		if ve, ok := err.(*jsonschema.ValidationError); ok {
			return fmt.Errorf("invalid arguments: %s", leaves(ve))
		}
		return fmt.Errorf("invalid arguments: %w", err)
	}
	return nil
}

// leaves lists the innermost causes, which say what is wrong ("missing
// properties: 'city'") rather than which combinator failed.
func leaves(ve *jsonschema.ValidationError) string {
	var out []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := e.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			out = append(out, fmt.Sprintf("at %s: %s", loc, e.Message))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return strings.Join(out, "; ")
}
