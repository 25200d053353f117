// Package scripted is the scripted model: a deterministic, offline
// model.ChatModel that answers from a script of rules instead of a language
// model. It exists so that a graph — the quickstart, a demo, a test — runs
// with no network, no API key and the same answer every time, while still
// exercising the whole tool path (server tools, remote tools, several calls
// in one step, results quoted back).
//
// It is not a language model and says so: its fallback reply introduces it as
// the scripted model, and String names it "scripted model".
//
// # Script format
//
// A script is a JSON object, decoded strictly (an unknown or duplicate key is
// an error naming its path, such as "rules[2].tool_calls[0].nme"):
//
//	{
//	  "rules": [
//	    {"match": "(?i)background.*\\b(red|blue|green)\\b",
//	     "tool_calls": [{"name": "change_background", "arguments": {"color": "$1"}}],
//	     "then": "Done — the background is now {{arg 0 \"color\"}}.",
//	     "example": "make the background blue"},
//	    {"match": "(?i)\\bhello\\b", "text": "Hello! I am a scripted model."}
//	  ],
//	  "fallback": "I am the scripted demo model. Try: make the background blue."
//	}
//
// Each rule has:
//
//   - match (required): a Go regular expression (RE2 syntax) searched for in
//     the last user message. Rules are tried in order; the first match wins.
//     The model reads text only: a message's images, files and sounds are
//     in its text as stand-ins, such as "[image image/png 64x64]" (see
//     message.Message.TextView), which a rule may match and quote.
//   - text or tool_calls (exactly one): the reply, or the calls to make in one
//     step. A call is {"name", "arguments"}; arguments is a JSON object
//     (default {}) whose string values, at any depth, may use the match's
//     capture groups with regexp.Expand's syntax: $1, ${1}, ${name}, and $$
//     for a literal $; so may text. A reference to a group the pattern does
//     not have is an error at load time. Expanded values are always strings.
//   - then (optional, tool_calls rules only): a text/template for the reply
//     once the results are back. Without it the reply is a plain sentence
//     naming each tool and its result.
//   - example (optional): a message the rule answers. It is checked at load
//     time (it must match this rule and no earlier one) and is listed in the
//     default fallback reply.
//
// fallback (optional) is the reply when no rule matches; the default one says
// this is the scripted model and lists the tools it calls and the examples.
//
// # Templates
//
// A then template may use these functions; N is a call's index in the step
// (0 for the first):
//
//   - result N: the Nth result — its text if the result is a JSON string,
//     otherwise compact JSON.
//   - field N "key": one top-level key of the Nth result (e.g. "text" of
//     {"text": "hi"}), rendered like result; the whole result when the key is
//     absent or the result is not an object.
//   - arg N "key": the Nth call's argument, as sent.
//   - error N: whether the Nth result is an error (for {{if error 0}}).
//   - user: the last user message.
//   - attachments N: the images and files the Nth result came with, as
//     stand-ins ("[image image/png 64x64]"), "" for none.
//   - results: every result as "name: result" ("name failed: …" for an
//     error), with its attachments, joined with "; ".
//
// The usual template actions (if, else, with, printf, eq, …) work; range,
// define, block and template are refused, which keeps every reply's cost
// bounded by the script. Each template is run once at load time on
// placeholder results, so a wrong index or argument name fails Load, not a
// demo.
package scripted

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/tenxgraph/tenxgraph/host/memo"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
)

// Model is a scripted model loaded from a script. Its script is immutable
// once loaded, and what it remembers of threads (the call ids in them) is
// behind a lock, so one Model may serve any number of concurrent runs.
type Model struct {
	// StreamDelay is slept before each streamed chunk when a request has
	// OnDelta, so a playground shows text arriving as from a real model.
	// Zero (the default) streams at once, which keeps tests fast.
	StreamDelay time.Duration

	source   string
	rules    []*rule
	fallback string

	ids *memo.Fold[map[string]bool] // per thread, the call ids in it, to give new calls unused ones
}

var _ model.ChatModel = (*Model)(nil)

