package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// Issue is one thing wrong with a value, at its path in the host's
// notation ("units", "servers[0].url"; "" for the value itself).
type Issue struct {
	Path    string
	Message string
}

// Issues checks a JSON value against the schema and lists every innermost
// problem at its own path, so that a person reads "units: value must be one
// of ..." rather than a pointer into a tree of combinators. A key the
// schema does not allow is reported at the key's path, with the keys it
// does allow.
func (s *Schema) Issues(raw json.RawMessage) []Issue {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte(`{}`)
	}
	v, err := strictjson.Decode(raw)
	if err != nil {
		return []Issue{{Message: fmt.Sprintf("not valid JSON: %v", err)}}
	}
	err = s.s.Validate(v)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []Issue{{Message: err.Error()}}
	}
	var out []Issue
	add := func(is Issue) {
		if !slices.Contains(out, is) {
			out = append(out, is)
		}
	}
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		segs := pointer(e.InstanceLocation)
		path := pathOf(v, segs)
		if strings.HasSuffix(e.KeywordLocation, "/additionalProperties") {
			if obj, ok := at(v, segs).(map[string]any); ok {
				if known := propertiesAt(s.s, segs); known != nil {
					for _, k := range sortedKeys(obj) {
						if _, ok := known.Properties[k]; !ok {
							add(Issue{Path: join(path, k), Message: unknownKey(k, known)})
						}
					}
					return
				}
			}
		}
		add(Issue{Path: path, Message: e.Message})
	}
	walk(ve)
	return out
}

// unknownKey says a key is not allowed, and which are.
func unknownKey(k string, s *jsonschema.Schema) string {
	names := sortedKeys(s.Properties)
	if len(names) == 0 {
		return "unknown key: none is allowed here"
	}
	hint := ""
	if n := strictjson.Closest(k, names); n != "" {
		hint = fmt.Sprintf(": did you mean %q?", n)
	}
	return fmt.Sprintf("unknown key%s (allowed: %s)", hint, strings.Join(names, ", "))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// pointer splits a JSON pointer ("/a/0/b") into its unescaped segments.
func pointer(p string) []string {
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return nil
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs
}

// at is the value at segs under v, or nil.
func at(v any, segs []string) any {
	for _, s := range segs {
		switch x := v.(type) {
		case map[string]any:
			v = x[s]
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// pathOf writes segs in the host's notation, using v to tell an array's
// index from an object's key.
func pathOf(v any, segs []string) string {
	path := ""
	for _, s := range segs {
		if arr, ok := v.([]any); ok {
			path += "[" + s + "]"
			if i, err := strconv.Atoi(s); err == nil && i >= 0 && i < len(arr) {
				v = arr[i]
			} else {
				v = nil
			}
			continue
		}
		path = join(path, s)
		if obj, ok := v.(map[string]any); ok {
			v = obj[s]
		} else {
			v = nil
		}
	}
	return path
}

// join appends a key to a path, quoting a key that is not a plain name.
func join(path, k string) string {
	if !plainKey(k) {
		k = strconv.Quote(k)
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// propertiesAt follows properties (and items) from the root to the object
// schema at segs, or nil where the path leaves them.
func propertiesAt(s *jsonschema.Schema, segs []string) *jsonschema.Schema {
	for _, seg := range segs {
		for s != nil && s.Ref != nil && len(s.Properties) == 0 {
			s = s.Ref
		}
		if s == nil {
			return nil
		}
		if next, ok := s.Properties[seg]; ok {
			s = next
			continue
		}
		if _, err := strconv.Atoi(seg); err == nil {
			if s.Items2020 != nil {
				s = s.Items2020
				continue
			}
			if it, ok := s.Items.(*jsonschema.Schema); ok && it != nil {
				s = it
				continue
			}
		}
		return nil
	}
	for s != nil && s.Ref != nil && len(s.Properties) == 0 {
		s = s.Ref
	}
	return s
}
