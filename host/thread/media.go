package thread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/media"
	"github.com/tenxgraph/tenxgraph/host/message"
)

// This file is how a thread takes in images, files and sounds. Whatever
// adds messages (a run's input from any client, a client's tool results,
// a node's update, a plugin's attachments among them), every media block
// goes through ingest before the thread holds it: its bytes (sent as data,
// fetched from its url, or a blob the thread already holds) are checked
// (package media), and the block keeps only a reference to them
// (message.MediaBlock.Blob) with their size and pixels. The bytes go to
// the store with the first checkpoint that refers to them, in the same
// write (checkpoint.Checkpoint.Blobs): a run that is refused, or whose
// checkpoint is not written, stores nothing. Until then the run holds
// them, and its nodes read them through graph.Run.ReadBlob as they read
// those the thread held before.

// MaxFilenameBytes bounds a media block's filename.
const MaxFilenameBytes = 255

// runMedia are the media of one run's thread: those the run took in, by
// reference, with their bytes until a checkpoint that carried them is
// written, and those the thread held before, in the store.
type runMedia struct {
	checker  *media.Checker
	store    checkpoint.BlobStore
	key      string // the thread's
	threadID string

	mu    sync.Mutex
	byRef map[string]*runBlob
}

type runBlob struct {
	checkpoint.Blob
	state blobState
}

type blobState int

const (
	blobUnsaved  blobState = iota // no checkpoint has carried it yet
	blobInFlight                  // a checkpoint being written carries it
	blobSaved                     // the store has it; Data is dropped
)

// add keeps b, unless the run has it already.
func (rb *runMedia) add(b checkpoint.Blob) {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	if rb.byRef == nil {
		rb.byRef = map[string]*runBlob{}
	}
	if _, ok := rb.byRef[b.Ref]; !ok {
		rb.byRef[b.Ref] = &runBlob{Blob: b}
	}
}

// get returns the blob ref the run took in; Data is nil once it is saved.
func (rb *runMedia) get(ref string) (checkpoint.Blob, bool) {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	b, ok := rb.byRef[ref]
	if !ok {
		return checkpoint.Blob{}, false
	}
	return b.Blob, true
}

// take returns the blobs no checkpoint has carried yet, for the next one.
func (rb *runMedia) take() []checkpoint.Blob {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	var out []checkpoint.Blob
	for _, b := range rb.byRef {
		if b.state == blobUnsaved {
			b.state = blobInFlight
			out = append(out, b.Blob)
		}
	}
	return out
}

// done records the outcome of the write that carried blobs: saved, or to
// be carried by the next one.
func (rb *runMedia) done(blobs []checkpoint.Blob, saved bool) {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	for _, b := range blobs {
		rb := rb.byRef[b.Ref]
		if saved {
			rb.state, rb.Data = blobSaved, nil
		} else {
			rb.state = blobUnsaved
		}
	}
}

// ReadBlob implements graph.BlobReader: the bytes of the blob ref of the
// run's thread, one the run took in, written yet or not, or one the
// thread held before. A blob the thread does not hold is an error wrapping
// graph.ErrBlobNotFound.
func (rb *runMedia) ReadBlob(ctx context.Context, ref string) ([]byte, error) {
	if b, ok := rb.get(ref); ok && b.Data != nil {
		return b.Data, nil
	}
	b, err := rb.store.ReadBlob(ctx, rb.key, ref)
	if errors.Is(err, checkpoint.ErrBlobNotFound) {
		return nil, fmt.Errorf("thread %q: blob %s: %w", rb.threadID, ref, graph.ErrBlobNotFound)
	}
	if err != nil {
		return nil, err
	}
	return b.Data, nil
}

// statBlob returns the blob ref if the run's thread holds it (or the run
// took it in), without its bytes.
func (rb *runMedia) statBlob(ctx context.Context, ref string) (checkpoint.Blob, bool, error) {
	if b, ok := rb.get(ref); ok {
		b.Data = nil
		return b, true, nil
	}
	b, err := rb.store.StatBlob(ctx, rb.key, ref)
	switch {
	case errors.Is(err, checkpoint.ErrBlobNotFound):
		return checkpoint.Blob{}, false, nil
	case err != nil:
		return checkpoint.Blob{}, false, fmt.Errorf("thread %q: blob %s: %w", rb.threadID, ref, err)
	}
	return b, true, nil
}

// ingester takes in the media of one request's input, or of one node's
// update: every block's new bytes count against one budget
// (media.Checker.MaxRequestBytes), and a url named twice is fetched once.
type ingester struct {
	run     *runMedia
	budget  int64
	fetched map[string][]byte // by url
}

