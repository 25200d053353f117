package message

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Describe is how a media block reads as text, where its bytes cannot go:
// "[image image/png 64x64]", "[file application/pdf a.pdf 12345 bytes]",
// "[audio audio/wav 12345 bytes]". It is what the scripted model sees in
// place of the bytes, and what a provider sends instead of a block its API
// does not take. The type and the file name are the sender's words, so
// they are cut short and lose brackets and control characters: a stand-in
// stays one line that ends where it seems to.
func (b MediaBlock) Describe() string {
	var s strings.Builder
	s.WriteByte('[')
	s.WriteString(clean(b.Kind, 16))
	s.WriteByte(' ')
	s.WriteString(clean(b.MimeType, 100))
	if b.Filename != "" {
		s.WriteByte(' ')
		s.WriteString(clean(b.Filename, 100))
	}
	size := b.Size
	if size == 0 {
		size = int64(len(b.Data))
	}
	switch {
	case b.Kind == TypeImage && b.Width > 0 && b.Height > 0:
		s.WriteByte(' ')
		s.WriteString(strconv.Itoa(b.Width))
		s.WriteByte('x')
		s.WriteString(strconv.Itoa(b.Height))
	case size > 0:
		s.WriteByte(' ')
		s.WriteString(strconv.FormatInt(size, 10))
		s.WriteString(" bytes")
	}
	s.WriteByte(']')
	return s.String()
}

// clean keeps at most max runes of s, with brackets, spaces and control
// characters replaced by '_'.
func clean(s string, max int) string {
	ok := utf8.RuneCountInString(s) <= max
	for _, r := range s {
		if !ok {
			break
		}
		ok = !bad(r)
	}
	if ok {
		return s
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("…")
			break
		}
		if bad(r) {
			r = '_'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

func bad(r rune) bool {
	return r == '[' || r == ']' || r == utf8.RuneError || unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// TextView is the message as text: its text blocks joined, as Text joins
// them, with each media block's Describe in its place, set off by a space.
// It is what a model that reads only text (the scripted model) is given.
func (m Message) TextView() string {
	var b strings.Builder
	media := false
	for _, c := range m.Content {
		switch c := c.(type) {
		case TextBlock:
			if media && c.Text != "" && !startsSpace(c.Text) {
				b.WriteByte(' ')
			}
			media = false
			b.WriteString(c.Text)
		case MediaBlock:
			if b.Len() > 0 && !endsSpace(b.String()) {
				b.WriteByte(' ')
			}
			b.WriteString(c.Describe())
			media = true
		}
	}
	return b.String()
}

// DescribeAll is the stand-ins of blocks (a tool result's attachments),
// separated by spaces; "" for none.
func DescribeAll(blocks []MediaBlock) string {
	parts := make([]string, len(blocks))
	for i, a := range blocks {
		parts[i] = a.Describe()
	}
	return strings.Join(parts, " ")
}

func startsSpace(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r)
}

func endsSpace(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return unicode.IsSpace(r)
}
