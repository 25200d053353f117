package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/message"
)

// usage is what the server's store keeps of blobs.
func (e *env) usage() checkpoint.BlobUsage {
	e.t.Helper()
	u, err := e.svc.Store.(checkpoint.BlobStore).BlobUsage(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return u
}

// storeBytes is the size of what the server's store takes on disk: the
// SQLite file and its WAL, or the PostgreSQL relations of its schema
// (tables, indexes, TOAST).
func (e *env) storeBytes(s setup) int64 {
	e.t.Helper()
	if s.postgres {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, os.Getenv("TG_TEST_SERVER_DSN"))
		if err != nil {
			e.t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int64
		if err := conn.QueryRow(ctx, `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
			JOIN pg_namespace ns ON ns.oid = c.relnamespace WHERE ns.nspname = current_schema() AND c.relkind = 'r'`).Scan(&n); err != nil {
			e.t.Fatal(err)
		}
		return n
	}
	var n int64
	for _, p := range []string{"state.db", "state.db-wal"} {
		if fi, err := os.Stat(filepath.Join(e.dir, p)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// The same 1.4 MB image, sent as data in 8 turns of one thread, grows the
// store by less than two copies of it: the bytes are kept once, the turns
// hold references. Deleting the thread deletes the blob, and (on SQLite,
// after compact) gives its space back. On SQLite and PostgreSQL, over
// real HTTP.
func TestSameImageInEveryTurnIsStoredOnce(t *testing.T) {
	onStores(t, func(t *testing.T, s setup) {
		e := start(t, s)
		img := testPNG(600, 600) // 1.4 MB of noise
		if len(img) < 1400000 {
			t.Fatalf("the test image is %d bytes", len(img))
		}
		e.invoke(runBody("warm", "hello")) // the tables' first pages
		before := e.storeBytes(s)
		for turn := range 8 {
			r := e.invoke(imageBody("t", fmt.Sprintf("turn %d", turn), pngData(img)))
			if r.Status != "completed" {
				t.Fatalf("turn %d: %+v", turn, r)
			}
		}
		grew := e.storeBytes(s) - before
		t.Logf("8 turns with a %d-byte image grew the store by %d bytes", len(img), grew)
		if grew >= 2*int64(len(img)) {
			t.Fatalf("8 turns with the same %d-byte image grew the store by %d bytes: two copies or more", len(img), grew)
		}
		if u := e.usage(); u != (checkpoint.BlobUsage{Blobs: 1, Bytes: int64(len(img)), Links: 1}) {
			t.Fatalf("usage %+v, want one blob of %d bytes held once", u, len(img))
		}
		th := e.thread("t")
		var refs int
		for _, m := range th.Messages {
			for _, b := range m.Content {
				if mb, ok := b.(message.MediaBlock); ok {
					refs++
					if mb.Blob != blobRef(img) || mb.Data != nil || mb.Size != int64(len(img)) || mb.Width != 600 || mb.Height != 600 {
						t.Fatalf("the thread holds %s %d bytes %dx%d (data %d bytes)", mb.Blob, mb.Size, mb.Width, mb.Height, len(mb.Data))
					}
				}
			}
		}
		if refs != 8 {
			t.Fatalf("the thread holds %d images, want 8", refs)
		}
		if r := e.do("GET", "/v1/threads/t/blobs/"+blobRef(img), nil); r.status != 200 || !bytes.Equal(r.body, img) {
			t.Fatalf("GET the blob: %d, %d bytes", r.status, len(r.body))
		}

		if r := e.do("DELETE", "/v1/threads/t", nil); r.status != 204 {
			t.Fatalf("delete: %d %s", r.status, r.body)
		}
		if u := e.usage(); u != (checkpoint.BlobUsage{}) {
			t.Fatalf("after deleting the thread: %+v", u)
		}
		if c, ok := e.svc.Store.(checkpoint.Compacter); ok {
			full := e.storeBytes(s)
			if _, err := c.Compact(context.Background()); err != nil {
				t.Fatal(err)
			}
			freed := full - e.storeBytes(s)
			t.Logf("compact after the delete gave back %d bytes", freed)
			if freed < int64(len(img)) {
				t.Fatalf("compact gave back %d bytes, less than the image's %d", freed, len(img))
			}
		}
	})
}

// Each way a block can be wrong is a 4xx naming the block's path, over
// real HTTP, and stores nothing: no blob, no link, no row, no message.
func TestBadMediaRefusedOverHTTP(t *testing.T) {
	onStores(t, func(t *testing.T, s setup) {
		s.media = map[string]any{"max_blob_bytes": 200000}
		e := start(t, s)
		e.invoke(runBody("t", "hello"))
		before, state := e.usage(), e.state("t")
		rows := func() string { return e.blobRows(s) }
		rowsBefore := rows()
		small := testPNG(4, 4)
		big := testPNG(300, 300) // about 360 kB: over the limit
		pdf := []byte("%PDF-1.4\n%%EOF\n")
		for _, c := range []struct {
			name   string
			block  map[string]any
			status int
			code   string
			says   string
		}{
			{"a lying type", map[string]any{"type": "image", "mime_type": "image/png", "data": base64.StdEncoding.EncodeToString(pdf)}, 422, "media_refused",
				"messages[0].content[1]: media refused: declared image/png, but the bytes are application/pdf"},
			{"bad base64", map[string]any{"type": "image", "mime_type": "image/png", "data": "not base64!"}, 400, "malformed_request",
				"input.messages[0].content[1].data: not base64"},
			{"a blob over the limit", pngData(big), 413, "media_too_large", "messages[0].content[1]: media too large"},
			// localhost resolves to 127.0.0.1 or ::1, whichever the
			// resolver gives first: either is a loopback address.
			{"a url to loopback", map[string]any{"type": "image", "mime_type": "image/png", "url": "https://localhost:1/x.png"}, 422, "media_refused",
				"messages[0].content[1].url: media refused: address "},
			{"a url to a private address", map[string]any{"type": "image", "mime_type": "image/png", "url": "https://10.0.0.1/x.png"}, 422, "media_refused",
				"messages[0].content[1].url: media refused: address 10.0.0.1:443 is a private network address"},
			{"an svg", map[string]any{"type": "image", "mime_type": "image/svg+xml", "data": base64.StdEncoding.EncodeToString([]byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`))}, 422, "media_refused",
				"SVG is not accepted"},
			{"an unknown blob", map[string]any{"type": "image", "mime_type": "image/png", "blob": blobRef(small)}, 422, "media_refused",
				"messages[0].content[1].blob: media refused: " + blobRef(small) + " is not a blob this thread holds"},
		} {
			for _, path := range []string{"/v1/graph/invoke", "/v1/graph/stream"} {
				// The bad block between a good one's text and a good one.
				body := imageBody("t", "look", c.block, pngData(small))
				b := errorOf(t, e.do("POST", path, body), c.status, c.code, c.says)
				if strings.Contains(c.name, "loopback") && !strings.Contains(b.Error.Message, "is a loopback address") {
					t.Fatalf("%s: %s", c.name, b.Error.Message)
				}
				if u, st, r := e.usage(), e.state("t"), rows(); u != before || st != state || r != rowsBefore {
					t.Fatalf("%s on %s stored something: usage %+v (before %+v), rows %s (before %s)", c.name, path, u, before, r, rowsBefore)
				}
			}
		}
		// A client's tool result may not carry a lying attachment either.
		call := e.paused("p")
		pstate := e.state("p")
		resume := resumeBody("p", call, "here")
		resume["input"].(map[string]any)["messages"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["attachments"] = []any{
			pngData(small), map[string]any{"type": "file", "mime_type": "application/pdf", "data": base64.StdEncoding.EncodeToString(small)}}
		errorOf(t, e.do("POST", "/v1/graph/invoke", resume), 422, "media_refused", "messages[0].content[0].attachments[1]: media refused: declared application/pdf, but the bytes are image/png")
		if u, st := e.usage(), e.state("p"); u != before || st != pstate {
			t.Fatalf("the refused result stored something: %+v", u)
		}
	})
}

// blobRows counts the store's blob and link rows with SQL, besides
// BlobUsage.
func (e *env) blobRows(s setup) string {
	e.t.Helper()
	var blobs, links int
	if s.postgres {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, os.Getenv("TG_TEST_SERVER_DSN"))
		if err != nil {
			e.t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM tenxgraph_blobs), (SELECT count(*) FROM tenxgraph_blob_links)`).Scan(&blobs, &links); err != nil {
			e.t.Fatal(err)
		}
	} else {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(e.dir, "state.db")+"?mode=ro")
		if err != nil {
			e.t.Fatal(err)
		}
		defer db.Close()
		if err := db.QueryRow(`SELECT (SELECT count(*) FROM blobs), (SELECT count(*) FROM blob_links)`).Scan(&blobs, &links); err != nil {
			e.t.Fatal(err)
		}
	}
	return fmt.Sprintf("%d blobs, %d links", blobs, links)
}

// A client's tool result with attachments resumes the thread and the
// thread holds them by reference; the blob route serves each with its
// type and the headers that keep a browser from reading it as anything
// else; another token, another thread and an unknown blob get one 404.
func TestBlobRoute(t *testing.T) {
	t.Setenv("TG_TEST_TOKEN_A", tokenA)
	t.Setenv("TG_TEST_TOKEN_B", tokenB)
	e := start(t, setup{server: map[string]any{"auth": map[string]any{"tokens_env": []any{"TG_TEST_TOKEN_A", "TG_TEST_TOKEN_B"}}}})
	e.token = tokenA
	img := testPNG(8, 6)
	pdf := []byte("%PDF-1.4\n%%EOF\n")
	text := []byte("hello, world\n")
	call := e.paused("t")
	resume := resumeBody("t", call, "picked")
	resume["input"].(map[string]any)["messages"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["attachments"] = []any{
		pngData(img),
		map[string]any{"type": "file", "mime_type": "application/pdf", "filename": "a.pdf", "data": base64.StdEncoding.EncodeToString(pdf)},
		map[string]any{"type": "file", "mime_type": "text/plain", "data": base64.StdEncoding.EncodeToString(text)},
	}
	if r := e.invoke(resume); r.Status != "completed" {
		t.Fatalf("resume with attachments: %+v", r)
	}
	var atts []message.MediaBlock
	for _, m := range e.thread("t").Messages {
		for _, tr := range m.ToolResults() {
			atts = append(atts, tr.Attachments...)
		}
	}
	if len(atts) != 3 || atts[0].Blob != blobRef(img) || atts[0].Width != 8 || atts[1].Filename != "a.pdf" || atts[2].Data != nil {
		t.Fatalf("the thread's attachments: %+v", atts)
	}
	for _, c := range []struct {
		data        []byte
		ctype, disp string
	}{
		{img, "image/png", "inline"},
		{pdf, "application/pdf", "inline"},
		{text, "text/plain; charset=utf-8", "attachment"},
	} {
		r := e.do("GET", "/v1/threads/t/blobs/"+blobRef(c.data), nil)
		h := r.header
		if r.status != 200 || !bytes.Equal(r.body, c.data) || h.Get("Content-Type") != c.ctype || h.Get("X-Content-Type-Options") != "nosniff" ||
			h.Get("ETag") != `"`+blobRef(c.data)+`"` || !strings.HasPrefix(h.Get("Cache-Control"), "private, immutable") ||
			!strings.HasPrefix(h.Get("Content-Disposition"), c.disp+";") {
			t.Fatalf("GET %s: %d %q %v", c.ctype, r.status, r.body, h)
		}
		if r := e.do("GET", "/v1/threads/t/blobs/"+blobRef(c.data), nil, withHeader("If-None-Match", `"`+blobRef(c.data)+`"`)); r.status != 304 {
			t.Fatalf("If-None-Match: %d", r.status)
		}
	}
	// Not found, one answer for all: B on A's thread, A on a thread that
	// does not hold it, A on a thread that does not exist, a blob nobody
	// has.
	e.invoke(runBody("other", "hello"))
	var first string
	for _, c := range []struct {
		path string
		opts []opt
	}{
		{"/v1/threads/t/blobs/" + blobRef(img), []opt{withToken(tokenB)}},
		{"/v1/threads/other/blobs/" + blobRef(img), nil},
		{"/v1/threads/nobody/blobs/" + blobRef(img), nil},
		{"/v1/threads/t/blobs/sha256:" + strings.Repeat("0", 64), nil},
	} {
		r := e.do("GET", c.path, nil, c.opts...)
		errorOf(t, r, 404, "blob_not_found")
		if first == "" {
			first = string(r.body)
		} else if string(r.body) != first {
			t.Fatalf("%s: %s, another 404 said %s", c.path, r.body, first)
		}
	}
	for _, ref := range []string{"sha256:abc", strings.ToUpper(blobRef(img)), "md5:" + strings.Repeat("0", 32)} {
		errorOf(t, e.do("GET", "/v1/threads/t/blobs/"+ref, nil), 400, "malformed_request", "blob in the path")
	}
	if r := e.do("GET", "/v1/threads/t/blobs/"+blobRef(img), nil, withToken("")); r.status != 401 {
		t.Fatalf("without a token: %d", r.status)
	}
}

// An AG-UI user message's image (the multimodal source shape, a data URL,
// the legacy binary part) is taken in like any other; MESSAGES_SNAPSHOT
// names it as a binary part by its blob, which a client may send back;
// video is refused.
func TestAGUIMedia(t *testing.T) {
	e := start(t, setup{})
	img, other := testPNG(5, 5), testPNG(6, 6)
	b64 := base64.StdEncoding.EncodeToString(img)
	content := []any{
		map[string]any{"type": "text", "text": "look at "},
		map[string]any{"type": "text", "text": "these"},
		map[string]any{"type": "image", "source": map[string]any{"type": "data", "value": b64, "mimeType": "image/png"}},
		map[string]any{"type": "image", "source": map[string]any{"type": "url", "value": "data:image/png;base64," + base64.StdEncoding.EncodeToString(other)}},
		map[string]any{"type": "binary", "mimeType": "image/png", "data": b64, "filename": "again.png"},
	}
	evs := e.agui(aguiInput("ag", map[string]any{"id": "u1", "role": "user", "content": content}))
	checkAGUI(t, evs, "ag", "run-ag")
	if last := evs[len(evs)-1]; last.Type != "RUN_FINISHED" {
		t.Fatalf("the run: %+v", last)
	}
	th := e.thread("ag")
	u := th.Messages[0]
	if len(u.Content) != 4 || u.Text() != "look at these" {
		t.Fatalf("the user message: %+v", u.Content)
	}
	for i, want := range []string{blobRef(img), blobRef(other), blobRef(img)} {
		if mb, ok := u.Content[i+1].(message.MediaBlock); !ok || mb.Blob != want || mb.Data != nil {
			t.Fatalf("block %d: %+v, want %s", i+1, u.Content[i+1], want)
		}
	}
	if u := e.usage(); u.Blobs != 2 {
		t.Fatalf("usage %+v", u)
	}
	var snap []byte
	for _, ev := range evs {
		if ev.Type == "MESSAGES_SNAPSHOT" {
			snap = bytes.Join(func() [][]byte {
				var out [][]byte
				for _, m := range ev.Messages {
					out = append(out, m)
				}
				return out
			}(), []byte(","))
		}
	}
	if !bytes.Contains(snap, []byte(`{"type":"binary","mimeType":"image/png","id":"`+blobRef(img)+`"}`)) || bytes.Contains(snap, []byte(b64[:40])) {
		t.Fatalf("MESSAGES_SNAPSHOT: %s", snap)
	}
	// A new message naming the blob as the snapshot did.
	evs = e.agui(aguiInput("ag", map[string]any{"id": "u1", "role": "user", "content": content},
		map[string]any{"id": "u2", "role": "user", "content": []any{map[string]any{"type": "binary", "mimeType": "image/png", "id": blobRef(img)}}}))
	if last := evs[len(evs)-1]; last.Type != "RUN_FINISHED" {
		t.Fatalf("the blob by id: %+v", last)
	}
	for _, c := range []struct {
		part map[string]any
		code string
		says string
	}{
		{map[string]any{"type": "video", "source": map[string]any{"type": "url", "value": "https://example.com/v.mp4"}}, "invalid_input", "messages[0]: content[0].type: video is not accepted"},
		{map[string]any{"type": "image", "source": map[string]any{"type": "data", "value": "!!", "mimeType": "image/png"}}, "invalid_input", "messages[0]: content[0].source.value: not base64"},
		{map[string]any{"type": "image", "source": map[string]any{"type": "data", "value": b64}}, "invalid_input", "messages[0]: content[0].source.mimeType: missing"},
		{map[string]any{"type": "image", "source": map[string]any{"type": "data", "value": b64, "mimeType": "image/jpeg"}}, "media_refused", "declared image/jpeg, but the bytes are image/png"},
		{map[string]any{"type": "binary", "mimeType": "image/png", "id": "file-123"}, "invalid_input", "messages[0]: content[0].id: \"file-123\" is not a blob of this server"},
	} {
		evs := e.agui(aguiInput("bad", map[string]any{"id": "b1", "role": "user", "content": []any{c.part}}))
		if last := evs[len(evs)-1]; last.Type != "RUN_ERROR" || last.Code != c.code || !strings.Contains(last.Message, c.says) {
			t.Errorf("%v: %+v; want %s saying %q", c.part["type"], last, c.code, c.says)
		}
	}
}
