package builtin

import (
	"bytes"
	"encoding/base64"
	"unicode/utf8"
)

// encodeContent returns b as text when it is UTF-8 without NUL bytes, and as
// base64 (with encoding "base64") otherwise: JSON strings carry text, and a
// model is better served by base64 than by replacement characters.
//
// When b was cut at a size limit (truncated), the cut may split the last
// character; those few bytes are dropped from the text rather than turning
// the whole body into base64.
func encodeContent(b []byte, truncated bool) (content, encoding string) {
	text := b
	if truncated {
		text = trimPartialRune(b)
	}
	if utf8.Valid(text) && bytes.IndexByte(text, 0) < 0 {
		return string(text), ""
	}
	return base64.StdEncoding.EncodeToString(b), "base64"
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}
