package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/tenxgraph/tenxgraph/host/message"
)

const thenName = "then"

// maxReply bounds what one then template may produce.
const maxReply = 1 << 20

// step is what a then template renders from: the user's message, the calls
// the rule made and their results, aligned by index.
type step struct {
	user    string
	calls   []message.ToolCallBlock
	results []message.ToolResultBlock
}

// placeholderFuncs declares the template functions at parse time; the real
// ones are bound to a step when the template runs.
var placeholderFuncs = (&step{}).funcs()

func (s *step) funcs() template.FuncMap {
	return template.FuncMap{
		"result":      s.result,
		"field":       s.field,
		"arg":         s.arg,
		"error":       s.isError,
		"user":        func() string { return s.user },
		"results":     s.all,
		"attachments": s.attachments,
	}
}

func (s *step) check(fn string, n int) error {
	switch {
	case n >= 0 && n < len(s.calls):
		return nil
	case len(s.calls) == 0:
		return fmt.Errorf("%s %d: this step made no tool calls", fn, n)
	case len(s.calls) == 1:
		return fmt.Errorf("%s %d: this step made 1 tool call, so the index must be 0", fn, n)
	}
	return fmt.Errorf("%s %d: this step made %d tool calls; use an index from 0 to %d", fn, n, len(s.calls), len(s.calls)-1)
}

// result is the Nth call's result: a JSON string as its text, anything else
// as compact JSON.
func (s *step) result(n int) (string, error) {
	if err := s.check("result", n); err != nil {
		return "", err
	}
	return render(s.results[n].Content), nil
}

// field is one top-level key of the Nth result, such as "text" in a
// clipboard tool's {"text": "…"}. A result that is not an object or lacks the
// key renders whole, so an error message still reaches the reply.
func (s *step) field(n int, key string) (string, error) {
	if err := s.check("field", n); err != nil {
		return "", err
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(s.results[n].Content, &obj) == nil {
		if v, ok := obj[key]; ok {
			return render(v), nil
		}
	}
	return render(s.results[n].Content), nil
}

// arg is an argument of the Nth call as the call was actually made.
func (s *step) arg(n int, key string) (string, error) {
	if err := s.check("arg", n); err != nil {
		return "", err
	}
	c := s.calls[n]
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(c.Arguments, &obj)
	v, ok := obj[key]
	if !ok {
		have := "it has no arguments"
		if len(obj) > 0 {
			have = "its arguments: " + strings.Join(sortedKeys(obj), ", ")
		}
		return "", fmt.Errorf("arg %d %q: the call to %s has no argument %q (%s)", n, key, c.Name, key, have)
	}
	return render(v), nil
}

// attachments is what the Nth result came with, as the model sees media:
// "[image image/png 64x64]" and the like, separated by spaces; "" for
// none.
func (s *step) attachments(n int) (string, error) {
	if err := s.check("attachments", n); err != nil {
		return "", err
	}
	return message.DescribeAll(s.results[n].Attachments), nil
}

// withAttachments is a result rendered, followed by its attachments.
func withAttachments(r message.ToolResultBlock) string {
	if len(r.Attachments) == 0 {
		return render(r.Content)
	}
	return render(r.Content) + " " + message.DescribeAll(r.Attachments)
}

func (s *step) isError(n int) (bool, error) {
	if err := s.check("error", n); err != nil {
		return false, err
	}
	return s.results[n].IsError, nil
}

// all lists every call's result as "name: result" ("name failed: …" for an
// error), joined with "; ".
func (s *step) all() string {
	parts := make([]string, len(s.calls))
	for i, c := range s.calls {
		verb := ":"
		if s.results[i].IsError {
			verb = " failed:"
		}
		parts[i] = fmt.Sprintf("%s%s %s", c.Name, verb, withAttachments(s.results[i]))
	}
	return strings.Join(parts, "; ")
}

// defaultThen is the reply of a rule without "then": a plain sentence naming
// each tool and what it returned, so a script works before anyone writes
// templates.
func defaultThen(s *step) string {
	if len(s.calls) == 0 {
		return "The tools returned nothing I can report."
	}
	parts := make([]string, len(s.calls))
	for i, c := range s.calls {
		outcome := "which returned"
		if s.results[i].IsError {
			outcome = "which failed with"
		}
		parts[i] = fmt.Sprintf("%s, %s %s", c.Name, outcome, withAttachments(s.results[i]))
	}
	switch len(parts) {
	case 1:
		return "I called " + parts[0] + "."
	case 2:
		return "I called " + parts[0] + ", and " + parts[1] + "."
	}
	return "I called " + strings.Join(parts[:len(parts)-1], "; ") + "; and " + parts[len(parts)-1] + "."
}

func render(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func execThen(t *template.Template, s *step) (string, error) {
	c, err := t.Clone()
	if err != nil {
		return "", err
	}
	c.Funcs(s.funcs())
	var out limitedBuffer
	if err := c.Execute(&out, nil); err != nil {
		return "", errors.New(cleanTemplateErr(err))
	}
	return out.String(), nil
}

// cleanTemplateErr turns text/template's messages into the words a script
// author needs: the line (and column) in the then text, and what is wrong.
func cleanTemplateErr(err error) string {
	msg := strings.TrimPrefix(err.Error(), "template: ")
	rest, ok := strings.CutPrefix(msg, thenName+":")
	if !ok {
		return msg
	}
	loc, body, ok := strings.Cut(rest, ": ")
	if !ok {
		return msg
	}
	body = strings.TrimPrefix(body, `executing "`+thenName+`" `)
	if at, call, ok := strings.Cut(body, ": error calling "); ok {
		if _, inner, ok := strings.Cut(call, ": "); ok {
			body = at + ": " + inner
		}
	}
	if line, col, ok := strings.Cut(loc, ":"); ok {
		return fmt.Sprintf("line %s, column %s: %s", line, col, body)
	}
	return fmt.Sprintf("line %s: %s", loc, body)
}

type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxReply {
		return 0, fmt.Errorf("the reply is longer than %d bytes", maxReply)
	}
	return b.Buffer.Write(p)
}

// expand fills capture-group references in every string of v, recursively,
// with regexp.Expand's rules. Values stay strings even when the capture is a
// number: the script says what it sends.
func expand(v any, re *regexp.Regexp, src string, match []int) any {
	switch v := v.(type) {
	case string:
		return string(re.ExpandString(nil, v, src, match))
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = expand(e, re, src, match)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = expand(e, re, src, match)
		}
		return out
	}
	return v
}

// encodeArgs writes arguments as compact JSON with keys sorted (so the same
// script always sends the same bytes) and without HTML escaping (so "<" stays
// readable in logs and transcripts).
func encodeArgs(args map[string]any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil {
		return json.RawMessage(`{}`) // unreachable: decoded JSON always re-encodes
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
