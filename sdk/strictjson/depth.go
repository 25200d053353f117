package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// MaxDepth is how deeply arrays and objects may nest in a JSON text the
// package reads: a value nested deeper is refused before any decoding, by
// one pass over the bytes that costs about what reading them does.
//
// JSON readers all stop somewhere (.NET's System.Text.Json at 64,
// serde_json at 128, Jackson at 1,000, Go's json packages at 10,000); the
// deeper the limit, the more a small body can make a server do, and the
// more of the clients and model providers a stored value can break when it
// is sent on (Python's json stops near 1,000, at its recursion limit). 128
// is serde_json's: several times what real documents use (JSON Schemas,
// tool arguments and AG-UI state rarely pass 20, and a request's envelope
// adds 5), and shallow enough that no reader downstream trips on a value
// tenxgraph accepted.
const MaxDepth = 128

// ErrMaxDepth is wrapped by the *Error for a text that nests deeper than
// MaxDepth.
var ErrMaxDepth = errors.New("exceeded max depth")

// frame is one open array or object of checkDepth's scan: how many
// elements came before the current one, and the current member's key (as
// its quoted bytes in the text) in an object.
type frame struct {
	object     bool
	index      int
	key0, key1 int
}

// checkDepth refuses data when its arrays and objects nest deeper than
// MaxDepth, naming the path of the value that goes too deep. It reads only
// structure: strings are skipped whole (bytes.IndexByte finds their end),
// and text that is not JSON is left to the decoder, which reports it. Its
// stack is fixed, so it allocates nothing unless it fails.
func checkDepth(data []byte) error {
	var stack [MaxDepth]frame
	depth := 0
	str0, str1 := 0, 0 // the last string, a key when a ':' follows
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			end := stringEnd(data, i)
			if end < 0 {
				return nil // unterminated: the decoder says so
			}
			str0, str1 = i, end+1
			i = end
		case ':':
			if depth > 0 {
				stack[depth-1].key0, stack[depth-1].key1 = str0, str1
			}
		case ',':
			if depth > 0 {
				stack[depth-1].index++
			}
		case '[', '{':
			if depth == MaxDepth {
				return &Error{Path: framePath(data, stack[:]), Err: ErrMaxDepth,
					Msg: fmt.Sprintf("invalid JSON at byte %d: %v: arrays and objects may nest at most %d deep", i+1, ErrMaxDepth, MaxDepth)}
			}
			stack[depth] = frame{object: data[i] == '{'}
			depth++
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// stringEnd is the index of the quote that closes the string opening at
// data[start], or -1 when none does. A quote preceded by an odd number of
// backslashes is escaped; each backslash is counted once, for the quote
// that follows its run, so the scan is linear.
func stringEnd(data []byte, start int) int {
	for i := start + 1; ; i++ {
		n := bytes.IndexByte(data[i:], '"')
		if n < 0 {
			return -1
		}
		i += n
		back := 0
		for j := i - 1; j > start && data[j] == '\\'; j-- {
			back++
		}
		if back%2 == 0 {
			return i
		}
	}
}

// framePath is the path of the value the innermost of stack holds.
func framePath(data []byte, stack []frame) string {
	var b strings.Builder
	var key []byte
	for _, f := range stack {
		if !f.object {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(f.index))
			b.WriteByte(']')
			continue
		}
		var err error
		if key, err = jsontext.AppendUnquote(key[:0], data[f.key0:f.key1]); err != nil {
			key = append(key[:0], data[f.key0:f.key1]...) // not a valid string: as written
		}
		if k := Key(string(key)); b.Len() == 0 || k[0] == '[' {
			b.WriteString(k)
		} else {
			b.WriteByte('.')
			b.WriteString(k)
		}
	}
	return b.String()
}
