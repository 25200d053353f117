// Package strictjson is the one JSON decoder for everything tenxgraph reads
// from outside the process: API requests, messages, plugin options and tool
// arguments. A client, a model or a config author who misspells a key, sends
// it twice or in another letter case gets an error naming the exact place,
// never a value silently dropped or overwritten.
//
// The rules, on top of RFC 8259 syntax:
//
//   - a key unknown to the Go type is an error (Unmarshal; see Check for raw
//     values, which have no type);
//   - a key that appears twice in one object is an error: JSON readers
//     disagree on which one wins, so a request could mean two things;
//   - keys match exactly: "Input" or "ROLE" is an unknown key, not "input"
//     or "role";
//   - strings must be valid UTF-8;
//   - arrays and objects nest at most MaxDepth deep, checked before
//     anything is decoded, so a small text cannot cost a large one's time;
//   - exactly one JSON value: trailing data is an error.
//
// Every error is an *Error carrying the JSON path of the part at fault
// ("input.messages[2].content[0].type").
//
// It is built on github.com/go-json-experiment/json, the reference
// implementation of encoding/json/v2, whose defaults are these rules.
package strictjson

import (
	"bytes"
	"encoding"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

var strict = json.JoinOptions(
	json.RejectUnknownMembers(true),
	json.MatchCaseInsensitiveNames(false),
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
)

// Unmarshal decodes data, which must be exactly one JSON value, into v
// under the package's rules. Types with an UnmarshalJSON method decode
// themselves (after the whole value has been checked for syntax, duplicate
// keys and UTF-8); an error they return is placed at their path.
func Unmarshal(data []byte, v any) error {
	return unmarshal(data, v, strict)
}

// unmarshal is Unmarshal under opts, which hold strict.
func unmarshal(data []byte, v any, opts json.Options) error {
	if err := checkDepth(data); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v, opts); err != nil {
		return describe(data, err)
	}
	return nil
}

// Check reports whether data is exactly one JSON value under the package's
// rules (syntax, duplicate keys, UTF-8, depth), for values kept raw, such as tool
// arguments or results, whose keys no Go type knows.
func Check(data []byte) error {
	var v jsontext.Value
	return Unmarshal(data, &v)
}

// strictNumbers is strict, with a JSON number held by an interface decoded
// as a json.Number, its text, and every other value left to the default.
var strictNumbers = json.JoinOptions(strict, json.WithUnmarshalers(json.UnmarshalFromFunc(
	func(dec *jsontext.Decoder, v *any) error {
		if dec.PeekKind() != '0' {
			return errors.ErrUnsupported
		}
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		*v = stdjson.Number(tok.String())
		return nil
	})))

// Decode decodes data as Check checks it, in the same pass, into the values
// encoding/json's Decoder gives with UseNumber (map[string]any, []any,
// json.Number, string, bool, nil): for code that walks a value whose keys
// no Go type knows and must keep its numbers exact, such as a JSON Schema
// validator.
//
// A text Decode refuses gets Check's error, which the numbers' decoding can
// place less well.
func Decode(data []byte) (any, error) {
	var v any
	if err := unmarshal(data, &v, strictNumbers); err != nil {
		if cerr := Check(data); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	return v, nil
}

// describe turns an error of the json package into an *Error with a path.
func describe(data []byte, err error) error {
	// Invalid UTF-8 is found first: the json package reports it as a
	// syntax error like any other.
	if !utf8.Valid(data) {
		off := invalidUTF8(data)
		return &Error{Path: pathAt(data, off), Msg: fmt.Sprintf("invalid UTF-8 at byte %d: JSON text must be UTF-8", off+1), Err: err}
	}
	// A type error can be found before a syntax error later in the text;
	// text that is not valid JSON is reported as such first.
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		dec := jsontext.NewDecoder(bytes.NewReader(data))
		if _, serr := dec.ReadValue(); !errors.As(serr, &se) {
			if _, serr := dec.ReadToken(); !errors.As(serr, &se) {
				se = nil
			}
		}
	}
	var me *json.SemanticError
	switch {
	case se != nil:
		return syntaxError(data, se)
	case errors.As(err, &me):
		return semanticError(data, me)
	}
	return &Error{Msg: err.Error(), Err: err}
}

func syntaxError(data []byte, se *jsontext.SyntacticError) *Error {
	path := pointerPath(data, se.JSONPointer)
	switch {
	case errors.Is(se, jsontext.ErrDuplicateName):
		return &Error{Path: path, Msg: "duplicate key: JSON readers disagree on which value wins, so send each key once", Err: se}
	case len(bytes.TrimSpace(data)) == 0:
		return &Error{Msg: "empty: want a JSON value", Err: se}
	case errors.Is(se, io.ErrUnexpectedEOF):
		return &Error{Msg: "invalid JSON: the text ends before the JSON value does", Err: se}
	case trailing(data, se.ByteOffset):
		return &Error{Msg: "unexpected data after the JSON value", Err: se}
	}
	msg := fmt.Sprintf("invalid JSON at byte %d", se.ByteOffset+1)
	if se.Err != nil {
		msg += ": " + se.Err.Error()
	}
	return &Error{Path: path, Msg: msg, Err: se}
}

