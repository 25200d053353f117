package openai_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/model/openai/openaitest"
)

// blobStore is a thread's blobs for tests: a map, counting reads.
type blobStore struct {
	mu    sync.Mutex
	bytes map[string][]byte
	reads map[string]int
	fail  error // when set, every read fails with it
}

func newBlobs() *blobStore {
	return &blobStore{bytes: map[string][]byte{}, reads: map[string]int{}}
}

// put stores data and returns its reference.
func (s *blobStore) put(data []byte) string {
	sum := sha256.Sum256(data)
	ref := message.BlobPrefix + hex.EncodeToString(sum[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bytes[ref] = data
	return ref
}

func (s *blobStore) ReadBlob(_ context.Context, ref string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads[ref]++
	if s.fail != nil {
		return nil, s.fail
	}
	b, ok := s.bytes[ref]
	if !ok {
		return nil, fmt.Errorf("no blob %s in this thread", ref)
	}
	return b, nil
}

func (s *blobStore) readCount() (total int, most int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.reads {
		total += n
		most = max(most, n)
	}
	return total, most
}

var (
	pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR fake image bytes")
	pdfBytes = []byte("%PDF-1.4\n1 0 obj << >> endobj\n%%EOF\n")
	wavBytes = []byte("RIFF\x24\x00\x00\x00WAVEfmt fake sound")
)

// stored is a media block as the host stores it: a reference and a size.
func stored(s *blobStore, kind, mime, name string, data []byte) message.MediaBlock {
	b := message.MediaBlock{Kind: kind, MimeType: mime, Filename: name, Blob: s.put(data), Size: int64(len(data))}
	if kind == message.TypeImage {
		b.Width, b.Height = 64, 48
	}
	return b
}

func user(id string, blocks ...message.Block) message.Message {
	return message.Message{ID: id, Role: message.RoleUser, Content: blocks}
}

// A user's image reaches the server as an image_url part holding the bytes
// in a data: URL, after the text, and a PDF as a file part with its name.
func TestUserMediaParts(t *testing.T) {
	both(t, func(t *testing.T, stream bool) {
		srv := openaitest.NewServer(t, openaitest.Text("A cat."))
		blobs := newBlobs()
		req := model.Request{ThreadID: "t-user", Blobs: blobs, Messages: []message.Message{user("u1",
			message.TextBlock{Text: "what is in this image?"},
			stored(blobs, message.TypeImage, "image/png", "cat.png", pngBytes),
			stored(blobs, message.TypeFile, "application/pdf", "a.pdf", pdfBytes),
			stored(blobs, message.TypeAudio, "audio/wav", "", wavBytes),
		)}}
		if _, err := generate(t, newModel(t, srv), req, stream); err != nil {
			t.Fatal(err)
		}
		msg := srv.Requests()[0].Messages[0]
		if msg.Role != "user" || len(msg.Parts) != 4 {
			t.Fatalf("sent %+v, want a user message of four parts", msg)
		}
		p := msg.Parts
		if p[0].Type != "text" || p[0].Text != "what is in this image?" {
			t.Errorf("part 0 %+v", p[0])
		}
		if p[1].Type != "image_url" || p[1].MimeType != "image/png" || !bytes.Equal(p[1].Data, pngBytes) || !strings.HasPrefix(p[1].URL, "data:image/png;base64,") {
			t.Errorf("part 1 %+v, want the image's bytes in a data: URL", p[1])
		}
		if p[2].Type != "file" || p[2].Filename != "a.pdf" || p[2].MimeType != "application/pdf" || !bytes.Equal(p[2].Data, pdfBytes) {
			t.Errorf("part 2 %+v, want the PDF as a file part", p[2])
		}
		if p[3].Type != "input_audio" || p[3].Format != "wav" || !bytes.Equal(p[3].Data, wavBytes) {
			t.Errorf("part 3 %+v, want the sound as input_audio", p[3])
		}
	})
}

// A tool result's attachments: each tool message stays text, names its
// attachments and holds no base64; one user message after the last tool
// message of the step carries them all, labelled by call.
func TestToolAttachmentsFollowTheToolMessages(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Text("Read both."))
	blobs := newBlobs()
	pdf := stored(blobs, message.TypeFile, "application/pdf", "report.pdf", pdfBytes)
	img := stored(blobs, message.TypeImage, "image/png", "", pngBytes)
	msgs := []message.Message{
		user("u1", message.TextBlock{Text: "fetch the report and take a screenshot"}),
		{ID: "a1", Role: message.RoleAssistant, Content: []message.Block{
			message.ToolCallBlock{ID: "c1", Name: "fetch", Arguments: json.RawMessage(`{}`)},
			message.ToolCallBlock{ID: "c2", Name: "add", Arguments: json.RawMessage(`{"a":1,"b":2}`)},
			message.ToolCallBlock{ID: "c3", Name: "screenshot", Arguments: json.RawMessage(`{}`)},
		}},
		{ID: "t1", Role: message.RoleTool, Content: []message.Block{
			message.ToolResultBlock{ToolCallID: "c1", Content: json.RawMessage(`{"pages":3}`), Attachments: []message.MediaBlock{pdf}},
			message.ToolResultBlock{ToolCallID: "c2", Content: json.RawMessage(`3`)},
			message.ToolResultBlock{ToolCallID: "c3", Content: json.RawMessage(`"done"`), Attachments: []message.MediaBlock{img}},
		}},
	}
	if _, err := newModel(t, srv).Generate(ctx, model.Request{ThreadID: "t-tools", Blobs: blobs, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0].Messages
	if len(got) != 6 {
		t.Fatalf("%d messages, want user, assistant, three tool messages and one user message: %+v", len(got), got)
	}
	for i, want := range []string{"user", "assistant", "tool", "tool", "tool", "user"} {
		if got[i].Role != want {
			t.Fatalf("messages[%d] is %s, want %s", i, got[i].Role, want)
		}
	}
	for _, m := range got[2:5] {
		if m.Parts != nil || strings.Contains(m.Content, "base64") || strings.Contains(m.Content, "JVBER") {
			t.Errorf("tool message %+v: want plain text without the bytes", m)
		}
	}
	if c := got[2].Content; !strings.HasPrefix(c, `{"pages":3}`) || !strings.Contains(c, "[file application/pdf report.pdf 36 bytes]") {
		t.Errorf("tool message c1 %q: want the result, then its attachment named", c)
	}
	if got[3].Content != "3" {
		t.Errorf("tool message c2 %q: a result without attachments is sent as before", got[3].Content)
	}
	if c := got[4].Content; !strings.Contains(c, "[image image/png 64x48]") {
		t.Errorf("tool message c3 %q", c)
	}
	p := got[5].Parts
	if len(p) != 4 || p[0].Text != "Attached to the result of c1:" || p[1].Type != "file" || !bytes.Equal(p[1].Data, pdfBytes) || p[1].Filename != "report.pdf" ||
		p[2].Text != "Attached to the result of c3:" || p[3].Type != "image_url" || !bytes.Equal(p[3].Data, pngBytes) {
		t.Errorf("the attachments' user message %+v", p)
	}
}

// A blob that cannot be read fails the call with an error naming it;
// nothing is sent, and nothing is remembered: the next call reads again.
func TestUnreadableBlob(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Text("ok"))
	blobs := newBlobs()
	img := stored(blobs, message.TypeImage, "image/png", "", pngBytes)
	msgs := []message.Message{user("u1", message.TextBlock{Text: "look"}, img)}
	m := newModel(t, srv)

	blobs.fail = errors.New("disk on fire")
	_, err := m.Generate(ctx, model.Request{ThreadID: "t-broken", Blobs: blobs, Messages: msgs})
	if err == nil || !strings.Contains(err.Error(), img.Blob) || !strings.Contains(err.Error(), "disk on fire") || !strings.Contains(err.Error(), `"u1"`) {
		t.Fatalf("error %v: want one naming the blob, the message and the cause", err)
	}
	_, err = m.Generate(ctx, model.Request{ThreadID: "t-none", Messages: msgs})
	if err == nil || !strings.Contains(err.Error(), img.Blob) || !strings.Contains(err.Error(), "keeps no blobs") {
		t.Fatalf("error %v: want one saying there is no blob store", err)
	}
	call := []message.Message{user("u0", message.TextBlock{Text: "go"}),
		{ID: "a1", Role: message.RoleAssistant, Content: []message.Block{message.ToolCallBlock{ID: "c1", Name: "shot", Arguments: json.RawMessage(`{}`)}}},
		{ID: "t1", Role: message.RoleTool, Content: []message.Block{message.ToolResultBlock{ToolCallID: "c1", Content: json.RawMessage(`1`), Attachments: []message.MediaBlock{img}}}}}
	_, err = m.Generate(ctx, model.Request{ThreadID: "t-broken-tool", Blobs: blobs, Messages: call})
	if err == nil || !strings.Contains(err.Error(), `image blob `+img.Blob+` of the result of call "c1": disk on fire`) {
		t.Fatalf("error %v: want one naming the blob and the call", err)
	}
	if n := srv.Served(); n != 0 {
		t.Fatalf("%d requests sent with an unreadable blob", n)
	}
	blobs.fail = nil
	if _, err := m.Generate(ctx, model.Request{ThreadID: "t-broken", Blobs: blobs, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	if p := srv.Requests()[0].Messages[0].Parts; len(p) != 2 || !bytes.Equal(p[1].Data, pngBytes) {
		t.Fatalf("after the store recovered: %+v", p)
	}
}

// What Chat Completions does not take is a text stand-in naming it and
// why, and its bytes are not read; a message left with no media part is a
// plain string, which a server that reads only text takes too.
func TestStandIns(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Text("ok"), openaitest.Text("ok"))
	blobs := newBlobs()
	huge := stored(blobs, message.TypeImage, "image/png", "huge.png", pngBytes)
	huge.Size = 25_000_000 // as the host stored it
	msgs := []message.Message{user("u1",
		message.TextBlock{Text: "see"},
		stored(blobs, message.TypeImage, "image/bmp", "old.bmp", []byte("BM....")),
		stored(blobs, message.TypeFile, "text/plain", "notes.txt", []byte("hello")),
		stored(blobs, message.TypeAudio, "audio/ogg", "", []byte("OggS")),
		huge,
		message.MediaBlock{Kind: message.TypeFile, MimeType: "application/pdf", URL: "https://example.com/a.pdf"},
	)}
	m := newModel(t, srv)
	if _, err := m.Generate(ctx, model.Request{ThreadID: "t-standins", Blobs: blobs, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0].Messages[0]
	want := "see [image image/bmp old.bmp 64x48: not sent: Chat Completions takes PNG, JPEG, GIF and WebP images]" +
		" [file text/plain notes.txt 5 bytes: not sent: Chat Completions takes PDF files only]" +
		" [audio audio/ogg 4 bytes: not sent: Chat Completions takes WAV and MP3 audio only]" +
		" [image image/png huge.png 64x48: not sent: larger than the 20 MB an image may be]" +
		" [file application/pdf: not sent: Chat Completions takes a file's bytes, not its url]"
	if got.Parts != nil || got.Content != want {
		t.Fatalf("sent %+v\nwant the string %q", got, want)
	}
	if total, _ := blobs.readCount(); total != 0 {
		t.Fatalf("%d blobs read for stand-ins", total)
	}

	// An image by url is passed on; a stand-in beside media is a text part.
	msgs = []message.Message{user("u2",
		message.MediaBlock{Kind: message.TypeImage, MimeType: "image/jpeg", URL: "https://example.com/cat.jpg"},
		stored(blobs, message.TypeFile, "text/csv", "t.csv", []byte("a,b")),
	)}
	if _, err := m.Generate(ctx, model.Request{Blobs: blobs, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	p := srv.Requests()[1].Messages[0].Parts
	if len(p) != 2 || p[0].URL != "https://example.com/cat.jpg" || p[1].Type != "text" || !strings.HasPrefix(p[1].Text, "[file text/csv t.csv 3 bytes: not sent") {
		t.Fatalf("parts %+v", p)
	}
}

// The bytes read are checked against the limits too: a blob larger than
// its stored size says is a stand-in, not a request the server refuses.
func TestReadBytesOverTheLimit(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Text("ok"))
	big := bytes.Repeat([]byte{1}, 20_000_001)
	blobs := newBlobs()
	img := stored(blobs, message.TypeImage, "image/png", "", big)
	img.Size = 10 // a size that lies
	if _, err := newModel(t, srv).Generate(ctx, model.Request{Blobs: blobs, Messages: []message.Message{user("u", img)}}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].Messages[0].Content; !strings.Contains(got, "larger than the 20 MB") {
		t.Fatalf("sent %q", got)
	}
}

// A thread's media fit in a request's budget newest first: older ones
// become stand-ins (and are not read), and stay so as the thread grows.
func TestMediaBudget(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.Handle(func(openaitest.Request) openaitest.Reply { return openaitest.Text("ok") })
	blobs := newBlobs()
	m := newModel(t, srv)
	var msgs []message.Message
	for i := range 5 {
		img := stored(blobs, message.TypeImage, "image/png", fmt.Sprintf("p%d.png", i), append([]byte(fmt.Sprint(i)), pngBytes...))
		img.Size = 15_000_000 // three fit in 50 MB
		msgs = append(msgs, user(fmt.Sprint("u", i), message.TextBlock{Text: fmt.Sprint("image ", i)}, img),
			message.Message{ID: fmt.Sprint("a", i), Role: message.RoleAssistant, Content: []message.Block{message.TextBlock{Text: "ok"}}})
		if _, err := m.Generate(ctx, model.Request{ThreadID: "t-budget", Blobs: blobs, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
		last := srv.Requests()[i].Messages
		for j := 0; j <= i; j++ {
			u := last[2*j]
			inline := j > i-3
			if inline != (len(u.Parts) == 2 && u.Parts[1].Type == "image_url") {
				t.Fatalf("turn %d, image %d: sent %+v, inline want %v", i, j, u, inline)
			}
			if !inline && !strings.Contains(u.Content, "left out: a request carries the newest media only") {
				t.Fatalf("turn %d, image %d: %q", i, j, u.Content)
			}
		}
	}
	if total, most := blobs.readCount(); total != 5 || most != 1 {
		t.Fatalf("%d reads (at most %d of one blob), want each image read once", total, most)
	}
}

// Over a long thread with an image every few turns, each blob is read
// once, however many turns send it.
func TestBlobsReadOncePerThread(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.Handle(func(openaitest.Request) openaitest.Reply { return openaitest.Text("ok") })
	blobs := newBlobs()
	m := newModel(t, srv)
	msgs := imageThread(blobs, 50, 3, 64)
	for n := 1; n <= len(msgs); n += 2 {
		if _, err := m.Generate(ctx, model.Request{ThreadID: "t-long", Blobs: blobs, Messages: msgs[:n]}); err != nil {
			t.Fatal(err)
		}
	}
	total, most := blobs.readCount()
	if most != 1 || total != 17 {
		t.Fatalf("%d reads, at most %d of one blob: want 17 images read once each", total, most)
	}
	last := srv.Requests()[len(srv.Requests())-1].Messages
	images := 0
	for _, msg := range last {
		for _, p := range msg.Parts {
			if p.Type == "image_url" {
				images++
			}
		}
	}
	if images != 17 {
		t.Fatalf("the last request carries %d images, want 17", images)
	}
}

// imageThread is turns user/assistant pairs whose user message carries an
// image of size bytes every every turns (the first turn included), and
// whose answer calls a tool, on every every-th turn, that returns an
// image too.
func imageThread(blobs *blobStore, turns, every, size int) []message.Message {
	var msgs []message.Message
	for i := range turns {
		u := user(fmt.Sprint("u", i), message.TextBlock{Text: fmt.Sprintf("turn %d: what do you see?", i)})
		if i%every == 0 {
			data := bytes.Repeat([]byte{byte(i)}, size)
			u.Content = append(u.Content, stored(blobs, message.TypeImage, "image/png", "", data))
		}
		msgs = append(msgs, u, message.Message{ID: fmt.Sprint("a", i), Role: message.RoleAssistant, Content: []message.Block{message.TextBlock{Text: "I see it."}}})
	}
	return msgs
}
