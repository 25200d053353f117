package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// maxScriptSize bounds what Load and Parse read: a script is a page of rules,
// and a multi-megabyte file is a wrong path, not a script.
const maxScriptSize = 4 << 20

// rule is one compiled entry of the script.
type rule struct {
	index   int
	re      *regexp.Regexp
	text    string     // set for a text rule
	calls   []callSpec // set for a tool_calls rule
	then    *template.Template
	example string
}

// callSpec is a tool call as written in the script: its arguments are a JSON
// tree (decoded with UseNumber, so numbers keep their exact spelling) whose
// strings may refer to the rule's capture groups.
type callSpec struct {
	name string
	args map[string]any
}

func parseScript(data []byte) ([]*rule, *string, error) {
	var ps toolspec.Problems
	if len(data) > maxScriptSize {
		ps.Add("", "the script is larger than %d bytes, too large for a script of rules (is this the right file?)", maxScriptSize)
		return nil, nil, ps
	}
	if err := checkSyntax(data); err != nil {
		ps.Add("", "%v", err)
		return nil, nil, ps
	}
	top, ok := readObject("", data, &ps)
	if !ok {
		return nil, nil, ps
	}
	var rules []*rule
	if raw, ok := top.take("rules"); !ok {
		ps.Add("rules", `missing: a script needs a "rules" list (see the scripted model's documentation)`)
	} else if elems, ok := readArray("rules", raw, &ps); ok {
		if len(elems) == 0 {
			ps.Add("rules", "empty: add at least one rule")
		}
		for i, el := range elems {
			if r := readRule(i, el, &ps); r != nil {
				rules = append(rules, r)
			}
		}
	}
	var fallback *string
	if raw, ok := top.take("fallback"); ok {
		if s, ok := readString("fallback", raw, &ps); ok {
			if strings.TrimSpace(s) == "" {
				ps.Add("fallback", "empty: write what the model should say when no rule matches, or remove the key for the default")
			}
			fallback = &s
		}
	}
	top.unknown(&ps, "rules", "fallback")
	if len(ps) == 0 {
		checkExamples(rules, &ps)
	}
	if err := ps.Err(); err != nil {
		return nil, nil, err
	}
	return rules, fallback, nil
}

var ruleKeys = []string{"match", "text", "tool_calls", "then", "example"}

func readRule(i int, raw json.RawMessage, ps *toolspec.Problems) *rule {
	path := "rules" + toolspec.Index(i)
	obj, ok := readObject(path, raw, ps)
	if !ok {
		return nil
	}
	before := len(*ps)
	r := &rule{index: i}

	if rawMatch, ok := obj.take("match"); !ok {
		ps.Add(path, `missing "match": every rule needs a regular expression to match the user's message`)
	} else if s, ok := readString(toolspec.Join(path, "match"), rawMatch, ps); ok {
		if s == "" {
			ps.Add(toolspec.Join(path, "match"), `empty: write a regular expression, e.g. "(?i)hello" (use "(?s).*" to match every message)`)
		} else if re, err := regexp.Compile(s); err != nil {
			ps.Add(toolspec.Join(path, "match"), "invalid regular expression (rule %d): %v", i, err)
		} else {
			r.re = re
		}
	}

	rawText, hasText := obj.take("text")
	rawCalls, hasCalls := obj.take("tool_calls")
	switch {
	case hasText && hasCalls:
		ps.Add(path, `has both "text" and "tool_calls": a rule answers with one or the other`)
	case !hasText && !hasCalls:
		ps.Add(path, `needs "text" (a reply) or "tool_calls" (calls to make)`)
	case hasText:
		if s, ok := readString(toolspec.Join(path, "text"), rawText, ps); ok {
			if strings.TrimSpace(s) == "" {
				ps.Add(toolspec.Join(path, "text"), "empty: write the reply")
			}
			if r.re != nil {
				checkRefs(toolspec.Join(path, "text"), s, r.re, ps)
			}
			r.text = s
		}
	case hasCalls:
		r.calls = readCalls(toolspec.Join(path, "tool_calls"), rawCalls, r.re, ps)
	}

	if rawThen, ok := obj.take("then"); ok {
		thenPath := toolspec.Join(path, "then")
		if s, ok := readString(thenPath, rawThen, ps); ok {
			switch {
			case hasText && !hasCalls:
				ps.Add(thenPath, `only a "tool_calls" rule has "then" (the reply after the tool results); a "text" rule already answers`)
			case strings.TrimSpace(s) == "":
				ps.Add(thenPath, "empty: write the reply, or remove the key for the default one")
			default:
				t, err := parseThen(s)
				if err != nil {
					ps.Add(thenPath, "%v", err)
				} else {
					r.then = t
				}
			}
		}
	}

	if rawEx, ok := obj.take("example"); ok {
		if s, ok := readString(toolspec.Join(path, "example"), rawEx, ps); ok {
			if strings.TrimSpace(s) == "" {
				ps.Add(toolspec.Join(path, "example"), "empty: write a message this rule answers, or remove the key")
			}
			r.example = s
		}
	}

	obj.unknown(ps, ruleKeys...)
	if len(*ps) > before {
		return nil
	}
	// A then template that cannot run on the calls its own rule makes is a
	// script bug; finding it now beats finding it in the middle of a demo.
	if r.then != nil {
		if _, err := execThen(r.then, dryRun(r)); err != nil {
			ps.Add(toolspec.Join(path, "then"), "%v", err)
			return nil
		}
	}
	return r
}

