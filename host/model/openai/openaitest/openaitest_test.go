package openaitest_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/model/openai/openaitest"
)

func post(t *testing.T, srv *openaitest.Server, body string) *http.Response {
	t.Helper()
	res, err := http.Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

const tools = `"tools":[{"type":"function","function":{"name":"a","parameters":{"type":"object"}}},{"type":"function","function":{"name":"b"}}]`

func TestHistoryChecks(t *testing.T) {
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"a","arguments":"{}"}},{"id":"2","type":"function","function":{"name":"b","arguments":"{}"}}]}`
	for name, c := range map[string]struct {
		messages string
		problem  string
	}{
		"valid":                  {`[{"role":"user","content":"hi"},` + call + `,{"role":"tool","tool_call_id":"1","content":"x"},{"role":"tool","tool_call_id":"2","content":"y"}]`, ""},
		"results out of order":   {`[{"role":"user","content":"hi"},` + call + `,{"role":"tool","tool_call_id":"2","content":"y"},{"role":"tool","tool_call_id":"1","content":"x"}]`, "call order"},
		"a result missing":       {`[{"role":"user","content":"hi"},` + call + `,{"role":"tool","tool_call_id":"1","content":"x"}]`, "must be followed by tool messages"},
		"a stray result":         {`[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"9","content":"x"}]`, "does not follow"},
		"arguments not a string": {`[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"a","arguments":{}}}]},{"role":"tool","tool_call_id":"1","content":"x"}]`, "want a string of JSON"},
		"tool content null":      {`[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"a","arguments":"{}"}}]},{"role":"tool","tool_call_id":"1","content":null}]`, "needs content"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := openaitest.NewServer(t, openaitest.Text("ok"))
			res := post(t, srv, `{"model":"m",`+tools+`,"messages":`+c.messages+`}`)
			problems := srv.TakeProblems()
			if c.problem == "" {
				if res.StatusCode != http.StatusOK || len(problems) != 0 {
					t.Fatalf("status %d, problems %v", res.StatusCode, problems)
				}
				return
			}
			if res.StatusCode != http.StatusBadRequest || len(problems) != 1 || !strings.Contains(problems[0], c.problem) {
				t.Fatalf("status %d, problems %v: want a 400 about %q", res.StatusCode, problems, c.problem)
			}
		})
	}
}

func TestRequestChecks(t *testing.T) {
	for body, problem := range map[string]string{
		`{"messages":[{"role":"user","content":"hi"}]}`: "model: missing",
		`{"model":"m","messages":[]}`:                   "messages: missing",
		`{"model":"m","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`: "only allowed when stream is true",
		`{"model":"m","parallel_tool_calls":true,"messages":[{"role":"user","content":"hi"}]}`:              "only allowed when tools are specified",
		`{"model":"m","messages":[{"role":"robot","content":"hi"}]}`:                                        "not a chat role",
	} {
		srv := openaitest.NewServer(t)
		res := post(t, srv, body)
		problems := srv.TakeProblems()
		if res.StatusCode != http.StatusBadRequest || len(problems) != 1 || !strings.Contains(problems[0], problem) {
			t.Errorf("%s: status %d, problems %v, want %q", body, res.StatusCode, problems, problem)
		}
	}
}

