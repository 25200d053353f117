package server

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// utf8Body passes a request body through, failing the read that meets a
// byte sequence that is not UTF-8. JSON text is UTF-8 (RFC 8259), and Go's
// decoder would otherwise turn such bytes into U+FFFD without a word, so two
// different thread ids (or messages) could decode alike.
type utf8Body struct {
	io.ReadCloser
	off  int64  // bytes read before the current read
	tail []byte // a UTF-8 sequence cut by the end of the last read
}

func (b *utf8Body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	chunk := p[:n]
	i := 0
	// Finish the sequence the last read cut, with the first bytes of this.
	for ; len(b.tail) > 0 && i < len(chunk); i++ {
		b.tail = append(b.tail, chunk[i])
		if utf8.FullRune(b.tail) {
			if r, size := utf8.DecodeRune(b.tail); r == utf8.RuneError && size <= 1 {
				return 0, notUTF8(b.off + int64(i) - int64(len(b.tail)) + 1)
			}
			b.tail = b.tail[:0]
		}
	}
	rest := chunk[i:]
	end := len(rest)
	// Hold back a sequence this read cuts, to finish it with the next.
	for k := 1; k <= utf8.UTFMax-1 && k <= len(rest); k++ {
		if utf8.RuneStart(rest[len(rest)-k]) {
			if !utf8.FullRune(rest[len(rest)-k:]) {
				end = len(rest) - k
			}
			break
		}
	}
	if !utf8.Valid(rest[:end]) {
		at := 0
		for at < end {
			r, size := utf8.DecodeRune(rest[at:end])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			at += size
		}
		return 0, notUTF8(b.off + int64(i+at))
	}
	b.tail = append(b.tail, rest[end:]...)
	b.off += int64(n)
	if err == io.EOF && len(b.tail) > 0 {
		return 0, notUTF8(b.off - int64(len(b.tail)))
	}
	return n, err
}

func notUTF8(at int64) error {
	return fmt.Errorf("body: the bytes at offset %d are not UTF-8: JSON text must be UTF-8; send it so", at)
}