// dryRun is the step a rule's then template is tried on at load time: the
// calls the rule makes, with placeholder results.
func dryRun(r *rule) *step {
	s := &step{user: r.example}
	for i, c := range r.calls {
		id := fmt.Sprintf("call_0_%d", i)
		s.calls = append(s.calls, message.ToolCallBlock{ID: id, Name: c.name, Arguments: encodeArgs(expand(c.args, r.re, "", nil).(map[string]any))})
		s.results = append(s.results, message.ToolResultBlock{ToolCallID: id, Content: json.RawMessage(`"(result of ` + c.name + `)"`)})
	}
	return s
}

func readCalls(path string, raw json.RawMessage, re *regexp.Regexp, ps *toolspec.Problems) []callSpec {
	elems, ok := readArray(path, raw, ps)
	if !ok {
		return nil
	}
	if len(elems) == 0 {
		ps.Add(path, `empty: list at least one call, or use "text" to answer without tools`)
		return nil
	}
	calls := make([]callSpec, 0, len(elems))
	for i, el := range elems {
		cpath := path + toolspec.Index(i)
		obj, ok := readObject(cpath, el, ps)
		if !ok {
			continue
		}
		var c callSpec
		if rawName, ok := obj.take("name"); !ok {
			ps.Add(cpath, `missing "name": the tool to call`)
		} else if s, ok := readString(toolspec.Join(cpath, "name"), rawName, ps); ok {
			if err := toolspec.CheckName(s); err != nil {
				ps.Add(toolspec.Join(cpath, "name"), "%v", err)
			}
			c.name = s
		}
		c.args = map[string]any{}
		if rawArgs, ok := obj.take("arguments"); ok {
			apath := toolspec.Join(cpath, "arguments")
			v, err := decodeValue(rawArgs)
			switch m, isObj := v.(map[string]any); {
			case err != nil:
				ps.Add(apath, "%v", err)
			case !isObj:
				ps.Add(apath, "want an object (tool arguments are always a JSON object), got %s", kindOf(rawArgs))
			default:
				c.args = m
				if re != nil {
					checkRefs(apath, m, re, ps)
				}
			}
		}
		obj.unknown(ps, "name", "arguments")
		calls = append(calls, c)
	}
	return calls
}

// checkRefs reports capture-group references the pattern cannot fill: Expand
// silently replaces them with nothing, which would send a tool an empty
// argument with no hint why.
func checkRefs(path string, v any, re *regexp.Regexp, ps *toolspec.Problems) {
	switch v := v.(type) {
	case string:
		for _, ref := range groupRefs(v) {
			if !hasGroup(re, ref) {
				ps.Add(path, "%s refers to a capture group the pattern does not have (it has %s); %s", "$"+ref, describeGroups(re), refHint(ref))
			}
		}
	case map[string]any:
		for _, k := range sortedKeys(v) {
			checkRefs(toolspec.Join(path, k), v[k], re, ps)
		}
	case []any:
		for i, e := range v {
			checkRefs(path+toolspec.Index(i), e, re, ps)
		}
	}
}