// Load reads and compiles the script at path. Every problem in the script is
// reported at once, one per line with its path, so it is fixed in one edit.
func Load(path string) (*Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("scripted model: cannot read the script: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxScriptSize+1))
	if err != nil {
		return nil, fmt.Errorf("scripted model: cannot read the script %s: %w", path, err)
	}
	m, err := newModel(data, path)
	if err != nil {
		return nil, fmt.Errorf("scripted model: the script %s is invalid:\n%w", path, err)
	}
	return m, nil
}

// Parse compiles a script held in memory, for tests and embedded demos. Its
// error lists every problem, one per line, each with its path in the script.
func Parse(data []byte) (*Model, error) {
	return newModel(data, "")
}

func newModel(data []byte, source string) (*Model, error) {
	rules, fallback, err := parseScript(data)
	if err != nil {
		return nil, err
	}
	m := &Model{source: source, rules: rules, ids: newIDMemo()}
	if fallback != nil {
		m.fallback = *fallback
	} else {
		m.fallback = defaultFallback(rules)
	}
	return m, nil
}

// String names the model for logs and startup banners, so nobody mistakes a
// scripted demo for a real model.
func (m *Model) String() string {
	src := "inline script"
	if m.source != "" {
		src = m.source
	}
	n := "rules"
	if len(m.rules) == 1 {
		n = "rule"
	}
	return fmt.Sprintf("scripted model (%s, %d %s)", src, len(m.rules), n)
}

// defaultFallback tells the user what the script can do, derived from the
// rules: the tools it calls and the examples it was given.
func defaultFallback(rules []*rule) string {
	var b strings.Builder
	b.WriteString("I am tenxgraph's scripted model: I answer from a fixed script of rules, not a language model, and no rule matched your message.")
	var tools []string
	seen := map[string]bool{}
	var examples []string
	for _, r := range rules {
		for _, c := range r.calls {
			if !seen[c.name] {
				seen[c.name] = true
				tools = append(tools, c.name)
			}
		}
		if r.example != "" {
			examples = append(examples, fmt.Sprintf("%q", r.example))
		}
	}
	if len(tools) > 0 {
		b.WriteString(" I can call these tools: " + strings.Join(tools, ", ") + ".")
	}
	if len(examples) > 0 {
		b.WriteString(" Try: " + strings.Join(examples, ", ") + ".")
	}
	return b.String()
}

// Generate answers the conversation from the script. After tool results it
// replies with text (a rule's then); otherwise the first rule matching the
// last user message replies with text or tool calls. It never calls tools
// again right after results, so a model-tools loop always ends.
func (m *Model) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	if err := ctx.Err(); err != nil {
		return model.Response{}, err
	}
	content, err := m.answer(req)
	if err != nil {
		return model.Response{}, err
	}
	reply := message.Message{Role: message.RoleAssistant, Content: content}
	if req.OnDelta != nil {
		if err := m.stream(ctx, reply.Text(), req.OnDelta); err != nil {
			return model.Response{}, err
		}
	}
	return model.Response{Message: reply, Usage: usage(req, reply)}, nil
}

