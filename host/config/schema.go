package config

import (
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// SchemaID is the JSON Schema dialect of Schema: draft 2020-12, which
// editors (VS Code's json.schemas, a "$schema" key in the file) and other
// validators read.
const SchemaID = "https://json-schema.org/draft/2020-12/schema"

// A Section is one top-level key of 10xgraph.json: the graph, a provider
// kind (builtin_tools, mcp_servers, plugins), the model, the checkpointer,
// the server. It owns its key's JSON Schema (with the descriptions and
// defaults editors show) and its reader (the checks a schema cannot
// express, and the defaults filled into Config), so a new key is one
// registration, not an edit of a central list.
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
	for _, s := range sections {
		root.Properties[s.Key] = s.Schema()
		root.PropertyOrder = append(root.PropertyOrder, s.Key)
		if s.Required {
			root.Required = append(root.Required, s.Key)
		}
	}
	root.Properties[schemaKey] = str("The JSON Schema this file follows, for editors (the output of `tenxgraph schema`); the host ignores it.")
	root.PropertyOrder = append(root.PropertyOrder, schemaKey)
	root.AdditionalProperties = falseSchema()
	return root
}