func (rb *runMedia) ingester() *ingester {
	return &ingester{run: rb, budget: rb.checker.MaxRequestBytes()}
}

// messages takes in the media of msgs, whose paths start at (such as
// "messages"), and returns them with every media block holding a
// reference. msgs is not changed; a message is copied only if one of its
// blocks is. A media block out of its place, or one refused, is an error
// wrapping graph.ErrInvalidInput (and media.ErrRefused or
// media.ErrTooLarge), naming the block's path; with lenient, a tool result
// whose attachments are refused becomes an error result saying why instead
// (see saver.Admit).
func (in *ingester) messages(ctx context.Context, msgs []message.Message, at string, lenient bool) ([]message.Message, error) {
	var out []message.Message
	for i, m := range msgs {
		var content []message.Block
		for j, b := range m.Content {
			// A block's path is spelled only for a block that may need it:
			// most blocks are neither media nor carry attachments.
			var nb message.Block
			switch b := b.(type) {
			case message.MediaBlock:
				path := blockPath(at, i, j)
				if err := graph.CheckMediaPlace(m.Role, b.Kind, path); err != nil {
					return nil, err
				}
				mb, err := in.block(ctx, b, path)
				if err != nil {
					return nil, err
				}
				nb = mb
			case message.ToolResultBlock:
				if len(b.Attachments) == 0 {
					continue
				}
				sub := ""
				if !lenient {
					sub = blockPath(at, i, j)
				}
				atts, err := in.attachments(ctx, b.Attachments, sub)
				switch {
				case err == nil:
					b.Attachments = atts
				case lenient && (errors.Is(err, media.ErrRefused) || errors.Is(err, media.ErrTooLarge)):
					raw, _ := json.Marshal("the tool's result was refused: " + strings.TrimPrefix(err.Error(), graph.ErrInvalidInput.Error()+": "))
					b = message.ToolResultBlock{ToolCallID: b.ToolCallID, Content: raw, IsError: true}
				default:
					return nil, err
				}
				nb = b
			default:
				continue
			}
			if content == nil {
				content = append([]message.Block(nil), m.Content...)
			}
			content[j] = nb
		}
		if content != nil {
			if out == nil {
				out = append([]message.Message(nil), msgs...)
			}
			m.Content = content
			out[i] = m
		}
	}
	if out == nil {
		return msgs, nil
	}
	return out, nil
}

// blockPath is the path of block j of message i of the messages at at.
func blockPath(at string, i, j int) string {
	return fmt.Sprintf("%s[%d].content[%d]", at, i, j)
}

// attachments takes in a tool result's attachments, at path.
func (in *ingester) attachments(ctx context.Context, atts []message.MediaBlock, at string) ([]message.MediaBlock, error) {
	out := make([]message.MediaBlock, len(atts))
	for k, a := range atts {
		path := fmt.Sprintf("attachments[%d]", k)
		if at != "" {
			path = at + "." + path
		}
		mb, err := in.block(ctx, a, path)
		if err != nil {
			return nil, err
		}
		out[k] = mb
	}
	return out, nil
}

// mediaErr is a refusal of the block at path.
func mediaErr(path string, err error) error {
	return fmt.Errorf("%w: %s: %w", graph.ErrInvalidInput, path, err)
}