func TestStreamWireFormat(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Reply{
		Text: "hi", ToolCalls: []openaitest.ToolCall{openaitest.Call("c1", "a", `{"x":1}`), openaitest.Call("c2", "b", `{}`)},
		Split: 3, Packed: true, LateIDs: true, Usage: &openaitest.Usage{PromptTokens: 3, CompletionTokens: 4},
	})
	res := post(t, srv, `{"model":"m","stream":true,"stream_options":{"include_usage":true},`+tools+`,"messages":[{"role":"user","content":"hi"}]}`)
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	var events []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not a data line", line)
		}
		events = append(events, data)
	}
	if events[len(events)-1] != "[DONE]" {
		t.Fatalf("last event %q", events[len(events)-1])
	}
	var sawPacked, sawLateID, sawUsage bool
	for _, e := range events[:len(events)-1] {
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e), &c); err != nil || c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %s: %v", e, err)
		}
		if c.Usage != nil && c.Usage.PromptTokens == 3 && len(c.Choices) == 0 {
			sawUsage = true
		}
		for _, ch := range c.Choices {
			if len(ch.Delta.ToolCalls) > 1 {
				sawPacked = true
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.ID != "" && tc.Function.Arguments != "" {
					sawLateID = true
				}
			}
		}
	}
	if !sawPacked || !sawLateID || !sawUsage {
		t.Fatalf("packed %v late id %v usage %v in %q", sawPacked, sawLateID, sawUsage, events)
	}
}

func TestNoReplyLeft(t *testing.T) {
	srv := openaitest.NewServer(t)
	res := post(t, srv, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if res.StatusCode != http.StatusBadRequest || len(srv.TakeProblems()) != 1 {
		t.Fatalf("status %d", res.StatusCode)
	}
}

// Media parts are recorded, decoded; what OpenAI refuses is refused.
func TestContentParts(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Text("ok"))
	res := post(t, srv, `{"model":"m","messages":[{"role":"user","content":[`+
		`{"type":"text","text":"see "},`+
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw=="}},`+
		`{"type":"image_url","image_url":{"url":"https://example.com/a.jpg","detail":"low"}},`+
		`{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0="}},`+
		`{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}},`+
		`{"type":"text","text":"these"}]}]}`)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %v", res.StatusCode, srv.TakeProblems())
	}
	m := srv.Requests()[0].Messages[0]
	p := m.Parts
	if m.Content != "see these" || len(p) != 6 ||
		p[1].MimeType != "image/png" || string(p[1].Data) != "\x89PNG" ||
		p[2].URL != "https://example.com/a.jpg" || p[2].Data != nil ||
		p[3].Filename != "a.pdf" || p[3].MimeType != "application/pdf" || string(p[3].Data) != "%PDF-" ||
		p[4].Format != "wav" || string(p[4].Data) != "RIFF" {
		t.Fatalf("recorded %+v", m)
	}

	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"a","arguments":"{}"}}]}`
	for body, problem := range map[string]string{
		`[{"role":"user","content":"hi"},` + call + `,{"role":"tool","tool_call_id":"1","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw=="}}]}]`: "messages[2].content[0]: a tool message takes text parts only, not image_url",
		`[{"role":"system","content":[{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0="}}]}]`:                                         "a system message takes text parts only",
		`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,not base64!"}}]}]`:                                                             "messages[0].content[0].image_url.url: the data is not base64",
		`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/svg+xml;base64,PHN2Zz4="}}]}]`:                                                            "not a supported image type",
		`[{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0="}}]}]`:                                                              "file.filename: missing",
		`[{"role":"user","content":[{"type":"file","file":{"filename":"a.txt","file_data":"data:text/plain;base64,aGk="}}]}]`:                                                    "takes PDF files only",
		`[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"flac"}}]}]`:                                                                 `"flac" is not wav or mp3`,
		`[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"data:audio/wav;base64,UklGRg==","format":"wav"}}]}]`:                                            "input_audio.data: not base64",
		`[{"role":"user","content":[{"type":"video","text":"x"}]}]`:                                                                                                              `"video" is not a content part type`,
		`[{"role":"user","content":[]}]`: "an empty array of parts",
	} {
		srv := openaitest.NewServer(t)
		res := post(t, srv, `{"model":"m",`+tools+`,"messages":`+body+`}`)
		problems := srv.TakeProblems()
		if res.StatusCode != http.StatusBadRequest || len(problems) != 1 || !strings.Contains(problems[0], problem) {
			t.Errorf("%s: status %d, problems %v, want %q", body, res.StatusCode, problems, problem)
		}
	}
}