func (m *Model) answer(req model.Request) ([]message.Block, error) {
	msgs := req.Messages
	user := lastUserText(msgs)
	if n := len(msgs); n > 0 && msgs[n-1].Role == message.RoleTool {
		text, err := m.afterResults(msgs, user)
		if err != nil {
			return nil, err
		}
		return []message.Block{message.TextBlock{Text: text}}, nil
	}

	r, match := m.match(user)
	switch {
	case r == nil:
		return []message.Block{message.TextBlock{Text: m.fallback}}, nil
	case r.calls == nil:
		return []message.Block{message.TextBlock{Text: string(r.re.ExpandString(nil, r.text, user, match))}}, nil
	}

	offered := map[string]bool{}
	for _, t := range req.Tools {
		offered[t.Name] = true
	}
	var missing []string
	for _, c := range r.calls {
		if !offered[c.name] && !contains(missing, c.name) {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		return []message.Block{message.TextBlock{Text: missingTools(r, missing, req)}}, nil
	}

	ids := callIDs(m.ids, req.ThreadID, msgs, len(r.calls))
	blocks := make([]message.Block, len(r.calls))
	for i, c := range r.calls {
		args := expand(c.args, r.re, user, match).(map[string]any)
		blocks[i] = message.ToolCallBlock{ID: ids[i], Name: c.name, Arguments: encodeArgs(args)}
	}
	return blocks, nil
}

// afterResults replies to the tool message that ends msgs with the then of
// the rule that made the calls. The rule is found again by matching the
// user's message; if the script no longer makes those calls (it was edited,
// or another model made them), the default sentence reports the results.
func (m *Model) afterResults(msgs []message.Message, user string) (string, error) {
	s := stepOf(msgs, user)
	r, _ := m.match(user)
	if r == nil || r.then == nil || !sameCalls(r.calls, s.calls) {
		return defaultThen(s), nil
	}
	text, err := execThen(r.then, s)
	if err != nil {
		return "", fmt.Errorf("scripted model: rules[%d].then failed on these results: %v", r.index, err)
	}
	return text, nil
}

func (m *Model) match(text string) (*rule, []int) {
	for _, r := range m.rules {
		if loc := r.re.FindStringSubmatchIndex(text); loc != nil {
			return r, loc
		}
	}
	return nil, nil
}

// stepOf pairs the calls of the assistant message before the final tool
// message with their results, by id. A call without a result gets an error
// result, as message.ForModel would give it.
func stepOf(msgs []message.Message, user string) *step {
	n := len(msgs)
	results := msgs[n-1].ToolResults()
	byID := make(map[string]message.ToolResultBlock, len(results))
	for _, r := range results {
		if _, dup := byID[r.ToolCallID]; !dup {
			byID[r.ToolCallID] = r
		}
	}
	s := &step{user: user}
	if n >= 2 && msgs[n-2].Role == message.RoleAssistant {
		s.calls = msgs[n-2].ToolCalls()
	}
	if len(s.calls) == 0 {
		// No calls to pair with: report the results under the tool names
		// found anywhere in the thread.
		names := map[string]string{}
		for _, m := range msgs {
			for _, c := range m.ToolCalls() {
				names[c.ID] = c.Name
			}
		}
		for _, r := range results {
			name := names[r.ToolCallID]
			if name == "" {
				name = "a tool"
			}
			s.calls = append(s.calls, message.ToolCallBlock{ID: r.ToolCallID, Name: name})
		}
	}
	for _, c := range s.calls {
		r, ok := byID[c.ID]
		if !ok {
			r = message.ToolResultBlock{ToolCallID: c.ID, Content: []byte(`"no result: this tool call was never answered"`), IsError: true}
		}
		s.results = append(s.results, r)
	}
	return s
}

func sameCalls(spec []callSpec, calls []message.ToolCallBlock) bool {
	if len(spec) != len(calls) {
		return false
	}
	for i := range spec {
		if spec[i].name != calls[i].Name {
			return false
		}
	}
	return true
}

func lastUserText(msgs []message.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == message.RoleUser {
			return msgs[i].TextView()
		}
	}
	return ""
}

// missingTools is the reply when the script wants a tool the step does not
// offer: a misconfigured demo explains itself instead of failing later.
func missingTools(r *rule, missing []string, req model.Request) string {
	var offered []string
	for _, t := range req.Tools {
		offered = append(offered, t.Name)
	}
	have := "No tools are offered in this step."
	if len(offered) > 0 {
		have = "The tools offered are: " + strings.Join(offered, ", ") + "."
	}
	what := "the tool " + missing[0]
	verb := "it"
	if len(missing) > 1 {
		what = "the tools " + strings.Join(missing, ", ")
		verb = "them"
	}
	return fmt.Sprintf("I am the scripted model, and my script (rules[%d]) answers this by calling %s, but this step does not offer %s. %s "+
		"Add %s to the graph's tools (builtin_tools, remote_tools, a plugin or an MCP server), or change the script.",
		r.index, what, verb, have, verb)
}

