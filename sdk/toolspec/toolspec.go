// Package toolspec holds the rules a tool specification must follow, shared
// by every place a tool enters the host: the config file, code-first
// AttachRemoteTools, per-run client tools and provider tool lists. One set of
// rules means a tool valid in one place is valid in all of them.
package toolspec

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/internal/schema"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// Problem is one thing wrong with an input, at a JSON path such as
// "remote_tools[1].parameters": the SDK's one Problem type, which providers
// also return (sdk.PrepareRunResponse).
type Problem = sdk.Problem

// Problems collects every error found in one pass, so a person fixes a
// config file in one edit instead of one error per run.
type Problems []Problem

// Add records a problem at path.
func (ps *Problems) Add(path, format string, args ...any) {
	*ps = append(*ps, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// Merge appends others, each path prefixed with prefix.
func (ps *Problems) Merge(prefix string, others Problems) {
	for _, p := range others {
		*ps = append(*ps, Problem{Path: Join(prefix, p.Path), Message: p.Message})
	}
}

// Err returns ps as an error, or nil when there are none.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// Error lists one problem per line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Join appends a path element: a key ("node"), or an index ("[2]"). It is
// strictjson.Join, the SDK's one path joiner, so that a decoding error's
// path and a rule's path read alike.
func Join(prefix, elem string) string { return strictjson.Join(prefix, elem) }

// Index is the path element of a list entry.
func Index(i int) string { return fmt.Sprintf("[%d]", i) }

// CheckName reports why name cannot be a tool name, or nil.
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("missing")
	}
	if !sdk.ToolNamePattern.MatchString(name) {
		return fmt.Errorf("%q is not a valid tool name: use 1 to 64 letters, digits, '_' or '-'", name)
	}
	return nil
}

// Schema is a compiled parameters schema.
type Schema = schema.Schema

// Compile checks that params is a JSON Schema whose root describes an object
// (what every model API requires of tool parameters) and compiles it. Empty
// params mean a tool without arguments. References to other documents are
// refused: a schema must be self-contained, and loading files or URLs named by
// a client would be a hole.
func Compile(params json.RawMessage) (*Schema, error) { return schema.Compile(params) }

// CheckValue checks a JSON value against a compiled schema (a plugin's
// options schema, say) and returns every problem with its path under
// prefix ("plugins[0].options" gives "plugins[0].options.units"), so that
// a value is reported the way the config file's own mistakes are.
func CheckValue(s *Schema, prefix string, v json.RawMessage) Problems {
	var ps Problems
	for _, is := range s.Issues(v) {
		ps.Add(Join(prefix, is.Path), "%s", is.Message)
	}
	return ps
}

// Shadowed words the rule that a remote tool never takes the name of a tool
// its node already has, once for both places it is applied: the remote
// tools a config or program declares (refused) and those a run's client
// sends (left out, with this as the reason). node, kind ("server", "mcp")
// and provider are "" where the caller does not know them.
func Shadowed(node, kind, name, provider string) string {
	who, tool, from := "the node", "a tool", ""
	if node != "" {
		who = fmt.Sprintf("node %q", node)
	}
	if kind != "" {
		tool = "a " + kind + " tool"
	}
	if provider != "" {
		from = " (from " + provider + ")"
	}
	return fmt.Sprintf("%s already has %s %q%s; a remote tool cannot shadow it", who, tool, name, from)
}
