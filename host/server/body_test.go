package server

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// utf8Body must judge a sequence alike wherever the reads cut it: one byte
// at a time, or all at once.
func TestUTF8Body(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
		at string // the offset the error names
	}{
		{`{"t": "héllo wörld ✓ 𝄞"}`, true, ""},
		{"", true, ""},
		{"ab\xffcd", false, "offset 2"},
		{"ab\xe2\x9c", false, "offset 2"},               // cut by the end of the body
		{"ab\xe2\x9cx", false, "offset 2"},              // cut by a byte that does not continue it
		{"\xf0\x9d\x84\x9e\xc0\xaf", false, "offset 4"}, // overlong "/"
		{"\xed\xa0\x80", false, "offset 0"},             // a UTF-16 surrogate
	} {
		for name, wrap := range map[string]func(io.Reader) io.Reader{
			"whole":    func(r io.Reader) io.Reader { return r },
			"one byte": iotest.OneByteReader,
			"halves":   iotest.HalfReader,
		} {
			b := &utf8Body{ReadCloser: io.NopCloser(wrap(strings.NewReader(c.in)))}
			got, err := io.ReadAll(b)
			switch {
			case c.ok && (err != nil || string(got) != c.in):
				t.Errorf("%q (%s): %q, %v", c.in, name, got, err)
			case !c.ok && (err == nil || !strings.Contains(err.Error(), c.at) || !strings.Contains(err.Error(), "not UTF-8")):
				t.Errorf("%q (%s): error %v, want one naming %s", c.in, name, err, c.at)
			}
		}
	}
}
