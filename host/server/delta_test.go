package server_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// deltaRun is an invoke response or end event with config.response
// "delta".
type deltaRun struct {
	run
	Offset *int `json:"offset"`
}

func decodeDelta(t *testing.T, data []byte) deltaRun {
	t.Helper()
	var out deltaRun
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	if out.Offset == nil {
		t.Fatalf("a delta response without offset: %s", data)
	}
	return out
}

func withResponse(body map[string]any, response string) map[string]any {
	body["config"].(map[string]any)["response"] = response
	return body
}

// A client that keeps its transcript and appends what each delta response
// carries, over invoke, a pause, a resume by stream and another turn, holds
// exactly the thread the server holds; each response carries only what its
// run added, at the offset the transcript had reached.
func TestDeltaResponses(t *testing.T) {
	e := start(t, setup{})
	var transcript []message.Message
	apply := func(d deltaRun) {
		t.Helper()
		if *d.Offset != len(transcript) {
			t.Fatalf("offset %d, but the transcript holds %d messages", *d.Offset, len(transcript))
		}
		if len(d.Messages) == 0 {
			t.Fatalf("a run added no messages: %+v", d)
		}
		transcript = append(transcript, d.Messages...)
	}

	first := decodeDelta(t, e.do("POST", "/v1/graph/invoke", withResponse(runBody("d", mixedQuestion), "delta")).body)
	if first.Status != "interrupted" || len(first.RemoteToolCalls) != 1 || *first.Offset != 0 {
		t.Fatalf("first run: %+v", first)
	}
	apply(first)
	if first.Messages[0].Role != message.RoleUser || first.Messages[0].ID == "" {
		t.Fatalf("the delta does not start with the user's message, with its id: %+v", first.Messages[0])
	}

	// The resume, streamed: only the end event is cut; the full default
	// answer of another client on the same thread is unchanged.
	evs := e.stream(withResponse(resumeBody("d", first.RemoteToolCalls[0].ID, "clipboard text"), "delta"))
	end := evs[len(evs)-1]
	if end.event != "end" {
		t.Fatalf("events %v", names(evs))
	}
	second := decodeDelta(t, []byte(end.data))
	if second.Status != "completed" || second.Messages[0].Role != message.RoleTool {
		t.Fatalf("resume: %+v", second)
	}
	apply(second)

	third := decodeDelta(t, e.do("POST", "/v1/graph/invoke", withResponse(runBody("d", "hello"), "delta")).body)
	apply(third)

	th := e.thread("d")
	if !reflect.DeepEqual(transcript, th.Messages) {
		t.Fatalf("the transcript built from deltas differs from the thread:\n%v\n%v", ids(transcript), ids(th.Messages))
	}

	// "full" is the default, said out loud: the whole thread, no offset.
	r := e.do("POST", "/v1/graph/invoke", withResponse(runBody("d", "hello again"), "full"))
	if got := sortedKeys(jsonObject(t, r.body)); !slices.Equal(got, []string{"messages", "remote_tool_calls", "run_id", "status", "thread_id"}) {
		t.Fatalf("full response keys %v", got)
	}
	if full := decodeRun(t, r.body); len(full.Messages) != len(transcript)+2 || !reflect.DeepEqual(full.Messages[:len(transcript)], transcript) {
		t.Fatalf("the full response is not the whole thread: %d messages after %d", len(full.Messages), len(transcript))
	}
	// And a delta response's keys are the full one's plus offset.
	r = e.do("POST", "/v1/graph/invoke", withResponse(runBody("d", "and again"), "delta"))
	if got := sortedKeys(jsonObject(t, r.body)); !slices.Equal(got, []string{"messages", "offset", "remote_tool_calls", "run_id", "status", "thread_id"}) {
		t.Fatalf("delta response keys %v", got)
	}
	if d := decodeDelta(t, r.body); *d.Offset != len(transcript)+2 || len(d.Messages) != 2 {
		t.Fatalf("delta after a full run: offset %d, %d messages", *d.Offset, len(d.Messages))
	}
}

// GET /v1/threads/{id} pages: walking a thread with after and limit
// returns each message once, in order, with offset, total and has_more
// right; without parameters the answer is unchanged; paging changes
// nothing.
func TestThreadPaging(t *testing.T) {
	e := start(t, setup{})
	e.invoke(runBody("pg", "hello"))
	e.invoke(runBody("pg", "hello again"))
	e.invoke(runBody("pg", "and again"))
	all := e.thread("pg").Messages
	if len(all) < 6 {
		t.Fatalf("the thread has %d messages, want at least 6", len(all))
	}
	before := e.state("pg")

	type page struct {
		run
		Offset  *int  `json:"offset"`
		Total   *int  `json:"total"`
		HasMore *bool `json:"has_more"`
	}
	get := func(query string) page {
		t.Helper()
		r := e.do("GET", "/v1/threads/pg"+query, nil)
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", query, r.status, r.body)
		}
		var p page
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		if p.Offset == nil || p.Total == nil || p.HasMore == nil {
			t.Fatalf("GET %s: a page without offset, total or has_more: %s", query, r.body)
		}
		return p
	}
	for _, limit := range []int{1, 2, 4, len(all), 1000} {
		var got []message.Message
		query := fmt.Sprintf("?limit=%d", limit)
		for {
			p := get(query)
			if *p.Offset != len(got) || *p.Total != len(all) || len(p.Messages) > limit {
				t.Fatalf("limit %d, %s: offset %d total %d, %d messages, after %d", limit, query, *p.Offset, *p.Total, len(p.Messages), len(got))
			}
			got = append(got, p.Messages...)
			if *p.HasMore != (len(got) < len(all)) {
				t.Fatalf("limit %d: has_more %v with %d of %d", limit, *p.HasMore, len(got), len(all))
			}
			if !*p.HasMore {
				break
			}
			query = fmt.Sprintf("?after=%s&limit=%d", p.Messages[len(p.Messages)-1].ID, limit)
		}
		if !reflect.DeepEqual(got, all) {
			t.Fatalf("limit %d: the pages differ from the thread:\n%v\n%v", limit, ids(got), ids(all))
		}
	}
	// after alone: everything that follows; after the last message: none.
	if p := get("?after=" + all[1].ID); *p.Offset != 2 || !reflect.DeepEqual(p.Messages, all[2:]) || *p.HasMore {
		t.Fatalf("after %s: offset %d, %v", all[1].ID, *p.Offset, ids(p.Messages))
	}
	if p := get("?after=" + all[len(all)-1].ID); len(p.Messages) != 0 || p.Messages == nil || *p.Offset != len(all) || *p.HasMore {
		t.Fatalf("after the last message: %+v", p)
	}
	if r := e.do("GET", "/v1/threads/pg", nil); slices.Contains(sortedKeys(jsonObject(t, r.body)), "total") {
		t.Fatalf("an unpaged GET carries paging fields: %s", r.body)
	}
	if after := e.state("pg"); after != before {
		t.Fatalf("paging changed the thread:\n%s\n%s", before, after)
	}
}
