package server

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"time"
)

// The playground is a page at GET / that chats with the server through the
// TypeScript client and answers the quickstart's remote tools in the browser.
// playground/client.js is the compiled @tenxgraph/client, copied there by
// `npm run build:playground` in clients/typescript (committed, so a Go build
// needs no npm; the client's tests fail when the copy drifts).
//
//go:embed playground/index.html playground/style.css playground/app.js playground/client.js
var playgroundFS embed.FS

// playgroundCSP keeps the page to its own origin: no CDN, no external
// request of any kind. img-src allows blob: for the object URLs the page
// makes of images: a thread's, fetched with its token (an <img src> cannot
// send one), and those about to be attached.
const playgroundCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data: blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file with its ETag, so browsers revalidate cheaply
// and always see the page of the binary they talk to.
type asset struct {
	name string
	body []byte
	etag string
}

func loadAsset(name string) asset {
	b, err := fs.ReadFile(playgroundFS, "playground/"+name)
	if err != nil {
		panic("playground: " + err.Error()) // the embed directive lists every file
	}
	sum := sha256.Sum256(b)
	return asset{name: name, body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

func (a asset) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", playgroundCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
}

// playgroundPage serves the page itself (GET /).
func playgroundPage() http.Handler { return loadAsset("index.html") }

// playgroundAssets serves the page's script, style and the client under
// /playground/{file}; any other name is a 404.
func playgroundAssets() http.Handler {
	assets := map[string]asset{}
	for _, name := range []string{"style.css", "app.js", "client.js"} {
		assets[name] = loadAsset(name)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := assets[path.Clean(r.PathValue("file"))]
		if !ok {
			http.NotFound(w, r)
			return
		}
		a.ServeHTTP(w, r)
	})
}
