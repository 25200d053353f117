// Package media decides what the host takes in as an image, a file or a
// sound, and fetches the ones a client names by url. A block's declared
// type must be what its bytes are: they are sniffed (net/http's WHATWG
// sniffer, and what it misses), and must be of a type the host accepts,
// within its size limits; an image's header is read for its pixels before
// anything would decode it, so a small file that decodes to gigabytes
// never does. The graph engine checks every media block with it, whichever
// way the block came (a user's message, a client's tool result, a
// plugin's), before storing it.
package media

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // image.DecodeConfig reads GIF headers
	_ "image/jpeg" // and JPEG
	_ "image/png"  // and PNG
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	_ "golang.org/x/image/webp" // and WebP

	"github.com/tenxgraph/tenxgraph/host/message"
)

// Defaults of Policy.
const (
	// DefaultMaxBlobBytes bounds one image, file or sound (10 MiB): a
	// phone photo or a long PDF. A larger one sent as data also needs a
	// larger server.max_body_bytes (base64 is 4/3 of the bytes).
	DefaultMaxBlobBytes = 10 << 20
	// DefaultMaxRequestBytes bounds the new media one request (or one
	// step's tool results) brings in, all blocks together (32 MiB, the
	// request limit of Anthropic's API).
	DefaultMaxRequestBytes = 32 << 20
	// DefaultMaxImagePixels bounds an image's width times height (8000 x
	// 8000, the largest image Anthropic's API takes). A decoder allocates
	// about 4 bytes a pixel before it reads the pixels.
	DefaultMaxImagePixels = 8000 * 8000
	// DefaultFetchTimeout bounds fetching one url, redirects included.
	DefaultFetchTimeout = 10 * time.Second
)

// DefaultTypes are the media types accepted when the policy names none:
// the images, documents and sounds the model providers take.
var DefaultTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "audio/wav", "audio/mpeg", "text/plain"}

// KnownTypes are every type a policy may accept: those whose bytes the
// host can tell apart from what they are not. Text types are UTF-8 text
// that sniffs as plain text (not HTML, not XML), and JSON must parse.
var KnownTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "audio/wav", "audio/mpeg",
	"text/plain", "text/markdown", "text/csv", "application/json"}

// aliases are other names clients give the known types.
var aliases = map[string]string{
	"image/jpg":      "image/jpeg",
	"image/pjpeg":    "image/jpeg",
	"audio/wave":     "audio/wav",
	"audio/x-wav":    "audio/wav",
	"audio/vnd.wave": "audio/wav",
	"audio/mp3":      "audio/mpeg",
	"audio/mpeg3":    "audio/mpeg",
	"audio/x-mpeg-3": "audio/mpeg",
}

// Policy is what media a host accepts. The zero value accepts DefaultTypes
// within the default limits, and fetches urls from any public host.
type Policy struct {
	// Types are the accepted media types, from KnownTypes; nil means
	// DefaultTypes.
	Types []string
	// MaxBlobBytes bounds one block's bytes (0: DefaultMaxBlobBytes).
	MaxBlobBytes int64
	// MaxRequestBytes bounds the new bytes of one request's blocks, or of
	// one step's (0: DefaultMaxRequestBytes).
	MaxRequestBytes int64
	// MaxImagePixels bounds an image's width times height (0:
	// DefaultMaxImagePixels).
	MaxImagePixels int64
	// FetchHosts are the allow_hosts entries (internal/hostallow's
	// grammar) a url may name; nil allows any host whose addresses are
	// public, and an empty list fetches nothing. Only https is fetched,
	// and only public addresses are reached unless an entry names their
	// range as a CIDR, as for http_fetch.
	FetchHosts []string
	// FetchTimeout bounds one fetch (0: DefaultFetchTimeout).
	FetchTimeout time.Duration
	// RootCAs are the certificate authorities a fetched https server's
	// certificate must chain to; nil means the system's.
	RootCAs *x509.CertPool
}

// Errors, for errors.Is. Every refusal wraps one of them.
var (
	// ErrRefused: the block is not taken (its bytes are not its type, the
	// type is not accepted, its url may not be fetched, its blob is not
	// the thread's).
	ErrRefused = errors.New("media refused")
	// ErrTooLarge: the bytes are over a size limit.
	ErrTooLarge = errors.New("media too large")
)

// mediaError is a refusal: its kind (ErrRefused, ErrTooLarge) and why.
type mediaError struct {
	kind error
	msg  string
}

func (e *mediaError) Error() string { return e.kind.Error() + ": " + e.msg }
func (e *mediaError) Unwrap() error { return e.kind }

