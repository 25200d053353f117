package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

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

// encode writes v back as compact JSON, for parameters schemas that are
// kept raw.
func (v *value) encode(buf *bytes.Buffer) {
	switch v.kind {
	case kindObject:
		buf.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			encodeString(buf, k)
			buf.WriteByte(':')
			v.vals[i].encode(buf)
		}
		buf.WriteByte('}')
	case kindArray:
		buf.WriteByte('[')
		for i, it := range v.items {
			if i > 0 {
				buf.WriteByte(',')
			}
			it.encode(buf)
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

// parser builds the tree. Syntax errors end the parse (nothing after them
// can be trusted); duplicate keys are recorded and the parse goes on.
type parser struct {
	data []byte
	dec  *json.Decoder
	ps   *toolspec.Problems
}

// parse decodes data into a tree. Problems with the JSON itself are added
// to ps; the tree is nil when the text is not JSON at all.
func parse(data []byte, ps *toolspec.Problems) *value {
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // editors on Windows add a BOM
	p := &parser{data: data, dec: json.NewDecoder(bytes.NewReader(data)), ps: ps}
	// encoding/json would quietly turn bytes that are not UTF-8 into
	// U+FFFD; the config is refused instead, as requests are.
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
	p.dec.UseNumber()
	tok, err := p.dec.Token()
	if err == io.EOF {
		ps.Add("", "the file is empty: a config is a JSON object such as {\"agent\": \"tenxgraph:react\"}")
		return nil
	}
	v, err := p.value(tok, err, "", 0)
	if err != nil {
		p.syntax(err)
		return nil
	}
	end := p.dec.InputOffset()
	if _, err := p.dec.Token(); err != io.EOF {
		at := end
		for at < int64(len(data)) && isSpace(data[at]) {
			at++
		}
		ps.Add("", "%s: unexpected data after the top-level object", p.position(at))
		return nil
	}
	return v
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// value builds the value that starts with tok.
func (p *parser) value(tok json.Token, err error, path string, depth int) (*value, error) {
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxDepth {
			return nil, fmt.Errorf("%s: nested more than %d levels deep", p.position(p.dec.InputOffset()), maxDepth)
		}
		if t == '[' {
			return p.array(path, depth)
		}
		return p.object(path, depth)
	case string:
		return &value{kind: kindString, text: t}, nil
	case json.Number:
		return &value{kind: kindNumber, text: t.String()}, nil
	case bool:
		return &value{kind: kindBool, b: t}, nil
	case nil:
		return &value{kind: kindNull}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

func (p *parser) object(path string, depth int) (*value, error) {
	v := &value{kind: kindObject}
	first := map[string]int64{} // key -> offset, for the duplicate's message
	for p.dec.More() {
		tok, err := p.dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("%s: expected an object key", p.position(p.dec.InputOffset()))
		}
		at := p.dec.InputOffset()
		kpath := toolspec.Join(path, pathKey(key))
		tok, err = p.dec.Token()
		child, err := p.value(tok, err, kpath, depth+1)
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
	if _, err := p.dec.Token(); err != nil { // the closing '}'
		return nil, err
	}
	return v, nil
}

func (p *parser) array(path string, depth int) (*value, error) {
	v := &value{kind: kindArray}
	for p.dec.More() {
		tok, err := p.dec.Token()
		child, err := p.value(tok, err, toolspec.Join(path, toolspec.Index(len(v.items))), depth+1)
		if err != nil {
			return nil, err
		}
		v.items = append(v.items, child)
	}
	if _, err := p.dec.Token(); err != nil { // the closing ']'
		return nil, err
	}
	return v, nil
}

// syntax reports err, which ended the parse, with a line and column.
// Decoder.Token's offsets are unreliable for errors inside a scalar (they
// leave out bytes consumed as delimiters), so the position comes from
// json.Unmarshal, which scans the whole text from its first byte.
func (p *parser) syntax(err error) {
	var se *json.SyntaxError
	if !errors.As(err, &se) && !errors.Is(err, io.ErrUnexpectedEOF) && err != io.EOF {
		p.ps.Add("", "%v", err) // our own errors carry their position
		return
	}
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