// groupRefs lists the names in $name and ${name} references the way
// regexp.Expand reads them; $$ and a $ not followed by a name are literal.
func groupRefs(s string) []string {
	var refs []string
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 || i+1 >= len(s) {
			return refs
		}
		s = s[i+1:]
		if s[0] == '$' {
			s = s[1:]
			continue
		}
		brace := s[0] == '{'
		body := s
		if brace {
			body = s[1:]
		}
		n := 0
		for n < len(body) && isNameByte(body[n]) {
			n++
		}
		switch {
		case n == 0:
			continue // a lone $: literal
		case brace && (n >= len(body) || body[n] != '}'):
			continue // ${ without a closing brace: literal
		}
		refs = append(refs, body[:n])
		if brace {
			s = body[n+1:]
		} else {
			s = body[n:]
		}
	}
}

// refHint says how to write what the author most likely meant: $1px reads
// as a group named "1px", so text after a numbered group needs braces.
func refHint(ref string) string {
	d := 0
	for d < len(ref) && ref[d] >= '0' && ref[d] <= '9' {
		d++
	}
	if d > 0 && d < len(ref) {
		return fmt.Sprintf("write ${%s}%s to put %q right after $%s", ref[:d], ref[d:], ref[d:], ref[:d])
	}
	return "write $$ for a literal $"
}

func isNameByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func hasGroup(re *regexp.Regexp, name string) bool {
	if n, ok := parseIndex(name); ok {
		return n <= re.NumSubexp()
	}
	return re.SubexpIndex(name) >= 0
}

func parseIndex(s string) (int, bool) {
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
		if n > 1<<20 {
			return n, true
		}
	}
	return n, true
}

func describeGroups(re *regexp.Regexp) string {
	n := re.NumSubexp()
	if n == 0 {
		return "no groups"
	}
	var names []string
	for _, name := range re.SubexpNames() {
		if name != "" {
			names = append(names, name)
		}
	}
	s := fmt.Sprintf("$1 to $%d", n)
	if n == 1 {
		s = "only $1"
	}
	if len(names) > 0 {
		s += ", named " + strings.Join(names, ", ")
	}
	return s
}

// checkExamples makes each example a tested claim: it must be answered by its
// own rule, so the help text the fallback shows never advertises a message
// that an earlier rule would steal.
func checkExamples(rules []*rule, ps *toolspec.Problems) {
	for _, r := range rules {
		if r.example == "" {
			continue
		}
		path := toolspec.Join("rules"+toolspec.Index(r.index), "example")
		first := firstMatch(rules, r.example)
		switch {
		case first == nil || !r.re.MatchString(r.example):
			ps.Add(path, "%q does not match this rule's pattern %q", r.example, r.re.String())
		case first != r:
			ps.Add(path, "%q is answered by rules[%d] first; reorder the rules or change the example", r.example, first.index)
		}
	}
}

func firstMatch(rules []*rule, text string) *rule {
	for _, r := range rules {
		if r.re.MatchString(text) {
			return r
		}
	}
	return nil
}

// ---- then templates ----

// parseThen compiles a then template and refuses the constructs whose cost
// is not bounded by the template's size (range, template calls and
// definitions), so a reply always renders in time linear in the script.
func parseThen(src string) (*template.Template, error) {
	t, err := template.New(thenName).Funcs(placeholderFuncs).Parse(src)
	if err != nil {
		return nil, fmt.Errorf("invalid template: %s", cleanTemplateErr(err))
	}
	if len(t.Templates()) > 1 {
		return nil, errors.New(`{{define}} and {{block}} are not supported in a scripted reply; use result, field, arg, error, user and results`)
	}
	if t.Tree == nil || t.Root == nil {
		return t, nil
	}
	if bad := forbidden(t.Root); bad != "" {
		return nil, fmt.Errorf("{{%s}} is not supported in a scripted reply (nothing in it needs a loop or a sub-template); use result, field, arg, error, user and results", bad)
	}
	return t, nil
}