// newIDMemo keeps, per thread, the ids of the calls and results in it, so
// that choosing a new call's id costs what the thread gained since the
// last call rather than its length.
func newIDMemo() *memo.Fold[map[string]bool] {
	return &memo.Fold[map[string]bool]{
		New: func() map[string]bool { return map[string]bool{} },
		Add: func(ids map[string]bool, m message.Message) {
			for _, b := range m.Content {
				switch b := b.(type) {
				case message.ToolCallBlock:
					ids[b.ID] = true
				case message.RemoteToolCallBlock:
					ids[b.ID] = true
				case message.ToolResultBlock:
					ids[b.ToolCallID] = true
				}
			}
		},
	}
}

// callIDs returns the ids of a step's n calls on msgs: call_<k>_<i>, where
// k is the number of messages the model was given and i the call's index
// in the step. k grows with every step of a thread, so ids are unique in it
// and the same thread always gets the same ids. An id already used in the
// thread (an edited history) gets a suffix.
func callIDs(memo *memo.Fold[map[string]bool], thread string, msgs []message.Message, n int) []string {
	out := make([]string, n)
	memo.With(thread, msgs, func(used map[string]bool) {
		for i := range out {
			id := fmt.Sprintf("call_%d_%d", len(msgs), i)
			for j := 2; used[id] || slices.Contains(out[:i], id); j++ {
				id = fmt.Sprintf("call_%d_%d_%d", len(msgs), i, j)
			}
			out[i] = id
		}
	})
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// stream sends text to onDelta in word-sized chunks (each word with the
// space after it), the way a streaming model would, stopping if ctx ends.
func (m *Model) stream(ctx context.Context, text string, onDelta func(string)) error {
	for _, chunk := range chunks(text) {
		if m.StreamDelay > 0 {
			t := time.NewTimer(m.StreamDelay)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		} else if err := ctx.Err(); err != nil {
			return err
		}
		onDelta(chunk)
	}
	return nil
}

// chunks splits s into pieces that concatenate back to s: leading space with
// the first word, then each word with the space that follows it.
func chunks(s string) []string {
	var out []string
	start, inWord, sawWord := 0, false, false
	for i, r := range s {
		space := unicode.IsSpace(r)
		if !space && !inWord && sawWord {
			out = append(out, s[start:i])
			start = i
		}
		inWord = !space
		sawWord = sawWord || !space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// usage estimates token counts. Words are runs of letters and digits; the
// output counts the reply's words (its text, tool calls' names and
// arguments). The input counts the words of the messages since the
// model's last reply (the user's message or the tool results the model
// answers) and of the offered tools' names, descriptions and schemas, plus
// historyTokens for each message before that: reading the earlier history
// would make a call on a long thread cost more than one on a short thread.
// Real tokenizers give roughly 1.3 tokens per English word, so these are
// rough on purpose: they let usage reporting be exercised offline, nothing
// more.
func usage(req model.Request, reply message.Message) model.Usage {
	start := 0
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == message.RoleAssistant {
			start = i + 1
			break
		}
	}
	in := historyTokens * start
	for _, m := range req.Messages[start:] {
		in += messageWords(m)
	}
	for _, t := range req.Tools {
		in += words(t.Name) + words(t.Description) + words(string(t.Parameters))
	}
	return model.Usage{InputTokens: in, OutputTokens: messageWords(reply)}
}

// historyTokens is what usage counts for each message of the earlier
// history: about a short sentence.
const historyTokens = 10

func messageWords(m message.Message) int {
	n := 0
	for _, b := range m.Content {
		switch b := b.(type) {
		case message.TextBlock:
			n += words(b.Text)
		case message.ToolCallBlock:
			n += words(b.Name) + words(string(b.Arguments))
		case message.ToolResultBlock:
			n += words(string(b.Content)) + words(message.DescribeAll(b.Attachments))
		case message.MediaBlock:
			n += words(b.Describe())
		case message.RemoteToolCallBlock:
			n += words(b.Name) + words(string(b.Arguments))
		}
	}
	return n
}

func words(s string) int {
	n, in := 0, false
	for _, r := range s {
		w := unicode.IsLetter(r) || unicode.IsDigit(r)
		if w && !in {
			n++
		}
		in = w
	}
	return n
}
