package media_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"runtime"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/media"
)

// Samples of each type, made here so the tests need no files.

func pngOf(w, h int) []byte {
	var b bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func jpegOf(w, h int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewRGBA(image.Rect(0, 0, w, h)), nil); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func gifOf(w, h int) []byte {
	var b bytes.Buffer
	if err := gif.Encode(&b, image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black, color.White}), nil); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// webpOf is a lossless WebP's header (the decoders read no further for
// the size).
func webpOf(w, h int) []byte {
	bits := uint32(w-1) | uint32(h-1)<<14
	chunk := append([]byte{0x2f}, binary.LittleEndian.AppendUint32(nil, bits)...)
	chunk = append(chunk, make([]byte, 16)...)
	body := append([]byte("WEBPVP8L"), binary.LittleEndian.AppendUint32(nil, uint32(len(chunk)))...)
	body = append(body, chunk...)
	return append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...), body...)
}

// pngHeader is a PNG that says it is w x h and holds no pixels: a
// decompression bomb's header.
func pngHeader(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 6, 0, 0, 0)
	chunk := append([]byte("IHDR"), ihdr...)
	out := append([]byte("\x89PNG\r\n\x1a\n"), binary.BigEndian.AppendUint32(nil, uint32(len(ihdr)))...)
	out = append(out, chunk...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(chunk))
}

var (
	pdf = []byte("%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n")
	wav = append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, 36)...), []byte("WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x44\xac\x00\x00\x88\x58\x01\x00\x02\x00\x10\x00data\x00\x00\x00\x00")...)
	// Two MPEG-1 layer III frames (128 kbit/s, 44.1 kHz: 417 bytes each)
	// without an ID3 tag, which net/http's sniffer does not recognise.
	mp3  = append(append([]byte{0xFF, 0xFB, 0x90, 0x64}, make([]byte, 413)...), append([]byte{0xFF, 0xFB, 0x90, 0x64}, make([]byte, 413)...)...)
	id3  = append([]byte("ID3\x04\x00\x00\x00\x00\x00\x00"), mp3...)
	text = []byte("héllo, world\n")
	html = []byte("<!DOCTYPE html><html><script>alert(1)</script></html>")
	svg  = []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"></svg>`)
)

func TestSniff(t *testing.T) {
	for want, data := range map[string][]byte{
		"image/png":                pngOf(3, 2),
		"image/jpeg":               jpegOf(3, 2),
		"image/gif":                gifOf(3, 2),
		"image/webp":               webpOf(3, 2),
		"application/pdf":          pdf,
		"audio/wav":                wav,
		"audio/mpeg":               mp3,
		"text/plain":               text,
		"text/html":                html,
		"text/xml":                 svg,
		"application/octet-stream": {0xff, 0xfe, 0x00, 0x01, 0x80},
	} {
		if got := media.Sniff(data); got != want {
			t.Errorf("Sniff(%.12q) = %s, want %s", data, got, want)
		}
	}
	if got := media.Sniff(id3); got != "audio/mpeg" {
		t.Errorf("an MP3 with an ID3 tag sniffs as %s", got)
	}
	if got := media.Sniff(mp3[:3]); got == "audio/mpeg" {
		t.Error("three bytes sniff as MP3")
	}
	if got := media.Sniff(append(mp3[:417:417], 'x', 'y', 'z', 'w')); got == "audio/mpeg" {
		t.Error("a frame header followed by something that is not a frame sniffs as MP3")
	}
}

// What is accepted comes back with the host's name for its type and an
// image's pixels.
func TestInspectAccepts(t *testing.T) {
	c := media.Default()
	for _, tc := range []struct {
		kind, declared string
		data           []byte
		want           media.Info
	}{
		{"image", "image/png", pngOf(64, 48), media.Info{MimeType: "image/png", Width: 64, Height: 48}},
		{"image", "image/jpg", jpegOf(5, 7), media.Info{MimeType: "image/jpeg", Width: 5, Height: 7}},
		{"image", "IMAGE/GIF", gifOf(2, 2), media.Info{MimeType: "image/gif", Width: 2, Height: 2}},
		{"image", "image/webp", webpOf(300, 200), media.Info{MimeType: "image/webp", Width: 300, Height: 200}},
		{"file", "application/pdf", pdf, media.Info{MimeType: "application/pdf"}},
		{"file", "image/png", pngOf(1, 1), media.Info{MimeType: "image/png", Width: 1, Height: 1}},
		{"audio", "audio/x-wav", wav, media.Info{MimeType: "audio/wav"}},
		{"audio", "audio/mp3", mp3, media.Info{MimeType: "audio/mpeg"}},
		{"file", "text/plain; charset=UTF-8", text, media.Info{MimeType: "text/plain"}},
		{"image", "", pngOf(2, 3), media.Info{MimeType: "image/png", Width: 2, Height: 3}},
	} {
		got, err := c.Inspect(tc.kind, tc.declared, tc.data)
		if err != nil || got != tc.want {
			t.Errorf("Inspect(%s, %q) = %+v, %v; want %+v", tc.kind, tc.declared, got, err, tc.want)
		}
	}
}