func forbidden(n parse.Node) string {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return ""
		}
		for _, c := range n.Nodes {
			if bad := forbidden(c); bad != "" {
				return bad
			}
		}
	case *parse.RangeNode:
		return "range"
	case *parse.TemplateNode:
		return "template"
	case *parse.IfNode:
		return firstOf(forbidden(n.List), forbidden(n.ElseList))
	case *parse.WithNode:
		return firstOf(forbidden(n.List), forbidden(n.ElseList))
	}
	return ""
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ---- JSON helpers: strict objects with paths ----

// checkSyntax reports a JSON syntax error by line and column, which is where
// a person editing the script looks.
func checkSyntax(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := lineCol(data, se.Offset-1) // Offset counts the bad byte
			return fmt.Errorf("invalid JSON at line %d, column %d: %v", line, col, se)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return errors.New("the script is empty or cut short: want a JSON object with a \"rules\" list")
		}
		return fmt.Errorf("invalid JSON: %v", err)
	}
	if dec.More() {
		i := dec.InputOffset()
		for i < int64(len(data)) && strings.IndexByte(" \t\r\n", data[i]) >= 0 {
			i++
		}
		line, col := lineCol(data, i)
		return fmt.Errorf("unexpected data after the JSON object at line %d, column %d", line, col)
	}
	return nil
}

// lineCol gives the 1-based line and column of the byte at index i.
func lineCol(data []byte, i int64) (int, int) {
	i = max(0, min(i, int64(len(data))))
	before := data[:i]
	line := 1 + bytes.Count(before, []byte{'\n'})
	col := int(i) - bytes.LastIndexByte(before, '\n')
	return line, col
}

type object struct {
	path  string
	keys  []string
	vals  map[string]json.RawMessage
	taken map[string]bool
}

func readObject(path string, raw json.RawMessage, ps *toolspec.Problems) (*object, bool) {
	if kindOf(raw) != "an object" {
		ps.Add(path, "want an object, got %s", kindOf(raw))
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		ps.Add(path, "%v", err)
		return nil, false
	}
	o := &object{path: path, vals: map[string]json.RawMessage{}, taken: map[string]bool{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			ps.Add(path, "%v", err)
			return nil, false
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			ps.Add(toolspec.Join(path, key), "%v", err)
			return nil, false
		}
		if _, dup := o.vals[key]; dup {
			ps.Add(toolspec.Join(path, key), "duplicate key: keep one")
			continue
		}
		o.keys = append(o.keys, key)
		o.vals[key] = v
	}
	return o, true
}

func (o *object) take(key string) (json.RawMessage, bool) {
	v, ok := o.vals[key]
	if ok {
		o.taken[key] = true
	}
	return v, ok
}

// unknown reports every key nobody took, with the keys that are allowed, so
// a typo is named rather than silently ignored.
func (o *object) unknown(ps *toolspec.Problems, allowed ...string) {
	for _, k := range o.keys {
		if !o.taken[k] {
			ps.Add(toolspec.Join(o.path, k), "unknown key (allowed: %s)", strings.Join(allowed, ", "))
		}
	}
}

func readArray(path string, raw json.RawMessage, ps *toolspec.Problems) ([]json.RawMessage, bool) {
	if kindOf(raw) != "an array" {
		ps.Add(path, "want an array, got %s", kindOf(raw))
		return nil, false
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		ps.Add(path, "%v", err)
		return nil, false
	}
	return elems, true
}

func readString(path string, raw json.RawMessage, ps *toolspec.Problems) (string, bool) {
	if kindOf(raw) != "a string" {
		ps.Add(path, "want a string, got %s", kindOf(raw))
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		ps.Add(path, "%v", err)
		return "", false
	}
	return s, true
}

func kindOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// decodeValue decodes any JSON value keeping numbers as json.Number, so an
// argument such as 0.1 or 12345678901234567890 reaches the tool as written.
func decodeValue(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
