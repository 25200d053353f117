package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// kind is a JSON value's type.
type kind int

const (
	kindObject kind = iota + 1
	kindArray
	kindString
	kindNumber
	kindBool
	kindNull
)

func (k kind) String() string {
	switch k {
	case kindObject:
		return "an object"
	case kindArray:
		return "an array"
	case kindString:
		return "a string"
	case kindNumber:
		return "a number"
	case kindBool:
		return "a boolean"
	}
	return "null"
}

// value is a decoded JSON value. Objects keep their keys in file order,
// which encoding/json's maps lose: order makes reports and MCPServerOrder
// follow the file, and re-encoded schemas read as written.
type value struct {
	kind  kind
	text  string   // a string's value or a number's literal
	b     bool     // a boolean's value
	keys  []string // an object's keys; a repeated key keeps its first value
	vals  []*value
	items []*value // an array's elements
}

// field returns the value of key in an object, or nil (also when v is
// nil or not an object).
func (v *value) field(key string) *value {
	if v == nil {
		return nil
	}
	for i, k := range v.keys {
		if k == key {
			return v.vals[i]
		}
	}
	return nil
}

// without is v without the given keys of an object: what a section reads
// when keys it refused must read as left out.
func (v *value) without(keys ...string) *value {
	if len(keys) == 0 || v == nil || v.kind != kindObject {
		return v
	}
	out := &value{kind: kindObject}
	for i, k := range v.keys {
		if !slices.Contains(keys, k) {
			out.keys, out.vals = append(out.keys, k), append(out.vals, v.vals[i])
		}
	}
	return out
}

// encode writes v back as compact JSON, for parameters schemas that are
// kept raw.
func (v *value) encode(buf *bytes.Buffer) { v.encodeKept("", buf, nil) }

// encodeKept writes v, the value at path, as compact JSON without the
// members and elements whose paths skip reports (nil: none).
func (v *value) encodeKept(path string, buf *bytes.Buffer, skip func(string) bool) {
	switch v.kind {
	case kindObject:
		buf.WriteByte('{')
		n := 0
		for i, k := range v.keys {
			p := toolspec.Join(path, pathKey(k))
			if skip != nil && skip(p) {
				continue
			}
			if n++; n > 1 {
				buf.WriteByte(',')
			}
			encodeString(buf, k)
			buf.WriteByte(':')
			v.vals[i].encodeKept(p, buf, skip)
		}
		buf.WriteByte('}')
	case kindArray:
		buf.WriteByte('[')
		n := 0
		for i, it := range v.items {
			p := toolspec.Join(path, toolspec.Index(i))
			if skip != nil && skip(p) {
				continue
			}
			if n++; n > 1 {
				buf.WriteByte(',')
			}
			it.encodeKept(p, buf, skip)
		}
		buf.WriteByte(']')
	case kindString:
		encodeString(buf, v.text)
	case kindNumber:
		buf.WriteString(v.text)
	case kindBool:
		buf.WriteString(strconv.FormatBool(v.b))
	default:
		buf.WriteString("null")
	}
}

func encodeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // a string always encodes
	buf.Truncate(buf.Len() - 1) // Encode adds a newline
}

// maxDepth bounds nesting. Decoder.Token has no limit of its own and the
// walk is recursive, so without it a file of a million '[' would exhaust
// the stack; no real config comes close. It is strictjson's, which reads
// the parts of the config that plugins and tools decode (their options):
// a config this parser takes, they take too.
const maxDepth = strictjson.MaxDepth

// parser reads the file into values with jsontext (the reference JSON
// reader strictjson uses too), keeping what encoding/json's maps lose: key
// order and number literals. Syntax errors end the parse (nothing after
// them can be trusted); duplicate keys are recorded, the first value kept,
// and the parse goes on.
type parser struct {
	data []byte
	dec  *jsontext.Decoder
	ps   *toolspec.Problems
}

// posError is an error of the parser's own, which carries its position.
type posError string

func (e posError) Error() string { return string(e) }

