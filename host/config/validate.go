package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	jsv5 "github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// The schema is the first check of a file: Check validates the file against
// Schema with santhosh-tekuri/jsonschema and words each failure the way the
// rest of the host does (translate, below), with its path. What a schema
// cannot express (duplicate names, graph nodes, secrets, host names, files)
// the sections check after it, in the same pass.

// schemaOnce is Schema, built and compiled once.
var schemaOnce = sync.OnceValues(func() (*jsonschema.Schema, *jsv5.Schema) {
	s := Schema()
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("config: encode the schema: %v", err)) // the schema is this package's literal
	}
	c := jsv5.NewCompiler()
	c.Draft = jsv5.Draft2020
	if err := c.AddResource("10xgraph.schema.json", bytes.NewReader(raw)); err != nil {
		panic(fmt.Sprintf("config: load the schema: %v", err))
	}
	compiled, err := c.Compile("10xgraph.schema.json")
	if err != nil {
		panic(fmt.Sprintf("config: compile the schema: %v", err))
	}
	return s, compiled
})

// validate adds a problem for each way root fails the schema. Failures of
// a choice (oneOf, anyOf, not) are left to the section's own check, which
// says which key to change; one no check explains is reported as it is.
func (c *checker) validate(root *value) {
	_, compiled := schemaOnce()
	var ve *jsv5.ValidationError
	if !errors.As(compiled.Validate(root.toAny()), &ve) {
		return
	}
	c.translate(ve, root)
}

func (c *checker) translate(e *jsv5.ValidationError, root *value) {
	toks := pointer(e.KeywordLocation)
	kw := ""
	if len(toks) > 0 {
		kw = toks[len(toks)-1]
	}
	path, v := instance(root, e.InstanceLocation)
	rootSchema, _ := schemaOnce()
	switch kw {
	case "not":
		// additionalProperties: false, which the schema builder writes
		// as {"not": {}}, is an unknown key.
		if n := len(toks); n >= 2 && toks[n-2] == "additionalProperties" {
			obj := schemaAt(rootSchema, toks[:n-2])
			c.unknownKey(path, lastKey(e.InstanceLocation), obj)
			return
		}
		fallthrough
	case "anyOf", "oneOf":
		c.choices = append(c.choices, choice{path, e.Message})
		return
	}
	if len(e.Causes) > 0 {
		for _, cause := range e.Causes {
			c.translate(cause, root)
		}
		return
	}
	node := schemaAt(rootSchema, toks[:max(len(toks)-1, 0)])
	if node == nil || v == nil && kw != "required" {
		c.schemaProblem(path, "%s", e.Message)
		return
	}
	if slices.Contains(toks, "propertyNames") {
		// The value judged is the key itself; an empty key is located at
		// its object.
		key := lastKey(e.InstanceLocation)
		if v.kind == kindObject && v.field("") != nil && e.InstanceLocation != "" {
			key, path = "", toolspec.Join(path, pathKey(""))
		}
		v = &value{kind: kindString, text: key}
	}
	switch kw {
	case "type":
		c.schemaProblem(path, "%s", typeMessage(node, v))
	case "enum":
		var vals []string
		for _, x := range node.Enum {
			vals = append(vals, fmt.Sprint(x))
		}
		c.schemaProblem(path, "must be one of %s, got %s", quoteList(vals), v.literal())
	case "minimum", "maximum":
		if strings.ContainsAny(v.text, ".eE") {
			c.schemaProblem(path, "must be a whole number, got %s", v.text)
		} else if kw == "minimum" {
			c.schemaProblem(path, "must be at least %s, got %s", bound(*node.Minimum), v.text)
		} else {
			c.schemaProblem(path, "must be at most %s, got %s", bound(*node.Maximum), v.text)
		}
	case "minLength":
		if slices.Contains(toks, "propertyNames") {
			c.schemaProblem(path, "%s cannot be empty", cmp.Or(sentence(node.Description), "a name"))
		} else {
			c.schemaProblem(path, "must not be empty")
		}
	case "minItems":
		c.schemaProblem(path, "must not be empty")
	case "minProperties":
		c.schemaProblem(path, "is empty: set at least one of %s, or leave %s out", strings.Join(node.PropertyOrder, ", "), lastKey(e.InstanceLocation))
	case "pattern":
		msg := patternMessage(node.Pattern, v.text)
		if why := sentence(node.Description); why != "" && !slices.Contains(plainPatterns, node.Pattern) {
			msg += ": " + why
		}
		c.schemaProblem(path, "%s", msg)
	case "required":
		for _, k := range node.Required {
			if v.field(k) == nil {
				c.schemaProblem(toolspec.Join(path, pathKey(k)), "missing: %s", hint(property(rootSchema, toks, k)))
			}
		}
	case "uniqueItems":
		seen := map[string]int{}
		for i, it := range v.items {
			var buf bytes.Buffer
			it.encode(&buf)
			if j, dup := seen[buf.String()]; dup {
				c.schemaProblem(toolspec.Join(path, toolspec.Index(i)), "%s is listed twice (first at [%d])", buf.String(), j)
				continue
			}
			seen[buf.String()] = i
		}
	case "additionalProperties":
		for _, k := range v.keys {
			if _, ok := node.Properties[k]; !ok {
				c.unknownKey(toolspec.Join(path, pathKey(k)), k, node)
			}
		}
	default:
		c.schemaProblem(path, "%s", e.Message)
	}
}

