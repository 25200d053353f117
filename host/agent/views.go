package agent

import (
	"sync"

	"github.com/tenxgraph/tenxgraph/host/memo"
	"github.com/tenxgraph/tenxgraph/host/message"
)

// views keeps, per thread, the model's view of the thread (message.ModelView),
// so that each model call of a long thread costs what the thread gained
// since the last one. A thread deleted and re-created has other messages,
// which a view recognises and rewrites from scratch. Beyond the memo's
// bounds the least recently used thread's view is dropped (its next model
// call rewrites the whole thread once); a view shares its messages with
// the thread's state, but keeps them alive after the thread cache lets
// them go, hence the bound in bytes.
type views = memo.PerThread[view]

type view struct {
	v message.ModelView

	mu sync.Mutex
	// withPrompt is the system prompt followed by base, the output of v it
	// was built from; it grows with v's output instead of being copied.
	prompt     string
	base       []message.Message
	withPrompt []message.Message
}

// history is what the model is sent: message.ForModel(msgs), after the
// system prompt when there is one.
func (v *view) history(msgs []message.Message, prompt string) []message.Message {
	out := v.v.ForModel(msgs)
	if prompt == "" {
		return out
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	// The view only appends to an output it handed out, so an output in
	// the same array and no shorter begins with base.
	if v.prompt != prompt || len(v.base) == 0 || len(out) < len(v.base) || &out[0] != &v.base[0] {
		v.prompt, v.base = prompt, nil
		v.withPrompt = append(make([]message.Message, 0, 1+len(out)+len(out)/2), message.Text(message.RoleSystem, prompt))
	}
	v.withPrompt = append(v.withPrompt, out[len(v.base):]...)
	v.base = out
	return v.withPrompt[:len(v.withPrompt):len(v.withPrompt)]
}
