package server

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestPlaygroundServed checks the playground's routes as routes() mounts
// them: the page at /, its assets under /playground/, each with the CSP that
// keeps it to its own origin, and nothing else.
func TestPlaygroundServed(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", playgroundPage())
	mux.Handle("GET /playground/{file}", playgroundAssets())

	get := func(path string, header ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec
	}

	for path, ctype := range map[string]string{
		"/":                     "text/html; charset=utf-8",
		"/playground/app.js":    "text/javascript; charset=utf-8",
		"/playground/client.js": "text/javascript; charset=utf-8",
		"/playground/style.css": "text/css; charset=utf-8",
	} {
		rec := get(path)
		if rec.Code != 200 || rec.Header().Get("Content-Type") != ctype || rec.Body.Len() == 0 {
			t.Fatalf("GET %s: %d %q (%d bytes), want 200 %q", path, rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len(), ctype)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Fatalf("GET %s: CSP %q", path, csp)
		}
		etag := rec.Header().Get("ETag")
		if re := get(path, "If-None-Match", etag); etag == "" || re.Code != http.StatusNotModified {
			t.Fatalf("GET %s with its ETag %q: %d, want 304", path, etag, re.Code)
		}
	}
	for _, path := range []string{"/playground/", "/playground/index.html", "/playground/nope.js", "/playground/..%2fplayground.go", "/index.html"} {
		if rec := get(path); rec.Code != 404 {
			t.Fatalf("GET %s: %d, want 404", path, rec.Code)
		}
	}

	// No CDN: nothing the page loads names another origin.
	page := get("/").Body.String()
	for _, ref := range regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if u := ref[1]; !strings.HasPrefix(u, "/playground/") && !strings.HasPrefix(u, "#") && u != "data:," {
			t.Errorf("index.html loads %q: only /playground/ assets are served", u)
		}
	}
	if app := get("/playground/app.js").Body.String(); !strings.Contains(app, `from "./client.js"`) {
		t.Error("app.js does not import the embedded client")
	}
	if c := get("/playground/client.js").Body.String(); !strings.HasPrefix(c, "// Code generated") || !strings.Contains(c, "export class Client") {
		t.Error("client.js is not the compiled @tenxgraph/client (npm run build:playground in clients/typescript)")
	}
	err := fs.WalkDir(playgroundFS, "playground", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(playgroundFS, path)
		if m := regexp.MustCompile(`(?:import|from|src=|href=|url\()\s*["']?https?://`).Find(b); m != nil {
			t.Errorf("%s refers to another origin: %s", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
