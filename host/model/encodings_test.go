package model_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
)

// enc encodes a message as its id and, for each media block, "+" when it
// goes inline with the bytes read or "-" when not; it counts encodings.
func enc(encoded *int) *model.Encoder[string] {
	return &model.Encoder[string]{
		Name: "test",
		Media: func(msg message.Message) []model.Item {
			return model.Items(msg, func(b message.MediaBlock) model.Item {
				return model.Item{Inline: b.MimeType == "image/png", Why: "not png", Size: b.Size, Image: true, Ref: b.Blob}
			})
		},
		Limits: model.Limits{Images: 2, Bytes: 100, PDFBytes: 100},
		Encode: func(_ int, msg message.Message, s *model.Sends, blobs map[string][]byte) (string, error) {
			*encoded++
			out := msg.ID
			for k := range msg.Content[1:] {
				if s.Sent(k) {
					out += "+" + string(blobs[s.Items[k].Ref])
				} else {
					out += "-"
				}
			}
			return out, nil
		},
		Size: func(s string) int { return len(s) },
	}
}

func imageMsg(i int, mime string) message.Message {
	return message.Message{ID: fmt.Sprint("u", i), Role: message.RoleUser, Content: []message.Block{
		message.TextBlock{Text: "look"},
		message.MediaBlock{Kind: message.TypeImage, MimeType: mime, Blob: fmt.Sprintf("sha256:%064x", i), Size: 10},
	}}
}

// The newest media that fit go inline; older ones are left out and stay
// so; a message is encoded again only when that changes; each blob is read
// once, outside the encodings' lock, and one that cannot be read is named.
func TestEncodings(t *testing.T) {
	var e model.Encodings[string]
	encoded, reads := 0, map[string]int{}
	var fail error
	blobs := model.BlobReaderFunc(func(_ context.Context, ref string) ([]byte, error) {
		reads[ref]++
		if fail != nil {
			return nil, fail
		}
		return []byte(ref[len(ref)-1:]), nil
	})
	var msgs []message.Message
	// Two images a request; a BMP is never inline, and counts for none.
	want := []string{"u1+1", "u1+1 u2+2", "u1- u2+2 u3+3", "u1- u2+2 u3+3 u4-", "u1- u2- u3+3 u4- u5+5"}
	wantEncoded := []int{1, 2, 4, 5, 7}
	for i, mime := range []string{"image/png", "image/png", "image/png", "image/bmp", "image/png"} {
		msgs = append(msgs, imageMsg(i+1, mime))
		got, size, err := e.Encode(context.Background(), msgs, blobs, enc(&encoded))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, " ") != want[i] || size != len(strings.Join(got, "")) || encoded != wantEncoded[i] {
			t.Fatalf("call %d: %q (size %d, %d encodings), want %q (%d encodings)", i, got, size, encoded, want[i], wantEncoded[i])
		}
	}
	for ref, n := range reads {
		if n != 1 {
			t.Fatalf("%s read %d times", ref, n)
		}
	}
	if e.Len() != 5 || e.Bytes() != len("u1-u2-u3+3u4-u5+5") {
		t.Fatalf("Len %d Bytes %d", e.Len(), e.Bytes())
	}

	fail = errors.New("gone")
	msgs = append(msgs, imageMsg(6, "image/png"))
	_, _, err := e.Encode(context.Background(), msgs, blobs, enc(&encoded))
	if err == nil || err.Error() != `test: cannot read the image blob `+fmt.Sprintf("sha256:%064x", 6)+` of message "u6": gone` {
		t.Fatalf("error %v", err)
	}
	if _, _, err := e.Encode(context.Background(), msgs, nil, enc(&encoded)); err == nil || !strings.Contains(err.Error(), "keeps no blobs") {
		t.Fatalf("error %v", err)
	}
	fail = nil
	if got, _, err := e.Encode(context.Background(), msgs, blobs, enc(&encoded)); err != nil || strings.Join(got, " ") != "u1- u2- u3- u4- u5+5 u6+6" {
		t.Fatalf("after the store recovered: %q %v", got, err)
	}
}
