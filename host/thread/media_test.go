package thread_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/media"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

func pngBytes(w, h int) []byte {
	var b bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(uint64(w), uint64(h)))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.Uint32()) // noise: a photo's size, not a flat image's
	}
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

var pdfBytes = []byte("%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n")

func withImage(text string, img message.MediaBlock) []message.Message {
	return []message.Message{{Role: message.RoleUser, Content: []message.Block{message.TextBlock{Text: text}, img}}}
}

func dataImage(data []byte) message.MediaBlock {
	return message.MediaBlock{Kind: message.TypeImage, MimeType: "image/png", Data: data}
}

func usageOf(t *testing.T, s checkpoint.BlobStore) checkpoint.BlobUsage {
	t.Helper()
	u, err := s.BlobUsage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// mediaOf returns the media blocks of msgs, attachments included.
func mediaOf(msgs []message.Message) []message.MediaBlock {
	var out []message.MediaBlock
	for _, m := range msgs {
		for _, b := range m.Content {
			switch b := b.(type) {
			case message.MediaBlock:
				out = append(out, b)
			case message.ToolResultBlock:
				out = append(out, b.Attachments...)
			}
		}
	}
	return out
}

// An image sent as data in every turn of a thread is stored once; the
// thread's messages, its checkpoints' logs and states hold its reference,
// size and pixels, never its bytes; a later turn may name it by its blob;
// deleting the thread frees it.
func TestMediaStoredOnceAndByReference(t *testing.T) {
	ctx := context.Background()
	store := checkpoint.NewMemory()
	app, err := thread.Compile(graph.New().AddNode("a", say("a")).AddEdge(graph.START, "a").AddEdge("a", graph.END), store)
	if err != nil {
		t.Fatal(err)
	}
	img := pngBytes(64, 48)
	ref := checkpoint.BlobRef(img)
	for turn := range 8 {
		res, err := app.Invoke(ctx, withImage("look", dataImage(img)), thread.RunConfig{ThreadID: "t"})
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		got := mediaOf(res.Messages)
		if len(got) != turn+1 {
			t.Fatalf("turn %d: %d media blocks in the thread", turn, len(got))
		}
		for _, m := range got {
			if m.Blob != ref || m.Data != nil || m.URL != "" || m.Size != int64(len(img)) || m.Width != 64 || m.Height != 48 || m.MimeType != "image/png" {
				t.Fatalf("turn %d: the thread holds %+v (data %d bytes), want only the reference %s", turn, m, len(m.Data), ref)
			}
		}
	}
	if u := usageOf(t, store); u != (checkpoint.BlobUsage{Blobs: 1, Bytes: int64(len(img)), Links: 1}) {
		t.Fatalf("after 8 turns with the image: %+v, want one blob of %d bytes", u, len(img))
	}
	hist, err := store.History(ctx, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	b64 := []byte(strings.ReplaceAll(string(mustJSON(t, dataImage(img))), `{"type":"image","mime_type":"image/png","data":"`, "")[:64])
	for _, cp := range hist {
		for _, e := range append(cp.Log, cp.State) {
			if bytes.Contains(e, b64) || bytes.Contains(e, []byte(`"data"`)) {
				t.Fatalf("checkpoint %d holds the image's base64: %.200s", cp.Seq, e)
			}
		}
	}
	// By its blob: the thread holds it.
	res, err := app.Invoke(ctx, withImage("again", message.MediaBlock{Kind: message.TypeImage, MimeType: "image/png", Blob: ref}), thread.RunConfig{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if last := mediaOf(res.Messages[len(res.Messages)-2:]); len(last) != 1 || last[0].Size != int64(len(img)) || last[0].Width != 64 {
		t.Fatalf("the block sent by reference reads back as %+v", last)
	}
	b, err := app.Blob(ctx, "", "t", ref)
	if err != nil || !bytes.Equal(b.Data, img) || b.MimeType != "image/png" {
		t.Fatalf("App.Blob: %d bytes %q, %v", len(b.Data), b.MimeType, err)
	}
	if err := app.DeleteThread(ctx, "", "t"); err != nil {
		t.Fatal(err)
	}
	if u := usageOf(t, store); u != (checkpoint.BlobUsage{}) {
		t.Fatalf("after deleting the thread: %+v", u)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Whatever is wrong with a request's media, the request is refused with
// the block's path and changes nothing: no blob, no link, no message.
func TestMediaRefusedStoresNothing(t *testing.T) {
	ctx := context.Background()
	store := checkpoint.NewMemory()
	checker, err := media.New(media.Policy{MaxBlobBytes: 64 << 10, MaxRequestBytes: 100 << 10})
	if err != nil {
		t.Fatal(err)
	}
	app, err := thread.Compile(graph.New().AddNode("a", say("a")).AddEdge(graph.START, "a").AddEdge("a", graph.END), store, thread.WithMedia(checker))
	if err != nil {
		t.Fatal(err)
	}
	// Another thread holds an image: naming it from this one is refused.
	other := pngBytes(8, 8)
	if _, err := app.Invoke(ctx, withImage("mine", dataImage(other)), thread.RunConfig{ThreadID: "other"}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Invoke(ctx, user("hello"), thread.RunConfig{ThreadID: "t"}); err != nil {
		t.Fatal(err)
	}
	before := usageOf(t, store)
	held, _ := app.ThreadFor(ctx, "", "t")
	small := pngBytes(4, 4)
	big := append(pngBytes(2, 2), make([]byte, 65<<10)...)
	half := pngBytes(120, 120) // about 57 KiB: two are over the request's 100 KiB
	twoHalves := withImage("two", dataImage(half))
	twoHalves[0].Content = append(twoHalves[0].Content, dataImage(append(pngBytes(121, 120), 0)))
	for _, c := range []struct {
		name  string
		input []message.Message
		kind  error
		says  string
	}{
		{"a lying type", withImage("x", message.MediaBlock{Kind: message.TypeImage, MimeType: "image/png", Data: pdfBytes}), media.ErrRefused,
			"messages[0].content[1]: media refused: declared image/png, but the bytes are application/pdf"},
		{"a blob over the limit", withImage("x", dataImage(big)), media.ErrTooLarge, "messages[0].content[1]: media too large"},
		{"the request over its limit", twoHalves, media.ErrTooLarge, "messages[0].content[2]: media too large: the request's media come to more than media.max_request_bytes (102400)"},
		{"another thread's blob", withImage("x", message.MediaBlock{Kind: message.TypeImage, MimeType: "image/png", Blob: checkpoint.BlobRef(other)}), media.ErrRefused,
			"messages[0].content[1].blob: media refused: " + checkpoint.BlobRef(other) + " is not a blob this thread holds"},
		{"a url to loopback", withImage("x", message.MediaBlock{Kind: message.TypeImage, MimeType: "image/png", URL: "https://127.0.0.1/x.png"}), media.ErrRefused,
			"messages[0].content[1].url: media refused: address 127.0.0.1:443 is a loopback address"},
		{"an image in an assistant message", []message.Message{{Role: message.RoleAssistant, Content: []message.Block{dataImage(small)}}}, graph.ErrInvalidInput,
			"messages[0].content[0]: image blocks stand only in user messages and among tool results' attachments, not in a message of role \"assistant\""},
		{"a bad attachment of a result", []message.Message{{Role: message.RoleTool, Content: []message.Block{message.ToolResultBlock{ToolCallID: "c", Content: json.RawMessage(`1`),
			Attachments: []message.MediaBlock{dataImage(small), {Kind: message.TypeFile, MimeType: "application/pdf", Data: small}}}}}}, media.ErrRefused,
			"messages[0].content[0].attachments[1]: media refused: declared application/pdf, but the bytes are image/png"},
		{"a control character in a filename", withImage("x", message.MediaBlock{Kind: message.TypeImage, MimeType: "image/png", Data: small, Filename: "a\nb.png"}), media.ErrRefused,
			"messages[0].content[1].filename"},
	} {
		_, err := app.Invoke(ctx, c.input, thread.RunConfig{ThreadID: "t"})
		if !errors.Is(err, graph.ErrInvalidInput) || !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v; want %v saying %q", c.name, err, c.kind, c.says)
		}
		if u := usageOf(t, store); u != before {
			t.Fatalf("%s stored something: %+v, before %+v", c.name, u, before)
		}
		if after, _ := app.ThreadFor(ctx, "", "t"); len(after.Messages) != len(held.Messages) {
			t.Fatalf("%s changed the thread: %d messages, before %d", c.name, len(after.Messages), len(held.Messages))
		}
	}
}

// A run whose write fails stores no blob (the store refuses the whole
// write), and the same request sent again stores it.
func TestMediaOfAFailedWriteAreNotStored(t *testing.T) {
	ctx := context.Background()
	store := &failingPuts{Memory: checkpoint.NewMemory()}
	for _, d := range []thread.Durability{thread.DurabilitySync, thread.DurabilityAsync, thread.DurabilityExit} {
		app, err := thread.Compile(graph.New().AddNode("a", say("a")).AddNode("b", say("b")).AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", graph.END),
			store, thread.WithDurability(d))

		if err != nil {
			t.Fatal(err)
		}
		img := pngBytes(9, 9+len(d))
		threadID := "t-" + string(d)
		store.fail.Store(1)
		if _, err := app.Invoke(ctx, withImage("x", dataImage(img)), thread.RunConfig{ThreadID: threadID}); err == nil {
			t.Fatalf("%s: the run whose write failed succeeded", d)
		}
		if _, err := app.Blob(ctx, "", threadID, checkpoint.BlobRef(img)); !errors.Is(err, graph.ErrBlobNotFound) {
			t.Fatalf("%s: the image of the run whose write failed: %v", d, err)
		}
		res, err := app.Invoke(ctx, withImage("x", dataImage(img)), thread.RunConfig{ThreadID: threadID})
		if err != nil || len(mediaOf(res.Messages)) != 1 {
			t.Fatalf("%s: sent again: %v", d, err)
		}
		if b, err := app.Blob(ctx, "", threadID, checkpoint.BlobRef(img)); err != nil || !bytes.Equal(b.Data, img) {
			t.Fatalf("%s: the image sent again: %v", d, err)
		}
	}
}

// failingPuts fails its next fail Puts.
type failingPuts struct {
	*checkpoint.Memory
	fail atomic.Int32
}

func (f *failingPuts) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	if f.fail.Add(-1) >= 0 {
		return errors.New("the store lost the write")
	}
	return f.Memory.Put(ctx, cp)
}

// A node's tool result with attachments as data (a plugin's screenshot) is
// stored as a reference; one whose attachment is refused becomes an error
// result saying why, and the run goes on; media a node puts where media may
// not stand fails the node. A node reads, through its run, the blobs the
// run took in before any checkpoint holds them.
func TestMediaFromNodes(t *testing.T) {
	ctx := context.Background()
	store := checkpoint.NewMemory()
	img := pngBytes(5, 5)
	ref := checkpoint.BlobRef(img)
	var read []byte
	var readErr error
	tools := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		last := in.State.Messages[len(in.State.Messages)-1].Text()
		var atts []message.MediaBlock
		switch last {
		case "screenshot":
			atts = []message.MediaBlock{dataImage(img)}
		case "lie":
			atts = []message.MediaBlock{{Kind: message.TypeImage, MimeType: "image/png", Data: pdfBytes}}
		case "misplace":
			return graph.Update{Messages: []message.Message{{Role: message.RoleAssistant, Content: []message.Block{dataImage(img)}}}}, nil
		}
		return graph.Update{Messages: []message.Message{{Role: message.RoleTool, Content: []message.Block{
			message.ToolResultBlock{ToolCallID: "c1", Content: json.RawMessage(`{"ok":true}`), Attachments: atts}}}}}, nil
	})
	model := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		if ms := mediaOf(in.State.Messages[len(in.State.Messages)-1:]); len(ms) > 0 {
			read, readErr = in.Run.ReadBlob(ctx, ms[0].Blob)
		}
		return graph.Update{}, nil
	})
	app, err := thread.Compile(graph.New().AddNode("tools", tools).AddNode("model", model).AddEdge(graph.START, "tools").AddEdge("tools", "model").AddEdge("model", graph.END),
		store, thread.WithDurability(thread.DurabilityExit))

	if err != nil {
		t.Fatal(err)
	}
	res, err := app.Invoke(ctx, user("screenshot"), thread.RunConfig{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if ms := mediaOf(res.Messages); len(ms) != 1 || ms[0].Blob != ref || ms[0].Data != nil || ms[0].Width != 5 {
		t.Fatalf("the tool's attachment: %+v", ms)
	}
	if readErr != nil || !bytes.Equal(read, img) {
		t.Fatalf("the next node read %d bytes, %v, before the run's one write", len(read), readErr)
	}
	if b, err := store.ReadBlob(ctx, "t", ref); err != nil || !bytes.Equal(b.Data, img) {
		t.Fatalf("the store: %v", err)
	}

	res, err = app.Invoke(ctx, user("lie"), thread.RunConfig{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Messages[len(res.Messages)-1].ToolResults()
	if len(tr) != 1 || !tr[0].IsError || len(tr[0].Attachments) != 0 ||
		!strings.Contains(string(tr[0].Content), "the tool's result was refused: attachments[0]: media refused: declared image/png, but the bytes are application/pdf") {
		t.Fatalf("the lying attachment's result: %+v", tr)
	}

	before := usageOf(t, store)
	_, err = app.Invoke(ctx, user("misplace"), thread.RunConfig{ThreadID: "m"})
	if err == nil || !strings.Contains(err.Error(), `node "tools": invalid input: messages[0].content[0]: image blocks stand only in user messages`) {
		t.Fatalf("media in a node's assistant message: %v", err)
	}
	if u := usageOf(t, store); u != before {
		t.Fatalf("the failed node's media were stored: %+v", u)
	}
	// The run reads no blob of another thread.
	if _, err := (&graph.Run{ThreadID: "m"}).ReadBlob(ctx, ref); !errors.Is(err, graph.ErrBlobNotFound) {
		t.Fatalf("a run without a store: %v", err)
	}
}

// Tenants keep their blobs apart: another tenant's thread of the same id
// neither reads nor names them.
func TestMediaPerTenant(t *testing.T) {
	ctx := context.Background()
	app, err := thread.Compile(graph.New().AddNode("a", say("a")).AddEdge(graph.START, "a").AddEdge("a", graph.END), checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	img := pngBytes(6, 6)
	ref := checkpoint.BlobRef(img)
	if _, err := app.Invoke(ctx, withImage("x", dataImage(img)), thread.RunConfig{ThreadID: "t", Tenant: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Blob(ctx, "alice", "t", ref); err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"bob", ""} {
		if _, err := app.Blob(ctx, tenant, "t", ref); !errors.Is(err, graph.ErrBlobNotFound) {
			t.Fatalf("%q reads alice's blob: %v", tenant, err)
		}
		_, err := app.Invoke(ctx, withImage("x", message.MediaBlock{Kind: message.TypeImage, MimeType: "image/png", Blob: ref}), thread.RunConfig{ThreadID: "t", Tenant: tenant})
		if !errors.Is(err, media.ErrRefused) {
			t.Fatalf("%q names alice's blob: %v", tenant, err)
		}
	}
	if _, err := app.Blob(ctx, "alice", "t", "sha256:nope"); !errors.Is(err, graph.ErrInvalidInput) {
		t.Fatalf("a malformed ref: %v", err)
	}
}

// Code's answers (RunConfig.Resume) that are tool results with media are
// taken in like a client's: the pause keeps, and the thread holds, only
// references.
func TestMediaInCodeAnswers(t *testing.T) {
	ctx := context.Background()
	store := checkpoint.NewMemory()
	asker := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		if in.Resume == nil {
			return graph.Update{Interrupts: []graph.Interrupt{{ID: "pick", Value: json.RawMessage(`"pick a file"`)}}}, nil
		}
		b, err := message.UnmarshalBlock(in.Resume["pick"].Value)
		if err != nil {
			return graph.Update{}, err
		}
		return graph.Update{Messages: []message.Message{{Role: message.RoleTool, Content: []message.Block{b}}}}, nil
	})
	app, err := thread.Compile(graph.New().AddNode("ask", asker).AddEdge(graph.START, "ask").AddEdge("ask", graph.END), store)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := app.Invoke(ctx, user("go"), thread.RunConfig{ThreadID: "t"}); err != nil || res.Status != graph.StatusInterrupted {
		t.Fatalf("%+v, %v", res, err)
	}
	img := pngBytes(7, 3)
	answer := mustJSON(t, message.ToolResultBlock{ToolCallID: "pick", Content: json.RawMessage(`"here"`), Attachments: []message.MediaBlock{dataImage(img)}})
	res, err := app.Invoke(ctx, nil, thread.RunConfig{ThreadID: "t", Resume: map[string]json.RawMessage{"pick": answer}})
	if err != nil {
		t.Fatal(err)
	}
	if ms := mediaOf(res.Messages); len(ms) != 1 || ms[0].Blob != checkpoint.BlobRef(img) || ms[0].Data != nil {
		t.Fatalf("the answer's attachment: %+v", ms)
	}
	cp, err := store.Latest(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(cp.State, []byte(`"data"`)) {
		t.Fatalf("the checkpoint keeps the answer's bytes: %.300s", cp.State)
	}
	if u := usageOf(t, store); u.Blobs != 1 {
		t.Fatalf("usage %+v", u)
	}
}

// A url source is fetched (once, however often a request names it),
// checked like data, and stored; the thread holds its reference. Without
// a declared type the bytes say what they are; with one they must be it.
func TestMediaFromURL(t *testing.T) {
	ctx := context.Background()
	img := pngBytes(12, 10)
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/octet-stream") // not taken: the bytes decide
		_, _ = w.Write(img)
	}))
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	checker, err := media.New(media.Policy{FetchHosts: []string{"127.0.0.1/32:" + srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]}, RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	store := checkpoint.NewMemory()
	app, err := thread.Compile(graph.New().AddNode("a", say("a")).AddEdge(graph.START, "a").AddEdge("a", graph.END), store, thread.WithMedia(checker))
	if err != nil {
		t.Fatal(err)
	}
	in := withImage("look", message.MediaBlock{Kind: message.TypeImage, MimeType: "image/png", URL: srv.URL + "/a.png"})
	in[0].Content = append(in[0].Content, message.MediaBlock{Kind: message.TypeImage, URL: srv.URL + "/a.png"})
	res, err := app.Invoke(ctx, in, thread.RunConfig{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	ms := mediaOf(res.Messages)
	if len(ms) != 2 || ms[0].Blob != checkpoint.BlobRef(img) || ms[1].Blob != ms[0].Blob || ms[1].MimeType != "image/png" || ms[0].URL != "" || ms[0].Width != 12 {
		t.Fatalf("the url sources read back as %+v", ms)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the url was fetched %d times", n)
	}
	if b, err := store.ReadBlob(ctx, "t", checkpoint.BlobRef(img)); err != nil || !bytes.Equal(b.Data, img) {
		t.Fatalf("the stored bytes: %v", err)
	}
	_, err = app.Invoke(ctx, withImage("look", message.MediaBlock{Kind: message.TypeImage, MimeType: "image/jpeg", URL: srv.URL + "/a.png"}), thread.RunConfig{ThreadID: "t"})
	if !errors.Is(err, media.ErrRefused) || !strings.Contains(err.Error(), "messages[0].content[1]: media refused: declared image/jpeg, but the bytes are image/png") {
		t.Fatalf("a url whose bytes are not the declared type: %v", err)
	}
}