func refused(format string, args ...any) error {
	return &mediaError{kind: ErrRefused, msg: fmt.Sprintf(format, args...)}
}

func tooLarge(format string, args ...any) error {
	return &mediaError{kind: ErrTooLarge, msg: fmt.Sprintf(format, args...)}
}

// Checker applies a Policy. It is safe for concurrent use.
type Checker struct {
	types           []string
	maxBlob, maxReq int64
	maxPixels       int64
	fetch           *fetcher
}

// New checks p and returns its Checker; every problem is reported.
func New(p Policy) (*Checker, error) {
	c := &Checker{types: p.Types, maxBlob: p.MaxBlobBytes, maxReq: p.MaxRequestBytes, maxPixels: p.MaxImagePixels}
	if c.types == nil {
		c.types = DefaultTypes
	}
	if c.maxBlob == 0 {
		c.maxBlob = DefaultMaxBlobBytes
	}
	if c.maxReq == 0 {
		c.maxReq = DefaultMaxRequestBytes
	}
	if c.maxPixels == 0 {
		c.maxPixels = DefaultMaxImagePixels
	}
	var errs []error
	for i, t := range c.types {
		if err := CheckType(t); err != nil {
			errs = append(errs, fmt.Errorf("types[%d]: %w", i, err))
		}
	}
	if c.maxBlob < 0 || c.maxReq < 0 || c.maxPixels < 0 || p.FetchTimeout < 0 {
		errs = append(errs, errors.New("limits must not be negative"))
	}
	f, err := newFetcher(p)
	if err != nil {
		errs = append(errs, err)
	}
	c.fetch = f
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("media: %w", err)
	}
	return c, nil
}

// Default is a Checker of the zero Policy.
func Default() *Checker {
	c, err := New(Policy{})
	if err != nil {
		panic(err) // the defaults are valid
	}
	return c
}

// MaxBlobBytes and MaxRequestBytes are the checker's size limits.
func (c *Checker) MaxBlobBytes() int64    { return c.maxBlob }
func (c *Checker) MaxRequestBytes() int64 { return c.maxReq }

// CheckType says why t cannot be an accepted type (a policy's Types
// entry), or returns nil.
func CheckType(t string) error {
	switch {
	case t == "image/svg+xml":
		return errors.New(`"image/svg+xml" cannot be accepted: an SVG is a document that can run scripts, not an image`)
	case !slices.Contains(KnownTypes, t):
		return fmt.Errorf("%q is not a type the host can check; it can check %s", t, strings.Join(KnownTypes, ", "))
	}
	return nil
}

// Canonical returns the name the host uses for a declared type (its
// aliases, case and parameters dropped), or "" for one it cannot read. A
// charset other than UTF-8 is refused.
func Canonical(declared string) (string, error) {
	t, params, err := mime.ParseMediaType(declared)
	if err != nil {
		return "", refused("mime_type %q is not a media type", declared)
	}
	if a, ok := aliases[t]; ok {
		t = a
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return "", refused("mime_type %q: only UTF-8 text is accepted", declared)
	}
	return t, nil
}

// Info is what a block's bytes are, once checked.
type Info struct {
	// MimeType is the accepted type, as the host names it.
	MimeType string
	// Width and Height are an image's pixels.
	Width, Height int
}

// Inspect checks a block's bytes: kind is the block's type (image, file,
// audio), declared its mime_type ("" takes what the bytes are). The bytes
// must be a type the policy accepts, the declared one, of the kind (an
// image block holds an image/* type, an audio block audio/*), within
// MaxBlobBytes, and an image's header must read, within MaxImagePixels.
func (c *Checker) Inspect(kind, declared string, data []byte) (Info, error) {
	if int64(len(data)) > c.maxBlob {
		return Info{}, tooLarge("%d bytes, more than media.max_blob_bytes (%d) allows", len(data), c.maxBlob)
	}
	if len(data) == 0 {
		return Info{}, refused("no bytes")
	}
	sniffed := Sniff(data)
	want := sniffed
	if declared != "" {
		t, err := Canonical(declared)
		if err != nil {
			return Info{}, err
		}
		want = t
	}
	if want == "image/svg+xml" || sniffed == "text/xml" && strings.HasPrefix(want, "image/") {
		return Info{}, refused("SVG is not accepted: an SVG is a document that can run scripts; send a PNG or JPEG")
	}
	if !slices.Contains(c.types, want) {
		return Info{}, refused("%s is not accepted here (accepted: %s; media.allowed_types)", describe(want), strings.Join(c.types, ", "))
	}
	if !matches(want, sniffed, data) {
		return Info{}, refused("declared %s, but the bytes are %s", want, describe(sniffed))
	}
	switch {
	case kind == message.TypeImage && !strings.HasPrefix(want, "image/"):
		return Info{}, refused("an image block holds an image; %s goes in a file block", want)
	case kind == message.TypeAudio && !strings.HasPrefix(want, "audio/"):
		return Info{}, refused("an audio block holds a sound; %s goes in a file block", want)
	}
	info := Info{MimeType: want}
	if strings.HasPrefix(want, "image/") {
		cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			return Info{}, refused("the %s header does not read: %v", want, err)
		}
		if cfg.Width <= 0 || cfg.Height <= 0 {
			return Info{}, refused("the image is %dx%d pixels", cfg.Width, cfg.Height)
		}
		if px := int64(cfg.Width) * int64(cfg.Height); px > c.maxPixels {
			return Info{}, refused("the image is %dx%d, %d pixels, more than media.max_image_pixels (%d) allows", cfg.Width, cfg.Height, px, c.maxPixels)
		}
		info.Width, info.Height = cfg.Width, cfg.Height
	}
	return info, nil
}

