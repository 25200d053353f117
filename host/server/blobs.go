package server

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// handleBlob serves GET /v1/threads/{thread_id}/blobs/{ref}: the bytes of
// an image, file or sound the thread holds, which its messages name by
// reference ("sha256:<hex>"). The answer is 404, the same one, for a
// thread the caller may not read (another token's) or does not have, and
// for a blob the thread does not hold: a hash opens nothing by itself.
//
// The bytes are served with the type the host checked them to be, never
// sniffed again by a browser (X-Content-Type-Options: nosniff), as an
// attachment unless they are a raster image or a PDF, and as immutable
// (their name is their hash) but private to the caller.
func (s *Server) handleBlob(w http.ResponseWriter, r *http.Request) {
	id, ok := threadID(w, r)
	if !ok {
		return
	}
	ref := r.PathValue("ref")
	if !message.ValidBlobRef(ref) {
		writeErr(w, fmt.Errorf("%w: blob in the path: want %q and the 64 lowercase hex digits of the bytes' SHA-256, got %q", errMalformed, message.BlobPrefix, ref))
		return
	}
	b, err := s.svc.App.Blob(r.Context(), tenant(r), id, ref)
	if err != nil {
		writeErr(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", servedType(b.MimeType))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private, immutable, max-age=31536000")
	h.Set("ETag", `"`+ref+`"`)
	disposition := "attachment"
	if inline(b.MimeType) {
		disposition = "inline"
	}
	h.Set("Content-Disposition", disposition+`; filename="`+strings.TrimPrefix(ref, message.BlobPrefix)[:16]+extension(b.MimeType)+`"`)
	// ServeContent answers If-None-Match (304) and Range requests; the
	// Content-Type set above is kept, not sniffed.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b.Data))
}

// servedType is the Content-Type a blob of type t is served with.
func servedType(t string) string {
	if strings.HasPrefix(t, "text/") || t == "application/json" {
		return t + "; charset=utf-8"
	}
	return t
}

// inline reports whether a blob of type t may be shown in the browser
// rather than downloaded: raster images and PDFs, which run no script in
// the page's origin.
func inline(t string) bool {
	switch t {
	case "image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf":
		return true
	}
	return false
}

// extension is the file extension of type t, for a downloaded blob's name.
func extension(t string) string {
	switch t {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	case "application/pdf":
		return ".pdf"
	case "audio/wav":
		return ".wav"
	case "audio/mpeg":
		return ".mp3"
	case "text/plain":
		return ".txt"
	case "text/markdown":
		return ".md"
	case "text/csv":
		return ".csv"
	case "application/json":
		return ".json"
	}
	return ""
}
