package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// SchemaID is the JSON Schema dialect of Schema: draft 2020-12, which
// editors (VS Code's json.schemas, a "$schema" key in the file) and other
// validators read.
const SchemaID = "https://json-schema.org/draft/2020-12/schema"

// A Section is one top-level key of 10xgraph.json: the graph, the model, the
// checkpointer, the server, or a provider kind's key (registered from the
// kind's own package with RegisterProvider). It owns its key's JSON Schema
// (with the descriptions and defaults editors show) and its reader (the
// checks a schema cannot express, and the defaults filled into Config), so a
// new key is one registration, not an edit of a central list.
type Section struct {
	// Key is the top-level key.
	Key string
	// Required is true when the file must have the key.
	Required bool
	// First is true for a section every other one reads over
	// (provider_defaults): it is read before them, wherever it is listed.
	First bool
	// Schema is the key's JSON Schema.
	Schema func() *jsonschema.Schema
	// provider is true for a provider kind's section (RegisterProvider):
	// those are listed together, by key, before provider_defaults.
	provider bool
	// read decodes the key's value v (nil when absent), checks what the
	// schema cannot and sets its part of cfg.
	read func(c *checker, path string, v *value, cfg *Config)
}

// sections are the registered sections, in the order the schema and the
// allowed-keys messages list them.
var sections []Section

// register adds s to the sections. A key registered twice is a programming
// error that would make one section's checks silently win, so it panics.
func register(s Section) {
	if slices.ContainsFunc(sections, func(o Section) bool { return o.Key == s.Key }) {
		panic(fmt.Sprintf("config: section %q registered twice", s.Key))
	}
	sections = append(sections, s)
}

// ordered are the sections in the order the schema lists them: as
// registered, with the provider kinds, by key, before provider_defaults,
// so that the order does not hang on which package's init runs first.
func ordered() []Section {
	var kinds, out []Section
	for _, s := range sections {
		if s.provider {
			kinds = append(kinds, s)
		}
	}
	slices.SortFunc(kinds, func(a, b Section) int { return strings.Compare(a.Key, b.Key) })
	for _, s := range sections {
		if s.Key == "provider_defaults" {
			out = append(out, kinds...)
		}
		if !s.provider {
			out = append(out, s)
		}
	}
	return out
}

// schemaKey is the key editors use to find a file's schema. It is not
// part of the config: the host accepts it (a string) and ignores it.
const schemaKey = "$schema"

// Schema is the JSON Schema (draft 2020-12) of 10xgraph.json, built from
// the registered sections. A file the schema refuses is one Parse refuses;
// Parse also checks what a schema cannot say (duplicate names, graph
// nodes, secrets, host names), so the converse does not hold.
func Schema() *jsonschema.Schema {
	root := &jsonschema.Schema{
		Schema:      SchemaID,
		Title:       "10xgraph.json",
		Description: "The config of a tenxgraph host: the agent graph to serve, its model, its tool providers (builtin tools, MCP servers, plugins), remote tools run by the client, and where thread state is kept. Strict: an unknown key anywhere is an error.",
		Type:        "object",
		Properties:  map[string]*jsonschema.Schema{},
	}
	for _, s := range ordered() {
		root.Properties[s.Key] = s.Schema()
		root.PropertyOrder = append(root.PropertyOrder, s.Key)
		if s.Required {
			root.Required = append(root.Required, s.Key)
		}
	}
	root.Properties[schemaKey] = Str("The JSON Schema this file follows, for editors (the output of `tenxgraph schema`); the host ignores it.")
	root.PropertyOrder = append(root.PropertyOrder, schemaKey)
	root.AdditionalProperties = falseSchema()
	return root
}