// describe names a sniffed type for a message.
func describe(t string) string {
	if t == "application/octet-stream" {
		return "not a type the host recognises (application/octet-stream)"
	}
	return t
}

// matches reports whether bytes that sniffed as sniffed are of the
// declared type t.
func matches(t, sniffed string, data []byte) bool {
	switch t {
	case "text/markdown", "text/csv":
		return sniffed == "text/plain"
	case "application/json":
		return sniffed == "text/plain" && jsonValid(data)
	}
	return sniffed == t
}

// Sniff says what data is: the WHATWG sniffing algorithm (net/http), with
// the names the host uses (audio/wav for audio/wave), plain text only when
// it is all UTF-8, and MP3 without an ID3 tag (which the algorithm
// misses) recognised by its first frame's header. Anything else it
// returns as the algorithm names it, without parameters.
func Sniff(data []byte) string {
	t := http.DetectContentType(data)
	switch {
	case strings.HasPrefix(t, "text/plain"):
		if strings.HasSuffix(t, "charset=utf-8") && utf8.Valid(data) {
			return "text/plain"
		}
		return "application/octet-stream"
	case t == "audio/wave":
		return "audio/wav"
	case t == "application/octet-stream" && mp3Frame(data):
		return "audio/mpeg"
	}
	if i := strings.IndexByte(t, ';'); i >= 0 {
		t = t[:i]
	}
	return t
}

// mp3Frame reports whether data starts with an MPEG audio frame header
// (11 sync bits, a version, layer, bitrate and sample rate that are not
// reserved or invalid) and, when the data is long enough to hold it, the
// next frame's header where the first frame says it ends.
func mp3Frame(data []byte) bool {
	n, ok := frameLen(data)
	if !ok {
		return false
	}
	if len(data) >= n+4 {
		_, ok = frameLen(data[n:])
	}
	return ok
}

// frameLen reads an MPEG audio frame header and returns the frame's length.
func frameLen(h []byte) (int, bool) {
	if len(h) < 4 || h[0] != 0xFF || h[1]&0xE0 != 0xE0 {
		return 0, false
	}
	version := (h[1] >> 3) & 3 // 0: 2.5, 1: reserved, 2: 2, 3: 1
	layer := (h[1] >> 1) & 3   // 0: reserved, 1: III, 2: II, 3: I
	bitrate := h[2] >> 4
	rate := (h[2] >> 2) & 3
	padding := int((h[2] >> 1) & 1)
	if version == 1 || layer == 0 || bitrate == 0 || bitrate == 15 || rate == 3 {
		return 0, false
	}
	// Bitrates (kbit/s) of MPEG-1 and of MPEG-2/2.5, by layer.
	v1 := [3][15]int{
		{0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448}, // I
		{0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384},    // II
		{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320},     // III
	}
	v2 := [3][15]int{
		{0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256}, // I
		{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},      // II, III
		{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
	}
	rates := [4][3]int{{11025, 12000, 8000}, {}, {22050, 24000, 16000}, {44100, 48000, 32000}}
	l := 3 - int(layer) // 0: I, 1: II, 2: III
	kbps := v2[l][bitrate]
	if version == 3 {
		kbps = v1[l][bitrate]
	}
	sr := rates[version][rate]
	switch {
	case l == 0:
		return (12*kbps*1000/sr + padding) * 4, true
	case l == 2 && version != 3:
		return 72*kbps*1000/sr + padding, true
	}
	return 144*kbps*1000/sr + padding, true
}