// parse decodes data into values. Problems with the JSON itself are added
// to ps; the value is nil when the text is not JSON at all.
func parse(data []byte, ps *toolspec.Problems) *value {
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // editors on Windows add a BOM
	p := &parser{data: data, ps: ps}
	// Bytes that are not UTF-8 would be read as U+FFFD by some readers;
	// the config is refused instead, as requests are.
	if !utf8.Valid(data) {
		off := 0
		for r, n := utf8.DecodeRune(data); r != utf8.RuneError || n > 1; r, n = utf8.DecodeRune(data[off:]) {
			off += n
		}
		path := ""
		var e *strictjson.Error
		if errors.As(strictjson.Check(data), &e) {
			path = e.Path
		}
		ps.Add(path, "%s: invalid UTF-8: save the file as UTF-8 text", p.position(int64(off)))
		return nil
	}
	if len(bytes.TrimLeft(data, " \t\r\n")) == 0 {
		ps.Add("", "the file is empty: a config is a JSON object such as {\"agent\": \"tenxgraph:react\"}")
		return nil
	}
	p.dec = jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true))
	v, err := p.value("")
	if err != nil {
		p.syntax(err)
		return nil
	}
	end := p.dec.InputOffset()
	if _, err := p.dec.ReadToken(); err != io.EOF {
		for end < int64(len(data)) && isSpace(data[end]) {
			end++
		}
		ps.Add("", "%s: unexpected data after the top-level object", p.position(end))
		return nil
	}
	return v
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// value reads the next value, at path.
func (p *parser) value(path string) (*value, error) {
	tok, err := p.dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{', '[':
		if p.dec.StackDepth() > maxDepth {
			return nil, posError(fmt.Sprintf("%s: nested more than %d levels deep", p.position(p.dec.InputOffset()), maxDepth))
		}
		v := &value{kind: kindArray}
		if tok.Kind() == '{' {
			v.kind = kindObject
		}
		first := map[string]int64{} // key -> offset, for the duplicate's message
		for {
			switch p.dec.PeekKind() {
			case '}', ']':
				_, err := p.dec.ReadToken()
				return v, err
			case 0: // an error, which the next read returns
				_, err := p.dec.ReadToken()
				return nil, err
			}
			if v.kind == kindArray {
				child, err := p.value(toolspec.Join(path, toolspec.Index(len(v.items))))
				if err != nil {
					return nil, err
				}
				v.items = append(v.items, child)
				continue
			}
			name, err := p.dec.ReadToken()
			if err != nil {
				return nil, err
			}
			key, at := name.String(), p.dec.InputOffset()
			kpath := toolspec.Join(path, pathKey(key))
			child, err := p.value(kpath)
			if err != nil {
				return nil, err
			}
			if off, dup := first[key]; dup {
				p.ps.Add(kpath, "duplicate key %q (first on line %d): JSON readers disagree on which one wins, so keep one", key, p.line(off))
				continue
			}
			first[key] = at
			v.keys = append(v.keys, key)
			v.vals = append(v.vals, child)
		}
	case '"':
		return &value{kind: kindString, text: tok.String()}, nil
	case '0':
		return &value{kind: kindNumber, text: tok.String()}, nil
	case 't', 'f':
		return &value{kind: kindBool, b: tok.Bool()}, nil
	}
	return &value{kind: kindNull}, nil
}

// syntax reports err, which ended the parse, with a line and column, in
// the words of encoding/json, whose offsets (json.Unmarshal scans the
// whole text from its first byte) editors agree with.
func (p *parser) syntax(err error) {
	var own posError
	if errors.As(err, &own) {
		p.ps.Add("", "%v", err)
		return
	}
	var se *json.SyntaxError
	var v any
	if errors.As(json.Unmarshal(p.data, &v), &se) {
		if se.Offset >= int64(len(p.data)) && strings.Contains(se.Error(), "unexpected end") {
			p.ps.Add("", "%s: invalid JSON: the file ends before the JSON value does", p.position(int64(len(p.data))))
			return
		}
		p.ps.Add("", "%s: invalid JSON: %s", p.position(se.Offset-1), se.Error())
		return
	}
	p.ps.Add("", "invalid JSON: %v", err)
}

// position turns a byte offset into "line L, column C" (both from 1,
// columns counted in characters, as editors show them).
func (p *parser) position(off int64) string {
	if off > int64(len(p.data)) {
		off = int64(len(p.data))
	}
	if off < 0 {
		off = 0
	}
	before := p.data[:off]
	col := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return fmt.Sprintf("line %d, column %d", p.line(off), col)
}

func (p *parser) line(off int64) int {
	return bytes.Count(p.data[:min(max(off, 0), int64(len(p.data)))], []byte("\n")) + 1
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// pathKey is a key as a path element: bare when it is a plain word, quoted
// in brackets otherwise, so a key containing "." or " " cannot make a path
// ambiguous.
func pathKey(key string) string {
	if plainKey.MatchString(key) {
		return key
	}
	return "[" + strconv.Quote(key) + "]"
}