// What is refused says why, and is ErrRefused or, over a size limit,
// ErrTooLarge.
func TestInspectRefuses(t *testing.T) {
	c, err := media.New(media.Policy{MaxBlobBytes: 1 << 20, MaxImagePixels: 1000 * 1000, Types: []string{"image/png", "image/jpeg", "application/pdf", "text/plain", "application/json", "audio/mpeg"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind, declared string
		data           []byte
		want           error
		says           string
	}{
		{"image", "image/png", pdf, media.ErrRefused, "declared image/png, but the bytes are application/pdf"},
		{"image", "image/png", html, media.ErrRefused, "but the bytes are text/html"},
		{"file", "text/plain", html, media.ErrRefused, "but the bytes are text/html"},
		{"image", "image/jpeg", pngOf(1, 1), media.ErrRefused, "declared image/jpeg, but the bytes are image/png"},
		{"image", "image/svg+xml", svg, media.ErrRefused, "SVG is not accepted"},
		{"image", "image/png", svg, media.ErrRefused, "SVG is not accepted"},
		{"file", "text/plain", svg, media.ErrRefused, "but the bytes are text/xml"},
		{"image", "image/gif", gifOf(1, 1), media.ErrRefused, "image/gif is not accepted here"},
		{"audio", "audio/wav", wav, media.ErrRefused, "audio/wav is not accepted here"},
		{"file", "video/mp4", []byte("\x00\x00\x00\x18ftypmp42"), media.ErrRefused, "video/mp4 is not accepted here"},
		{"image", "application/pdf", pdf, media.ErrRefused, "an image block holds an image"},
		{"audio", "application/pdf", pdf, media.ErrRefused, "an audio block holds a sound"},
		{"file", "text/plain", []byte("caf\xe9"), media.ErrRefused, "but the bytes are not a type"},
		{"file", "text/plain; charset=latin1", text, media.ErrRefused, "only UTF-8"},
		{"file", "application/json", []byte("{\"a\":"), media.ErrRefused, "declared application/json, but the bytes are text/plain"},
		{"file", "not a type", text, media.ErrRefused, "is not a media type"},
		{"image", "image/png", pngHeader(1001, 1000), media.ErrRefused, "1001x1000, 1001000 pixels, more than media.max_image_pixels (1000000)"},
		{"image", "image/png", []byte("\x89PNG\r\n\x1a\n\x00\x00"), media.ErrRefused, "header does not read"},
		{"image", "image/png", append(pngOf(1, 1), make([]byte, 1<<20)...), media.ErrTooLarge, "more than media.max_blob_bytes (1048576)"},
		{"file", "application/pdf", nil, media.ErrRefused, "no bytes"},
	} {
		_, err := c.Inspect(tc.kind, tc.declared, tc.data)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Inspect(%s, %q, %.16q) = %v; want %v saying %q", tc.kind, tc.declared, tc.data, err, tc.want, tc.says)
		}
	}
}

// An image's header is read for its size, and a bomb's pixels are never
// allocated: a PNG saying 100000 x 100000 (40 GB decoded) costs next to
// nothing to refuse.
func TestInspectRefusesABombWithoutDecoding(t *testing.T) {
	c := media.Default()
	bomb := pngHeader(100000, 100000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := c.Inspect("image", "image/png", bomb)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, media.ErrRefused) || !strings.Contains(err.Error(), "100000x100000") {
		t.Fatalf("the bomb: %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("refusing the bomb allocated %d bytes", n)
	}
}

func TestPolicyChecked(t *testing.T) {
	_, err := media.New(media.Policy{Types: []string{"image/png", "image/svg+xml", "video/mp4"}, FetchHosts: []string{"https://x.example"}})
	for _, want := range []string{`types[1]: "image/svg+xml" cannot be accepted`, `types[2]: "video/mp4" is not a type the host can check`, "fetch hosts[0]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New: %v; want it to say %q", err, want)
		}
	}
}