// trailing reports whether data holds one complete JSON value before off.
func trailing(data []byte, off int64) bool {
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if _, err := dec.ReadValue(); err != nil {
		return false
	}
	return dec.InputOffset() <= off
}

func semanticError(data []byte, me *json.SemanticError) *Error {
	path := pointerPath(data, me.JSONPointer)
	var inner *Error
	switch {
	case errors.As(me.Err, &inner):
		// An UnmarshalJSON method that decoded its part with this package.
		return &Error{Path: Join(path, inner.Path), Msg: inner.Msg, Err: inner.Err}
	case errors.Is(me.Err, json.ErrUnknownName):
		return &Error{Path: path, Msg: "unknown key" + caseHint(me), Err: me}
	case me.Err != nil && me.GoType != nil && me.JSONKind != 0 && !isTypeMismatch(me):
		return &Error{Path: path, Msg: me.Err.Error(), Err: me}
	case me.GoType != nil && me.JSONKind != 0:
		return &Error{Path: path, Msg: fmt.Sprintf("must be %s, got %s", want(me.GoType), got(me)), Err: me}
	case me.Err != nil:
		return &Error{Path: path, Msg: me.Err.Error(), Err: me}
	}
	return &Error{Path: path, Msg: me.Error(), Err: me}
}

// isTypeMismatch reports whether the error is about the JSON kind not
// fitting the Go type, rather than a method's own complaint. A type read
// from text complains only about strings: any other kind is refused by the
// json package for it.
func isTypeMismatch(me *json.SemanticError) bool {
	if me.Err == nil || me.JSONKind != '"' && decodesText(me.GoType) {
		return true
	}
	// A number that does not fit (1.5 for an int, 300 for a uint8) is a
	// mismatch too: its cause is a strconv error.
	return errors.Is(me.Err, strconv.ErrSyntax) || errors.Is(me.Err, strconv.ErrRange)
}

// caseHint names the key the client probably meant when it differs only in
// letter case: keys are case-sensitive, which surprises people used to
// encoding/json.
func caseHint(me *json.SemanticError) string {
	t := me.GoType
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return ""
	}
	if tag := fieldFolding(t, me.JSONPointer.LastToken()); tag != "" {
		return fmt.Sprintf(" (keys are case-sensitive: did you mean %q?)", tag)
	}
	return ""
}

// fieldFolding returns the JSON name of a field of struct t (or of a struct
// it embeds) that equals name but for letter case.
func fieldFolding(t reflect.Type, name string) string {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			if got := fieldFolding(f.Type, name); got != "" {
				return got
			}
			continue
		}
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		if tag != name && strings.EqualFold(tag, name) {
			return tag
		}
	}
	return ""
}

// decodesText reports whether t reads itself from a JSON string only,
// with an UnmarshalText method (sdk.Duration, netip.Addr): whatever its Go
// kind, a number or an object is the wrong kind of JSON for it.
func decodesText(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) &&
		!p.Implements(reflect.TypeFor[json.Unmarshaler]()) && !p.Implements(reflect.TypeFor[json.UnmarshalerFrom]())
}

// want names what JSON a Go type decodes from.
func want(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[jsontext.Value]():
		return "a JSON value"
	case decodesText(t):
		return "a string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a " + t.String()
}

// got names the JSON that came, with a number's value when it is the
// problem (1.5 for an integer).
func got(me *json.SemanticError) string {
	switch me.JSONKind {
	case 'n':
		return "null"
	case 't', 'f':
		return "bool"
	case '"':
		return "string"
	case '0':
		if len(me.JSONValue) > 0 && len(me.JSONValue) < 40 {
			return "number " + string(me.JSONValue)
		}
		return "number"
	case '[':
		return "array"
	case '{':
		return "object"
	}
	return me.JSONKind.String()
}

// invalidUTF8 returns the offset of the first byte that is not UTF-8.
func invalidUTF8(data []byte) int64 {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return int64(i)
		}
		i += n
	}
	return int64(len(data))
}

// pathAt is the path of the innermost value containing byte off.
func pathAt(data []byte, off int64) string {
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	path := ""
	for {
		if _, err := dec.ReadToken(); err != nil {
			return path
		}
		path = stackPath(dec)
		if dec.InputOffset() > off {
			return path
		}
	}
}

// pointerPath turns a JSON Pointer into a path. A pointer does not say
// whether "0" is an array index or an object key, so the text is scanned
// to the pointed-at value to find out; only errors take this path.
func pointerPath(data []byte, ptr jsontext.Pointer) string {
	if ptr == "" {
		return ""
	}
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	for {
		if _, err := dec.ReadToken(); err != nil {
			break
		}
		if p := dec.StackPointer(); p == ptr {
			return stackPath(dec)
		}
	}
	// Not reached by the scan (the error is where the text stops making
	// sense): guess that numbers are indexes.
	path := ""
	for tok := range ptr.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil {
			path = Join(path, "["+tok+"]")
		} else {
			path = Join(path, Key(tok))
		}
	}
	return path
}

// stackPath is the path of the value the decoder last read.
func stackPath(dec *jsontext.Decoder) string {
	path := ""
	i := 1
	for tok := range dec.StackPointer().Tokens() {
		kind, _ := dec.StackIndex(i)
		if kind == '[' {
			path = Join(path, "["+tok+"]")
		} else {
			path = Join(path, Key(tok))
		}
		i++
	}
	return path
}
