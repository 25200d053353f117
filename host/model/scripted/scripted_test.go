package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// briefScript is the example script from the design brief, verbatim apart
// from the elided texts.
const briefScript = `{
  "rules": [
    {"match": "(?i)background.*\\b(red|blue|green|black|white|yellow|purple|orange|pink)\\b",
     "tool_calls": [{"name": "change_background", "arguments": {"color": "$1"}}],
     "then": "Done — the background is now {{arg 0 \"color\"}}. The page said: {{result 0}}"},
    {"match": "(?i)clipboard", "tool_calls": [{"name": "read_clipboard", "arguments": {}}],
     "then": "Your clipboard holds: {{result 0}}"},
    {"match": "(?i)hello|hi\\b", "text": "Hello! I am a scripted model."}
  ],
  "fallback": "I am tenxgraph's scripted demo model. I can change the background and read your clipboard."
}`

var allTools = tools("change_background", "read_clipboard", "calculator", "current_time")

func tools(names ...string) []sdk.ToolSpec {
	out := make([]sdk.ToolSpec, len(names))
	for i, n := range names {
		out[i] = sdk.ToolSpec{Name: n, Description: "the " + n + " tool", Parameters: sdk.EmptyObjectSchema}
	}
	return out
}

func load(t *testing.T) *Model {
	t.Helper()
	m, err := Load("testdata/demo.json")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustParse(t *testing.T, script string) *Model {
	t.Helper()
	m, err := Parse([]byte(script))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return m
}

// thread drives a model the way a model⇄tools loop does.
type thread struct {
	t     *testing.T
	m     *Model
	tools []sdk.ToolSpec
	msgs  []message.Message
}

func (th *thread) generate() message.Message {
	th.t.Helper()
	resp, err := th.m.Generate(context.Background(), model.Request{Messages: th.msgs, Tools: th.tools, ThreadID: "t1"})
	if err != nil {
		th.t.Fatalf("Generate: %v", err)
	}
	if resp.Message.Role != message.RoleAssistant {
		th.t.Fatalf("reply role %q, want assistant", resp.Message.Role)
	}
	th.msgs = append(th.msgs, resp.Message)
	return resp.Message
}

func (th *thread) say(text string) message.Message {
	th.t.Helper()
	th.msgs = append(th.msgs, message.Text(message.RoleUser, text))
	return th.generate()
}

// answer sends one result per call of the last reply, in call order, then
// asks the model again.
func (th *thread) answer(results ...message.ToolResultBlock) message.Message {
	th.t.Helper()
	calls := th.msgs[len(th.msgs)-1].ToolCalls()
	if len(calls) != len(results) {
		th.t.Fatalf("%d calls, %d results", len(calls), len(results))
	}
	blocks := make([]message.Block, len(results))
	for i, r := range results {
		r.ToolCallID = calls[i].ID
		blocks[i] = r
	}
	th.msgs = append(th.msgs, message.Message{Role: message.RoleTool, Content: blocks})
	return th.generate()
}

func ok(content string) message.ToolResultBlock {
	return message.ToolResultBlock{Content: json.RawMessage(content)}
}

func failed(content string) message.ToolResultBlock {
	return message.ToolResultBlock{Content: json.RawMessage(content), IsError: true}
}

func wantCalls(t *testing.T, msg message.Message, want ...string) {
	t.Helper()
	calls := msg.ToolCalls()
	var got []string
	for _, c := range calls {
		got = append(got, fmt.Sprintf("%s %s %s", c.ID, c.Name, c.Arguments))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if msg.Text() != "" {
		t.Errorf("a tool-calling reply also has text %q", msg.Text())
	}
}

func wantText(t *testing.T, msg message.Message, want string) {
	t.Helper()
	if len(msg.ToolCalls()) != 0 {
		t.Fatalf("reply calls tools %v, want text %q", msg.ToolCalls(), want)
	}
	if got := msg.Text(); got != want {
		t.Fatalf("reply:\n%s\nwant:\n%s", got, want)
	}
}

func TestBriefScript(t *testing.T) {
	th := &thread{t: t, m: mustParse(t, briefScript), tools: allTools}
	wantCalls(t, th.say("Make the BACKGROUND green please"), `call_1_0 change_background {"color":"green"}`)
	wantText(t, th.answer(ok(`{"ok":true,"color":"green"}`)), `Done — the background is now green. The page said: {"ok":true,"color":"green"}`)

	wantCalls(t, th.say("what's on my clipboard?"), `call_5_0 read_clipboard {}`)
	wantText(t, th.answer(ok(`"grocery list"`)), `Your clipboard holds: grocery list`)

	wantText(t, th.say("hello there"), "Hello! I am a scripted model.")
	wantText(t, th.say("sing me a song"), "I am tenxgraph's scripted demo model. I can change the background and read your clipboard.")
}

func TestBackgroundCaptureGroups(t *testing.T) {
	th := &thread{t: t, m: load(t), tools: allTools}
	// Numbered and named groups, nested objects and arrays, $$ for a literal
	// dollar, and a non-string (3) left alone.
	wantCalls(t, th.say("make the background blue"),
		`call_1_0 change_background {"color":"blue","style":{"css":"background: blue","n":3,"tags":["blue","$1","plain"]}}`)
	wantText(t, th.answer(ok(`{"ok":true}`)), `Done — the background is now blue. The page said: {"ok":true}`)
}

func TestCalculator(t *testing.T) {
	th := &thread{t: t, m: load(t), tools: allTools}
	wantCalls(t, th.say("what is 2+3*4"), `call_1_0 calculator {"expression":"2+3*4"}`)
	// No then: the default sentence quotes the result.
	wantText(t, th.answer(ok(`{"expression":"2+3*4","result":14}`)),
		`I called calculator, which returned {"expression":"2+3*4","result":14}.`)
	wantCalls(t, th.say("and what is 10 / (4 - 2)?"), `call_5_0 calculator {"expression":"10 / (4 - 2)"}`)
	wantText(t, th.answer(failed(`"cannot evaluate"`)), `I called calculator, which failed with cannot evaluate.`)
}

func TestMixedStep(t *testing.T) {
	th := &thread{t: t, m: load(t), tools: allTools}
	wantCalls(t, th.say("what is 6*7 and what is on my clipboard"),
		`call_1_0 calculator {"expression":"6*7"}`,
		`call_1_1 read_clipboard {}`)
	wantText(t, th.answer(ok(`{"expression":"6*7","result":42}`), ok(`{"text":"hi there"}`)),
		`6*7 = 42. Your clipboard holds: hi there`)

	wantCalls(t, th.say("what is 1+1, and my clipboard?"),
		`call_5_0 calculator {"expression":"1+1"}`,
		`call_5_1 read_clipboard {}`)
	wantText(t, th.answer(ok(`{"expression":"1+1","result":2}`), failed(`"the user denied clipboard access"`)),
		`1+1 = 2. I could not read your clipboard: the user denied clipboard access`)
}

func TestResultsFunction(t *testing.T) {
	th := &thread{t: t, m: load(t), tools: allTools}
	wantCalls(t, th.say("what time in Tokyo"), `call_1_0 current_time {"timezone":"Asia/Tokyo"}`)
	wantText(t, th.answer(ok(`{"time":"2025-01-01T09:00:00+09:00"}`)), `current_time: {"time":"2025-01-01T09:00:00+09:00"}`)
}

func TestIDsUniqueAcrossAThread(t *testing.T) {
	th := &thread{t: t, m: load(t), tools: allTools}
	seen := map[string]bool{}
	for range 5 {
		reply := th.say("what is 6*7 and what is on my clipboard")
		for _, c := range reply.ToolCalls() {
			if seen[c.ID] {
				t.Fatalf("id %s reused", c.ID)
			}
			seen[c.ID] = true
		}
		th.answer(ok(`1`), ok(`"x"`))
	}
	if len(seen) != 10 {
		t.Fatalf("%d ids, want 10", len(seen))
	}

	// An edited history that already holds call_1_0 gets a suffixed id.
	msgs := []message.Message{
		{Role: message.RoleAssistant, Content: []message.Block{message.ToolCallBlock{ID: "call_1_0", Name: "calculator"}}},
	}
	msgs = append(msgs[:1], message.Text(message.RoleUser, "what is 1+2"))
	resp, err := load(t).Generate(context.Background(), model.Request{Messages: msgs, Tools: allTools})
	if err != nil {
		t.Fatal(err)
	}
	if id := resp.Message.ToolCalls()[0].ID; id != "call_2_0" {
		t.Fatalf("id %s, want call_2_0", id)
	}
	msgs = []message.Message{
		{Role: message.RoleAssistant, Content: []message.Block{message.ToolCallBlock{ID: "call_2_0", Name: "calculator"}}},
		message.Text(message.RoleUser, "what is 1+2"),
	}
	resp, _ = load(t).Generate(context.Background(), model.Request{Messages: msgs, Tools: allTools})
	if id := resp.Message.ToolCalls()[0].ID; id != "call_2_0_2" {
		t.Fatalf("id %s, want call_2_0_2", id)
	}
}

// One model on one thread id: the ids it remembers follow the thread as it
// grows, and a thread re-created under the same id is read again, so a new
// call never takes an id the thread holds, in a call, a remote call or a
// result.
func TestCallIDsFollowTheThread(t *testing.T) {
	m := load(t)
	ask := func(msgs []message.Message) string {
		t.Helper()
		resp, err := m.Generate(context.Background(), model.Request{ThreadID: "t", Messages: msgs, Tools: allTools})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Message.ToolCalls()[0].ID
	}
	q := message.Text(message.RoleUser, "what is 1+2")
	if id := ask([]message.Message{q}); id != "call_1_0" {
		t.Fatalf("id %s, want call_1_0", id)
	}
	// Grown by messages that hold the next id, in a remote call.
	grown := []message.Message{q,
		{Role: message.RoleTool, Content: []message.Block{message.RemoteToolCallBlock{ID: "call_3_0", Name: "x", Node: "tools"}}},
		q}
	if id := ask(grown); id != "call_3_0_2" {
		t.Fatalf("id %s, want call_3_0_2", id)
	}
	// Re-created: other messages, one result holding call_2_0.
	again := []message.Message{
		{Role: message.RoleTool, Content: []message.Block{message.ToolResultBlock{ToolCallID: "call_2_0"}}},
		message.Text(message.RoleUser, "what is 1+2"),
	}
	if id := ask(again); id != "call_2_0_2" {
		t.Fatalf("re-created thread: id %s, want call_2_0_2", id)
	}
	// And the first thread's ids are forgotten.
	if id := ask([]message.Message{message.Text(message.RoleUser, "what is 1+2"), q, q}); id != "call_3_0" {
		t.Fatalf("id %s, want call_3_0", id)
	}
}

func TestDeterministic(t *testing.T) {
	a := &thread{t: t, m: load(t), tools: allTools}
	b := &thread{t: t, m: load(t), tools: allTools}
	for _, text := range []string{"make the background pink", "what is 2+2", "hello"} {
		ra, rb := a.say(text), b.say(text)
		ja, _ := json.Marshal(ra)
		jb, _ := json.Marshal(rb)
		if string(ja) != string(jb) {
			t.Fatalf("%q: %s vs %s", text, ja, jb)
		}
		if len(ra.ToolCalls()) > 0 {
			a.answer(ok(`true`))
			b.answer(ok(`true`))
		}
	}
}

func TestFallback(t *testing.T) {
	th := &thread{t: t, m: load(t), tools: allTools}
	got := th.say("sing me a song").Text()
	for _, want := range []string{
		"scripted model",
		"I can call these tools: change_background, calculator, read_clipboard, current_time.",
		`Try: "make the background blue", "what is 6*7 and what is on my clipboard", "what is on my clipboard", "what is 2+3*4", "hello".`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("fallback %q lacks %q", got, want)
		}
	}
	// No user message at all: still the fallback, not a failure.
	resp, err := load(t).Generate(context.Background(), model.Request{})
	if err != nil || !strings.Contains(resp.Message.Text(), "scripted model") {
		t.Fatalf("empty request: %q, %v", resp.Message.Text(), err)
	}
	// A script with text rules only still introduces itself.
	m := mustParse(t, `{"rules": [{"match": "x", "text": "y"}]}`)
	if !strings.HasPrefix(m.fallback, "I am tenxgraph's scripted model") {
		t.Errorf("fallback %q", m.fallback)
	}
}

func TestMissingTool(t *testing.T) {
	th := &thread{t: t, m: load(t), tools: tools("calculator", "current_time")}
	got := th.say("make the background red").Text()
	for _, want := range []string{"scripted model", "rules[0]", "the tool change_background", "The tools offered are: calculator, current_time."} {
		if !strings.Contains(got, want) {
			t.Errorf("missing-tool reply %q lacks %q", got, want)
		}
	}
	th = &thread{t: t, m: load(t)}
	got = th.say("what is 3*3 and my clipboard").Text()
	for _, want := range []string{"the tools calculator, read_clipboard", "No tools are offered in this step."} {
		if !strings.Contains(got, want) {
			t.Errorf("missing-tools reply %q lacks %q", got, want)
		}
	}
}

func TestNeverCallsAgainAfterResults(t *testing.T) {
	// The tool message comes back for calls this script did not make (another
	// model, or the script changed): the reply is still text, never a new
	// call, so the loop ends.
	msgs := []message.Message{
		message.Text(message.RoleUser, "make the background blue"),
		{Role: message.RoleAssistant, Content: []message.Block{message.ToolCallBlock{ID: "x1", Name: "paint", Arguments: json.RawMessage(`{}`)}}},
		{Role: message.RoleTool, Content: []message.Block{message.ToolResultBlock{ToolCallID: "x1", Content: json.RawMessage(`"painted"`)}}},
	}
	resp, err := load(t).Generate(context.Background(), model.Request{Messages: msgs, Tools: allTools})
	if err != nil {
		t.Fatal(err)
	}
	wantText(t, resp.Message, "I called paint, which returned painted.")

	// A tool message with no calls before it.
	msgs = []message.Message{
		message.Text(message.RoleUser, "hello"),
		{Role: message.RoleTool, Content: []message.Block{message.ToolResultBlock{ToolCallID: "x9", Content: json.RawMessage(`1`)}}},
	}
	resp, err = load(t).Generate(context.Background(), model.Request{Messages: msgs, Tools: allTools})
	if err != nil {
		t.Fatal(err)
	}
	wantText(t, resp.Message, "I called a tool, which returned 1.")
}

func TestStreaming(t *testing.T) {
	m := load(t)
	for _, text := range []string{"hello", "sing me a song"} {
		var deltas []string
		resp, err := m.Generate(context.Background(), model.Request{
			Messages: []message.Message{message.Text(message.RoleUser, text)},
			OnDelta:  func(d string) { deltas = append(deltas, d) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(deltas, ""); got != resp.Message.Text() {
			t.Fatalf("deltas %q join to %q, want %q", deltas, got, resp.Message.Text())
		}
		if len(deltas) < 5 {
			t.Errorf("only %d deltas for %q", len(deltas), resp.Message.Text())
		}
		for _, d := range deltas {
			if strings.TrimSpace(d) == "" || strings.Contains(strings.TrimSpace(d), " ") {
				t.Errorf("delta %q is not one word", d)
			}
		}
	}
	// Streaming the text after tool results too.
	th := &thread{t: t, m: m, tools: allTools}
	th.say("read my clipboard")
	var deltas []string
	th.msgs = append(th.msgs, message.Message{Role: message.RoleTool, Content: []message.Block{message.ToolResultBlock{ToolCallID: "call_1_0", Content: json.RawMessage(`"a b c"`)}}})
	resp, err := m.Generate(context.Background(), model.Request{Messages: th.msgs, Tools: allTools, OnDelta: func(d string) { deltas = append(deltas, d) }})
	if err != nil || strings.Join(deltas, "") != "Your clipboard holds: a b c" || resp.Message.Text() != "Your clipboard holds: a b c" {
		t.Fatalf("deltas %q, reply %q, %v", deltas, resp.Message.Text(), err)
	}
}

func TestChunks(t *testing.T) {
	for _, s := range []string{"", " ", "a", "  lead", "trail  ", "a  b\n\nc", "héllo wörld — ok", "\t"} {
		got := chunks(s)
		if strings.Join(got, "") != s {
			t.Errorf("chunks(%q) = %q", s, got)
		}
	}
	if got := chunks("  one two  three "); strings.Join(got, "|") != "  one |two  |three " {
		t.Errorf("chunks = %q", got)
	}
}

func TestCancellation(t *testing.T) {
	m := load(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Generate(ctx, model.Request{Messages: []message.Message{message.Text(message.RoleUser, "hello")}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before: %v", err)
	}

	m.StreamDelay = 20 * time.Millisecond
	ctx, cancel = context.WithCancel(context.Background())
	var n int
	start := time.Now()
	_, err = m.Generate(ctx, model.Request{
		Messages: []message.Message{message.Text(message.RoleUser, "sing me a song")},
		OnDelta: func(string) {
			n++
			if n == 2 {
				cancel()
			}
		},
	})
	if !errors.Is(err, context.Canceled) || n != 2 {
		t.Fatalf("cancelled mid-stream: err %v after %d deltas", err, n)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("cancellation did not stop the stream promptly")
	}
}

func TestUsage(t *testing.T) {
	m := load(t)
	resp, err := m.Generate(context.Background(), model.Request{
		Messages: []message.Message{message.Text(message.RoleUser, "what is 2+3*4")},
		Tools:    tools("calculator"),
	})
	if err != nil {
		t.Fatal(err)
	}
	// "what is 2+3*4": what, is, 2, 3, 4; the tool: calculator, the,
	// calculator, tool, type, object, properties.
	if resp.Usage.InputTokens != 12 {
		t.Errorf("input %d, want 12", resp.Usage.InputTokens)
	}
	// calculator + {"expression":"2+3*4"}: calculator, expression, 2, 3, 4.
	if resp.Usage.OutputTokens != 5 {
		t.Errorf("output %d, want 5", resp.Usage.OutputTokens)
	}
}

// On a longer thread, each message before the model's last reply counts
// historyTokens; what came after it counts words, as in TestUsage.
func TestUsageOfHistory(t *testing.T) {
	m := load(t)
	msgs := []message.Message{
		message.Text(message.RoleUser, "hello there"),
		{Role: message.RoleAssistant, Content: []message.Block{
			message.TextBlock{Text: "hi"},
			message.ToolCallBlock{ID: "c", Name: "calculator", Arguments: []byte(`{"a":1}`)},
		}},
		{Role: message.RoleTool, Content: []message.Block{message.ToolResultBlock{ToolCallID: "c", Content: []byte(`"done"`)}}},
		message.Text(message.RoleUser, "what is 2+3*4"),
	}
	resp, err := m.Generate(context.Background(), model.Request{Messages: msgs, Tools: tools("calculator")})
	if err != nil {
		t.Fatal(err)
	}
	// Two messages of history; then done, what, is, 2, 3, 4 and the
	// tool's 7 words.
	if want := 2*historyTokens + 6 + 7; resp.Usage.InputTokens != want {
		t.Errorf("input %d, want %d", resp.Usage.InputTokens, want)
	}
}

func TestConcurrentUse(t *testing.T) {
	m := load(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			th := &thread{t: t, m: m, tools: allTools}
			th.say(fmt.Sprintf("what is %d*7 and what is on my clipboard", i))
			th.answer(ok(`{"result":1}`), ok(`{"text":"x"}`))
		}()
	}
	wg.Wait()
}

func TestLoad(t *testing.T) {
	m := load(t)
	if got := m.String(); got != "scripted model (testdata/demo.json, 6 rules)" {
		t.Errorf("String() = %q", got)
	}
	if got := mustParse(t, `{"rules":[{"match":"a","text":"b"}]}`).String(); got != "scripted model (inline script, 1 rule)" {
		t.Errorf("String() = %q", got)
	}
	_, err := Load("testdata/nope.json")
	if err == nil || !strings.Contains(err.Error(), "testdata/nope.json") || !strings.Contains(err.Error(), "scripted model") {
		t.Errorf("missing file: %v", err)
	}
	dir := t.TempDir()
	bad := dir + "/bad.json"
	writeFile(t, bad, `{"rules": [{"match": "(", "text": "x"}], "extra": 1}`)
	_, err = Load(bad)
	if err == nil {
		t.Fatal("bad script loaded")
	}
	for _, want := range []string{bad, "rules[0].match: invalid regular expression (rule 0)", "extra: unknown key (allowed: rules, fallback)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestScriptErrors(t *testing.T) {
	cases := []struct {
		name, script string
		want         []string
	}{
		{"not JSON", `{"rules": [}`, []string{"invalid JSON at line 1, column 12"}},
		{"syntax on line 3", "{\n \"rules\": [\n  {\"match\" \"x\"}]}", []string{"invalid JSON at line 3, column"}},
		{"empty", ``, []string{"the script is empty or cut short"}},
		{"cut short", `{"rules": [`, []string{"the script is empty or cut short"}},
		{"trailing data", `{"rules": [{"match": "a", "text": "b"}]} {}`, []string{"unexpected data after the JSON object at line 1, column 42"}},
		{"not an object", `[1]`, []string{"want an object, got an array"}},
		{"no rules", `{}`, []string{`rules: missing: a script needs a "rules" list`}},
		{"zero rules", `{"rules": []}`, []string{"rules: empty: add at least one rule"}},
		{"rules not a list", `{"rules": {}}`, []string{"rules: want an array, got an object"}},
		{"rule not an object", `{"rules": ["x"]}`, []string{"rules[0]: want an object, got a string"}},
		{"unknown top key", `{"rules": [{"match": "a", "text": "b"}], "fallbak": "x"}`, []string{"fallbak: unknown key (allowed: rules, fallback)"}},
		{"unknown rule key", `{"rules": [{"match": "a", "text": "b"}, {"match": "a", "txt": "b"}]}`,
			[]string{"rules[1].txt: unknown key (allowed: match, text, tool_calls, then, example)", `rules[1]: needs "text" (a reply) or "tool_calls"`}},
		{"unknown call key", `{"rules": [{"match": "a", "tool_calls": [{"name": "t", "args": {}}]}]}`,
			[]string{"rules[0].tool_calls[0].args: unknown key (allowed: name, arguments)"}},
		{"duplicate key", `{"rules": [{"match": "a", "match": "b", "text": "c"}]}`, []string{"rules[0].match: duplicate key"}},
		{"bad regex", `{"rules": [{"match": "ok", "text": "a"}, {"match": "(?i)back(ground", "text": "b"}]}`,
			[]string{"rules[1].match: invalid regular expression (rule 1): error parsing regexp: missing closing )"}},
		{"missing match", `{"rules": [{"text": "a"}]}`, []string{`rules[0]: missing "match"`}},
		{"empty match", `{"rules": [{"match": "", "text": "a"}]}`, []string{"rules[0].match: empty"}},
		{"match not a string", `{"rules": [{"match": 5, "text": "a"}]}`, []string{"rules[0].match: want a string, got a number"}},
		{"both text and tool_calls", `{"rules": [{"match": "a", "text": "b", "tool_calls": [{"name": "t"}]}]}`,
			[]string{`rules[0]: has both "text" and "tool_calls"`}},
		{"neither", `{"rules": [{"match": "a"}]}`, []string{`rules[0]: needs "text" (a reply) or "tool_calls" (calls to make)`}},
		{"empty text", `{"rules": [{"match": "a", "text": " "}]}`, []string{"rules[0].text: empty"}},
		{"empty tool_calls", `{"rules": [{"match": "a", "tool_calls": []}]}`, []string{"rules[0].tool_calls: empty"}},
		{"call without name", `{"rules": [{"match": "a", "tool_calls": [{"arguments": {}}]}]}`, []string{`rules[0].tool_calls[0]: missing "name"`}},
		{"bad tool name", `{"rules": [{"match": "a", "tool_calls": [{"name": "read clipboard"}]}]}`,
			[]string{`rules[0].tool_calls[0].name: "read clipboard" is not a valid tool name`}},
		{"arguments not an object", `{"rules": [{"match": "a", "tool_calls": [{"name": "t", "arguments": [1]}]}]}`,
			[]string{"rules[0].tool_calls[0].arguments: want an object (tool arguments are always a JSON object), got an array"}},
		{"missing group", `{"rules": [{"match": "(a)", "tool_calls": [{"name": "t", "arguments": {"x": {"y": ["$2"]}}}]}]}`,
			[]string{"rules[0].tool_calls[0].arguments.x.y[0]: $2 refers to a capture group the pattern does not have (it has only $1); write $$ for a literal $"}},
		{"missing named group", `{"rules": [{"match": "(?P<color>a)", "tool_calls": [{"name": "t", "arguments": {"x": "${colour}"}}]}]}`,
			[]string{"$colour refers to a capture group the pattern does not have (it has only $1, named color)"}},
		{"ambiguous reference", `{"rules": [{"match": "(a)", "tool_calls": [{"name": "t", "arguments": {"x": "$1px"}}]}]}`,
			[]string{"$1px refers to a capture group the pattern does not have (it has only $1); write ${1}px to put \"px\" right after $1"}},
		{"then on a text rule", `{"rules": [{"match": "a", "text": "b", "then": "c"}]}`, []string{`rules[0].then: only a "tool_calls" rule has "then"`}},
		{"then syntax", `{"rules": [{"match": "a", "tool_calls": [{"name": "t"}], "then": "x\n{{result 0"}]}`,
			[]string{"rules[0].then: invalid template: line 2: unclosed action"}},
		{"then unknown function", `{"rules": [{"match": "a", "tool_calls": [{"name": "t"}], "then": "{{reslt 0}}"}]}`,
			[]string{`rules[0].then: invalid template: line 1: function "reslt" not defined`}},
		{"then index out of range", `{"rules": [{"match": "a", "tool_calls": [{"name": "t"}], "then": "ok {{result 1}}"}]}`,
			[]string{"rules[0].then: line 1, column 5: at <result 1>: result 1: this step made 1 tool call, so the index must be 0"}},
		{"then index out of range, two calls", `{"rules": [{"match": "a", "tool_calls": [{"name": "t"}, {"name": "u"}], "then": "{{error 2}}"}]}`,
			[]string{"error 2: this step made 2 tool calls; use an index from 0 to 1"}},
		{"then unknown argument", `{"rules": [{"match": "(red)", "tool_calls": [{"name": "paint", "arguments": {"color": "$1"}}], "then": "{{arg 0 \"colour\"}}"}]}`,
			[]string{`arg 0 "colour": the call to paint has no argument "colour" (its arguments: color)`}},
		{"then range", `{"rules": [{"match": "a", "tool_calls": [{"name": "t"}], "then": "{{range 1000000000}}x{{end}}"}]}`,
			[]string{"rules[0].then: {{range}} is not supported"}},
		{"then nested range", `{"rules": [{"match": "a", "tool_calls": [{"name": "t"}], "then": "{{if true}}{{with 1}}{{range 3}}{{end}}{{end}}{{end}}"}]}`,
			[]string{"{{range}} is not supported"}},
		{"then define", `{"rules": [{"match": "a", "tool_calls": [{"name": "t"}], "then": "{{define \"x\"}}y{{end}}{{template \"x\"}}"}]}`,
			[]string{"{{define}} and {{block}} are not supported"}},
		{"empty fallback", `{"rules": [{"match": "a", "text": "b"}], "fallback": ""}`, []string{"fallback: empty"}},
		{"example not matching", `{"rules": [{"match": "(?i)hello", "text": "b", "example": "goodbye"}]}`,
			[]string{`rules[0].example: "goodbye" does not match this rule's pattern "(?i)hello"`}},
		{"example shadowed", `{"rules": [{"match": "clip", "text": "a"}, {"match": "clipboard", "text": "b", "example": "clipboard"}]}`,
			[]string{`rules[1].example: "clipboard" is answered by rules[0] first`}},
		{"several problems at once", `{"rules": [{"match": "(", "text": "a"}, {"match": "b"}], "x": 1}`,
			[]string{"rules[0].match: invalid regular expression", "rules[1]: needs", "x: unknown key"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.script))
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%s\nlacks %q", err, w)
				}
			}
		})
	}
}

func TestTemplateErrorAtRunTime(t *testing.T) {
	// field on a non-object degrades to the whole result; an unknown
	// argument in a real call cannot happen (the call came from the rule),
	// but a call made with other arguments must fail loudly, not silently.
	m := mustParse(t, `{"rules": [{"match": "x", "tool_calls": [{"name": "t", "arguments": {"a": "1"}}], "then": "{{field 0 \"text\"}} {{arg 0 \"a\"}}"}]}`)
	msgs := []message.Message{
		message.Text(message.RoleUser, "x"),
		{Role: message.RoleAssistant, Content: []message.Block{message.ToolCallBlock{ID: "c", Name: "t", Arguments: json.RawMessage(`{"a":"1"}`)}}},
		{Role: message.RoleTool, Content: []message.Block{message.ToolResultBlock{ToolCallID: "c", Content: json.RawMessage(`[1, 2]`)}}},
	}
	resp, err := m.Generate(context.Background(), model.Request{Messages: msgs})
	if err != nil || resp.Message.Text() != "[1,2] 1" {
		t.Fatalf("%q %v", resp.Message.Text(), err)
	}
	msgs[1].Content[0] = message.ToolCallBlock{ID: "c", Name: "t", Arguments: json.RawMessage(`{"b":"1"}`)}
	_, err = m.Generate(context.Background(), model.Request{Messages: msgs})
	if err == nil || !strings.Contains(err.Error(), `rules[0].then failed on these results: line 1, column 21: at <arg 0 "a">: arg 0 "a": the call to t has no argument "a" (its arguments: b)`) {
		t.Fatalf("err %v", err)
	}
}

func TestTemplateHelpers(t *testing.T) {
	s := &step{
		user: "u",
		calls: []message.ToolCallBlock{
			{ID: "1", Name: "a", Arguments: json.RawMessage(`{"s":"str","n":1.5,"o":{"k":[1]}}`)},
			{ID: "2", Name: "b", Arguments: json.RawMessage(`{}`)},
		},
		results: []message.ToolResultBlock{
			{ToolCallID: "1", Content: json.RawMessage(`{ "text" : "hi", "n": 2 }`)},
			{ToolCallID: "2", Content: json.RawMessage(`"boom"`), IsError: true},
		},
	}
	tmpl, err := parseThen(`{{user}}|{{result 0}}|{{result 1}}|{{field 0 "text"}}|{{field 0 "n"}}|{{field 1 "text"}}|{{arg 0 "s"}}|{{arg 0 "n"}}|{{arg 0 "o"}}|{{error 0}}|{{error 1}}|{{results}}|{{printf "%.1f" 2.25}}`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := execThen(tmpl, s)
	if err != nil {
		t.Fatal(err)
	}
	want := `u|{"text":"hi","n":2}|boom|hi|2|boom|str|1.5|{"k":[1]}|false|true|a: {"text":"hi","n":2}; b failed: boom|2.2`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := defaultThen(s); got != `I called a, which returned {"text":"hi","n":2}, and b, which failed with boom.` {
		t.Errorf("defaultThen = %s", got)
	}
	s.calls = append(s.calls, message.ToolCallBlock{ID: "3", Name: "c"})
	s.results = append(s.results, message.ToolResultBlock{ToolCallID: "3", Content: json.RawMessage(`null`)})
	if got := defaultThen(s); got != `I called a, which returned {"text":"hi","n":2}; b, which failed with boom; and c, which returned null.` {
		t.Errorf("defaultThen = %s", got)
	}
}

func TestMissingResultIsReportedAsError(t *testing.T) {
	msgs := []message.Message{
		message.Text(message.RoleUser, "what is 6*7 and my clipboard"),
		{Role: message.RoleAssistant, Content: []message.Block{
			message.ToolCallBlock{ID: "a", Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)},
			message.ToolCallBlock{ID: "b", Name: "read_clipboard", Arguments: json.RawMessage(`{}`)},
		}},
		{Role: message.RoleTool, Content: []message.Block{message.ToolResultBlock{ToolCallID: "a", Content: json.RawMessage(`{"result":42}`)}}},
	}
	resp, err := load(t).Generate(context.Background(), model.Request{Messages: msgs, Tools: allTools})
	if err != nil {
		t.Fatal(err)
	}
	wantText(t, resp.Message, "6*7 = 42. I could not read your clipboard: no result: this tool call was never answered")
}

func TestScriptThroughForModel(t *testing.T) {
	// A thread with a remote call answered later, as a ToolNode leaves it,
	// goes through message.ForModel before the model sees it.
	m := load(t)
	thread := []message.Message{
		{ID: "m1", Role: message.RoleUser, Content: []message.Block{message.TextBlock{Text: "what is 6*7 and what is on my clipboard"}}},
	}
	resp, err := m.Generate(context.Background(), model.Request{Messages: message.ForModel(thread), Tools: allTools})
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls()
	resp.Message.ID = "m2"
	thread = append(thread, resp.Message,
		message.Message{ID: "m3", Role: message.RoleTool, Content: []message.Block{
			message.ToolResultBlock{ToolCallID: calls[0].ID, Content: json.RawMessage(`{"expression":"6*7","result":42}`)},
			message.RemoteToolCallBlock{ID: calls[1].ID, Name: calls[1].Name, Arguments: calls[1].Arguments, Node: "tools"},
		}},
		message.Message{ID: "m4", Role: message.RoleTool, Content: []message.Block{
			message.ToolResultBlock{ToolCallID: calls[1].ID, Content: json.RawMessage(`{"text":"from the browser"}`)},
		}},
	)
	resp, err = m.Generate(context.Background(), model.Request{Messages: message.ForModel(thread), Tools: allTools})
	if err != nil {
		t.Fatal(err)
	}
	wantText(t, resp.Message, "6*7 = 42. Your clipboard holds: from the browser")
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