// block takes in one media block: its bytes from its source, checked, and
// kept by the run unless the thread holds them already. It returns the
// block as the thread keeps it.
func (in *ingester) block(ctx context.Context, b message.MediaBlock, path string) (message.MediaBlock, error) {
	if err := checkFilename(b.Filename); err != nil {
		return b, mediaErr(path+".filename", err)
	}
	out := message.MediaBlock{Kind: b.Kind, Filename: b.Filename}
	if b.Blob != "" {
		held, ok, err := in.run.statBlob(ctx, b.Blob)
		if err != nil {
			return b, err
		}
		if !ok {
			return b, mediaErr(path+".blob", fmt.Errorf("%w: %s is not a blob this thread holds: send the bytes as data", media.ErrRefused, b.Blob))
		}
		if b.MimeType != "" {
			if t, err := media.Canonical(b.MimeType); err != nil || t != held.MimeType {
				return b, mediaErr(path+".mime_type", fmt.Errorf("%w: declared %s, but blob %s is %s", media.ErrRefused, b.MimeType, b.Blob, held.MimeType))
			}
		}
		if err := kindHolds(b.Kind, held.MimeType); err != nil {
			return b, mediaErr(path, err)
		}
		out.MimeType, out.Blob, out.Size, out.Width, out.Height = held.MimeType, held.Ref, held.Size, held.Width, held.Height
		return out, nil
	}
	c := in.run.checker
	data := b.Data
	if b.URL != "" {
		// The server's Content-Type is not taken: the declared type must
		// be the bytes', and without one (an AG-UI url source may leave it
		// out) the bytes say what they are.
		d, ok := in.fetched[b.URL]
		if !ok {
			var err error
			d, _, err = c.Fetch(ctx, b.URL, min(c.MaxBlobBytes(), max(in.budget, 0)))
			if err != nil {
				if errors.Is(err, media.ErrTooLarge) && in.budget < c.MaxBlobBytes() {
					err = fmt.Errorf("%w (the request's media come to more than media.max_request_bytes, %d)", err, c.MaxRequestBytes())
				}
				if ctx.Err() != nil {
					return b, fmt.Errorf("%s: %w", path, context.Cause(ctx))
				}
				return b, mediaErr(path+".url", err)
			}
			if in.fetched == nil {
				in.fetched = map[string][]byte{}
			}
			in.fetched[b.URL] = d
		}
		data = d
	}
	in.budget -= int64(len(data))
	if in.budget < 0 {
		return b, mediaErr(path, fmt.Errorf("%w: the request's media come to more than media.max_request_bytes (%d)", media.ErrTooLarge, c.MaxRequestBytes()))
	}
	info, err := c.Inspect(b.Kind, b.MimeType, data)
	if err != nil {
		return b, mediaErr(path, err)
	}
	ref := checkpoint.BlobRef(data)
	if _, ok, err := in.run.statBlob(ctx, ref); err != nil {
		return b, err
	} else if !ok {
		in.run.add(checkpoint.Blob{Ref: ref, MimeType: info.MimeType, Size: int64(len(data)), Width: info.Width, Height: info.Height, Data: data})
	}
	out.MimeType, out.Blob, out.Size, out.Width, out.Height = info.MimeType, ref, int64(len(data)), info.Width, info.Height
	return out, nil
}

// byReference says why m may not be stored: a media block (or a tool
// result's attachment) that still holds its bytes or a url, which only
// ingest turns into a reference. It guards the rule that a checkpoint
// never holds media bytes, whatever path a message took.
func byReference(m message.Message) error {
	check := func(b message.MediaBlock) error {
		if b.Blob == "" || b.Data != nil || b.URL != "" {
			return fmt.Errorf("a media block (%s) reached the store without being taken in (it holds no blob reference, or still its data or url)", b.Kind)
		}
		return nil
	}
	for _, b := range m.Content {
		switch b := b.(type) {
		case message.MediaBlock:
			if err := check(b); err != nil {
				return err
			}
		case message.ToolResultBlock:
			for _, a := range b.Attachments {
				if err := check(a); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// resume takes in the media of the tool results among code's answers
// (RunConfig.Resume), which a pause keeps in its checkpoint as they are.
func (in *ingester) resume(ctx context.Context, answers map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	var out map[string]json.RawMessage
	for id, raw := range answers {
		b, err := message.UnmarshalBlock(raw)
		tr, ok := b.(message.ToolResultBlock)
		if err != nil || !ok || len(tr.Attachments) == 0 {
			continue // not a result with media: the node that asked judges it
		}
		if tr.Attachments, err = in.attachments(ctx, tr.Attachments, fmt.Sprintf("config.resume[%q]", id)); err != nil {
			return nil, err
		}
		if raw, err = message.MarshalBlock(tr); err != nil {
			return nil, fmt.Errorf("config.resume[%q]: %w", id, err)
		}
		if out == nil {
			out = maps.Clone(answers)
		}
		out[id] = raw
	}
	if out == nil {
		return answers, nil
	}
	return out, nil
}

// kindHolds says why a block of kind may not hold bytes of type t.
func kindHolds(kind, t string) error {
	switch {
	case kind == message.TypeImage && !strings.HasPrefix(t, "image/"):
		return fmt.Errorf("%w: an image block holds an image; %s goes in a file block", media.ErrRefused, t)
	case kind == message.TypeAudio && !strings.HasPrefix(t, "audio/"):
		return fmt.Errorf("%w: an audio block holds a sound; %s goes in a file block", media.ErrRefused, t)
	}
	return nil
}

// checkFilename refuses a filename that is not short, plain text.
func checkFilename(name string) error {
	switch {
	case len(name) > MaxFilenameBytes:
		return fmt.Errorf("%w: %d bytes, more than %d", media.ErrRefused, len(name), MaxFilenameBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: not valid UTF-8", media.ErrRefused)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Errorf("%w: must not contain control characters", media.ErrRefused)
	}
	return nil
}
