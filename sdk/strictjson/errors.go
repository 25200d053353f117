package strictjson

import (
	"errors"
	"strconv"
)

// Error is a decoding error at one place in the input.
type Error struct {
	// Path is where the problem is, as "a.b[2].c" (a key that is not a
	// plain word is written ["like this"]); empty for the value as a whole.
	Path string
	// Msg says what is wrong there, for a person.
	Msg string
	// Err is the underlying error, when there is one (an error returned by
	// a type's UnmarshalJSON method, say).
	Err error
}

// Error returns "path: msg", or msg alone at the top level.
func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// At returns err with prefix put in front of its path, for a decoder that
// decodes a part of a larger value on its own (a message inside a request).
// An error that is not an *Error becomes one at prefix.
func At(prefix string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return &Error{Path: Join(prefix, e.Path), Msg: e.Msg, Err: e.Err}
	}
	return &Error{Path: prefix, Msg: err.Error(), Err: err}
}

// Join appends a path element (a key, or "[i]") to a path.
func Join(path, elem string) string {
	switch {
	case path == "":
		return elem
	case elem == "":
		return path
	case elem[0] == '[':
		return path + elem
	}
	return path + "." + elem
}

// Key is a key as a path element: bare when it is a plain word, quoted in
// brackets otherwise, so a key holding "." or " " cannot make a path
// ambiguous.
func Key(k string) string {
	if k == "" {
		return `[""]`
	}
	for _, c := range []byte(k) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "[" + strconv.Quote(k) + "]"
		}
	}
	return k
}

// Index is the path element of an array element.
func Index(i int) string { return "[" + strconv.Itoa(i) + "]" }