// bound is a schema's minimum or maximum as written in Go: the float of
// math.MaxInt64 is one more than it.
func bound(f float64) string {
	if f >= math.MaxInt64 {
		return strconv.FormatInt(math.MaxInt64, 10)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// unknownKey reports key, which obj does not take, naming the keys it
// does and the one most likely meant.
func (c *checker) unknownKey(path, key string, obj *jsonschema.Schema) {
	var allowed []string
	if obj != nil {
		allowed = obj.PropertyOrder
	}
	c.schemaProblem(path, "unknown key%s (allowed: %s)", suggest(key, allowed), strings.Join(allowed, ", "))
}

// typeMessage says what a value of the wrong type should have been.
func typeMessage(s *jsonschema.Schema, v *value) string {
	switch {
	case s.Pattern == durationPattern:
		return fmt.Sprintf("must be a duration string such as \"30s\" or \"2m\", got %s", v.kind)
	case s.Type == "array" && v.kind == kindString && s.Items != nil && s.Items.Type == "string":
		return fmt.Sprintf("must be an array of strings, such as [%s], got a string", strconv.Quote(v.text))
	case s.Type == "integer" && v.kind == kindNumber:
		return fmt.Sprintf("must be a whole number, got %s", v.text)
	}
	want := map[string]string{"integer": "a whole number", "boolean": "a boolean (true or false)",
		"object": "an object", "array": "an array", "string": "a string", "number": "a number"}[s.Type]
	return fmt.Sprintf("must be %s, got %s", cmp.Or(want, s.Type), v.kind)
}

// patternMessages word a string that does not match a pattern of the
// schema: the one table of what each pattern means. The key's description
// follows, saying why, except for plainPatterns, whose words say it all.
var patternMessages = map[string]func(s string) string{
	durationPattern: func(s string) string { _, msg := parseDuration(s); return msg },
	SHA256Pattern.String(): func(s string) string {
		return fmt.Sprintf("must be 64 hexadecimal characters, the output of `sha256sum` on the executable (got %d characters)", len([]rune(s)))
	},
	envNamePattern.String(): func(s string) string {
		return fmt.Sprintf("%q is not an environment variable name: use letters, digits and '_', not starting with a digit (the file names the variable, not its value)", s)
	},
	ShortNamePattern.String(): func(s string) string {
		return fmt.Sprintf("%q must be 1 to 32 letters, digits, '_' or '-'", s)
	},
	NamePattern.String(): func(s string) string {
		return fmt.Sprintf("%q must be 1 to 64 letters, digits, '_' or '-'", s)
	},
}

var plainPatterns = []string{durationPattern, SHA256Pattern.String(), envNamePattern.String()}

func patternMessage(pattern, s string) string {
	if f, ok := patternMessages[pattern]; ok {
		return f(s)
	}
	return fmt.Sprintf("%q does not match %s", s, pattern)
}

// sentence is a description's first sentence (up to its first ". " or
// "; "), as part of a message: lower case, without the full stop.
func sentence(desc string) string {
	d, _, _ := strings.Cut(desc, ". ")
	d, _, _ = strings.Cut(d, "; ")
	d = strings.TrimSuffix(d, ".")
	if d != "" {
		d = strings.ToLower(d[:1]) + d[1:]
	}
	return d
}

// hint says what a missing key holds: its description's first sentence,
// and its values when they are few.
func hint(s *jsonschema.Schema) string {
	if s == nil {
		return "required"
	}
	d := sentence(s.Description)
	if s.Items != nil && len(s.Items.Enum) > 0 {
		var vals []string
		for _, x := range s.Items.Enum {
			vals = append(vals, fmt.Sprint(x))
		}
		d += ", from " + quoteList(vals)
	}
	return d
}

// property is the schema of key k of the object a keyword location's
// tokens are in: the nearest schema on the way that describes k (a
// required of an if-then is the object's).
func property(root *jsonschema.Schema, toks []string, k string) *jsonschema.Schema {
	for n := len(toks); n >= 0; n-- {
		if s := schemaAt(root, toks[:n]); s != nil && s.Properties[k] != nil {
			return s.Properties[k]
		}
	}
	return nil
}

// pointer splits a JSON pointer into its unescaped tokens.
func pointer(p string) []string {
	if p == "" {
		return nil
	}
	toks := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks
}

func lastKey(p string) string {
	toks := pointer(p)
	if len(toks) == 0 {
		return ""
	}
	return toks[len(toks)-1]
}

// instance is the config path of a JSON pointer into root, and the value
// there (nil when absent).
func instance(root *value, p string) (string, *value) {
	path, v := "", root
	for _, t := range pointer(p) {
		if v != nil && v.kind == kindArray {
			i, err := strconv.Atoi(t)
			path = toolspec.Join(path, toolspec.Index(i))
			if err == nil && i >= 0 && i < len(v.items) {
				v = v.items[i]
			} else {
				v = nil
			}
			continue
		}
		path = toolspec.Join(path, pathKey(t))
		if v != nil {
			v = v.field(t)
		}
	}
	return path, v
}

// schemaAt is the schema a keyword location's tokens lead to.
func schemaAt(s *jsonschema.Schema, toks []string) *jsonschema.Schema {
	index := func(list []*jsonschema.Schema, t string) *jsonschema.Schema {
		i, err := strconv.Atoi(t)
		if err != nil || i < 0 || i >= len(list) {
			return nil
		}
		return list[i]
	}
	for i := 0; i < len(toks) && s != nil; i++ {
		switch toks[i] {
		case "properties":
			i++
			if i < len(toks) {
				s = s.Properties[toks[i]]
			}
		case "prefixItems", "allOf", "anyOf", "oneOf":
			list := map[string][]*jsonschema.Schema{"prefixItems": s.PrefixItems, "allOf": s.AllOf, "anyOf": s.AnyOf, "oneOf": s.OneOf}[toks[i]]
			i++
			if i < len(toks) {
				s = index(list, toks[i])
			}
		case "items":
			s = s.Items
		case "additionalProperties":
			s = s.AdditionalProperties
		case "propertyNames":
			s = s.PropertyNames
		case "not":
			s = s.Not
		case "if":
			s = s.If
		case "then":
			s = s.Then
		case "else":
			s = s.Else
		default:
			return nil
		}
	}
	return s
}

// toAny is v as encoding/json decodes it with UseNumber, which the
// validator takes.
func (v *value) toAny() any {
	switch v.kind {
	case kindObject:
		m := make(map[string]any, len(v.keys))
		for i, k := range v.keys {
			m[k] = v.vals[i].toAny()
		}
		return m
	case kindArray:
		a := make([]any, len(v.items))
		for i, it := range v.items {
			a[i] = it.toAny()
		}
		return a
	case kindString:
		return v.text
	case kindNumber:
		return json.Number(v.text)
	case kindBool:
		return v.b
	}
	return nil
}

// literal is a scalar as a message quotes it.
func (v *value) literal() string {
	if v.kind == kindString {
		return strconv.Quote(v.text)
	}
	var buf bytes.Buffer
	v.encode(&buf)
	return buf.String()
}
