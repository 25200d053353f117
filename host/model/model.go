// Package model defines ChatModel, the one interface the graph uses to talk
// to a language model, and the providers that implement it.
package model

import (
	"context"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// ChatModel produces the next assistant message for a conversation.
type ChatModel interface {
	// Generate answers req. It blocks until the whole message is known;
	// providers that stream report pieces through req.OnDelta as they come.
	Generate(ctx context.Context, req Request) (Response, error)
}

// Request is one model call.
type Request struct {
	// Messages is the conversation, already in the shape every provider
	// accepts (see message.ForModel): each tool-calling assistant message is
	// followed by one result per call, in call order.
	Messages []message.Message
	// Tools are the tools the model may call in this step.
	Tools []sdk.ToolSpec
	// ThreadID names the conversation (providers may use it for caching or
	// deterministic ids).
	ThreadID string
	// OnDelta, when set, receives text as the model produces it.
	OnDelta func(text string)
	// Blobs reads the bytes of the media blocks the messages hold by
	// reference (MediaBlock.Blob), scoped to the thread; nil when the
	// host keeps no blobs. A provider reads them only to send them.
	Blobs BlobReader
}

// BlobReader gives a model provider the bytes of a thread's blobs, which
// messages hold by reference only (message.MediaBlock.Blob): the bytes are
// read, and encoded as the provider's wire format wants, per request,
// never kept in the thread.
type BlobReader interface {
	// ReadBlob returns the bytes of the blob ref ("sha256:<hex>") of the
	// request's thread, or an error when the thread holds no such blob.
	ReadBlob(ctx context.Context, ref string) ([]byte, error)
}

// BlobReaderFunc adapts a function to BlobReader.
type BlobReaderFunc func(ctx context.Context, ref string) ([]byte, error)

// ReadBlob implements BlobReader.
func (f BlobReaderFunc) ReadBlob(ctx context.Context, ref string) ([]byte, error) { return f(ctx, ref) }

// Response is the model's answer.
type Response struct {
	// Message is the assistant message: text blocks and tool_call blocks.
	Message message.Message
	// Usage counts tokens where the provider reports them.
	Usage Usage
}

// Usage is token accounting for one call.
type Usage struct {
	// InputTokens counts the whole prompt, the part read from or written
	// to a provider's prompt cache included.
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// CacheCreationInputTokens and CacheReadInputTokens are the part of
	// InputTokens written to and read from the prompt cache, where the
	// provider reports them (Anthropic does; they are billed differently).
	CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
}

// Func adapts a function to ChatModel, for tests and small custom models.
type Func func(ctx context.Context, req Request) (Response, error)

// Generate implements ChatModel.
func (f Func) Generate(ctx context.Context, req Request) (Response, error) { return f(ctx, req) }
