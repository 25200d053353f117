package toolspec

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// Check validates a spec's name and parameters, returning problems with paths
// relative to the spec ("name", "parameters").
func Check(spec sdk.ToolSpec) Problems {
	var ps Problems
	if err := CheckName(spec.Name); err != nil {
		ps.Add("name", "%v", err)
	}
	if _, err := Compile(spec.Parameters); err != nil {
		ps.Add("parameters", "%v", err)
	}
	return ps
}

// ParseRunTool reads one per-run client tool in either shape users send:
// flat {"name", "description", "parameters"} or OpenAI's
// {"type": "function", "function": {...}}. Unknown keys are refused, as
// everywhere in the host; OpenAI's "strict" flag is accepted and ignored.
func ParseRunTool(raw json.RawMessage) (sdk.ToolSpec, Problems) {
	var ps Problems
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		ps.Add("", "a tool must be a JSON object")
		return sdk.ToolSpec{}, ps
	}
	prefix := ""
	if t, ok := obj["type"]; ok {
		var typ string
		if json.Unmarshal(t, &typ) != nil || typ != "function" {
			ps.Add("type", `must be "function" (the OpenAI shape), got %s`, bytes.TrimSpace(t))
			return sdk.ToolSpec{}, ps
		}
		for k := range obj {
			if k != "type" && k != "function" {
				ps.Add(k, "unknown key (the OpenAI shape has only type and function)")
			}
		}
		fn, ok := obj["function"]
		obj = nil
		if !ok || json.Unmarshal(fn, &obj) != nil || obj == nil {
			ps.Add("function", "must be an object with name, description and parameters")
			return sdk.ToolSpec{}, ps
		}
		prefix = "function"
	}
	var spec sdk.ToolSpec
	for k, v := range obj {
		path := Join(prefix, k)
		switch k {
		case "name":
			if json.Unmarshal(v, &spec.Name) != nil {
				ps.Add(path, "must be a string")
			}
		case "description":
			if json.Unmarshal(v, &spec.Description) != nil {
				ps.Add(path, "must be a string")
			}
		case "parameters":
			spec.Parameters = append(json.RawMessage(nil), bytes.TrimSpace(v)...)
		case "strict":
			if prefix == "" {
				ps.Add(path, "unknown key (strict belongs in the OpenAI shape's function)")
			}
		default:
			ps.Add(path, "unknown key (want name, description, parameters)")
		}
	}
	if len(spec.Parameters) == 0 || string(spec.Parameters) == "null" {
		spec.Parameters = sdk.EmptyObjectSchema
	}
	ps.Merge(prefix, Check(spec))
	sortProblems(ps)
	return spec, ps
}

// sortProblems orders problems by path so reports are stable whatever the
// map iteration order was.
func sortProblems(ps Problems) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && strings.Compare(ps[j-1].Path, ps[j].Path) > 0; j-- {
			ps[j-1], ps[j] = ps[j], ps[j-1]
		}
	}
}

// ParseRunTools reads a run's client tools; see ParseRunTool. Problems carry
// the entry's index ("[1].function.name").
func ParseRunTools(raws []json.RawMessage) ([]sdk.ToolSpec, error) {
	var ps Problems
	specs := make([]sdk.ToolSpec, 0, len(raws))
	seen := map[string]int{}
	for i, raw := range raws {
		spec, p := ParseRunTool(raw)
		ps.Merge(Index(i), p)
		if len(p) > 0 {
			continue
		}
		if j, dup := seen[spec.Name]; dup {
			ps.Add(Index(i)+".name", "%q is also the name of entry [%d]", spec.Name, j)
			continue
		}
		seen[spec.Name] = i
		specs = append(specs, spec)
	}
	if len(ps) > 0 {
		return nil, prefixed("remote_tools", ps)
	}
	return specs, nil
}

func prefixed(prefix string, ps Problems) Problems {
	var out Problems
	out.Merge(prefix, ps)
	return out
}
