package builtin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
)

func callTime(t *testing.T, now time.Time, args string) (currentTimeResult, string, bool) {
	t.Helper()
	tool := currentTimeTool(func() time.Time { return now })
	resp, err := tool.Handler.CallTool(context.Background(), sdk.CallToolRequest{Name: "current_time", Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatal(err)
	}
	var r currentTimeResult
	if !resp.IsError {
		if err := json.Unmarshal(resp.Content, &r); err != nil {
			t.Fatal(err)
		}
	}
	return r, string(resp.Content), resp.IsError
}

func TestCurrentTimeTokyo(t *testing.T) {
	now := time.Date(2025, 3, 14, 23, 30, 0, 0, time.UTC) // a Friday in UTC, Saturday in Tokyo
	r, raw, isErr := callTime(t, now, `{"timezone": "Asia/Tokyo"}`)
	if isErr {
		t.Fatalf("error result %s", raw)
	}
	want := currentTimeResult{Timezone: "Asia/Tokyo", Time: "2025-03-15T08:30:00+09:00", Unix: now.Unix(), Weekday: "Saturday"}
	if r != want {
		t.Errorf("got %+v, want %+v", r, want)
	}
}

func TestCurrentTimeTokyoLiveClock(t *testing.T) {
	p, err := New(Options{Enable: []string{"current_time"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.CallTool(context.Background(), sdk.CallToolRequest{Name: "current_time", Arguments: json.RawMessage(`{"timezone":"Asia/Tokyo"}`)})
	if err != nil || resp.IsError {
		t.Fatalf("%s %v", resp.Content, err)
	}
	var r currentTimeResult
	if err := json.Unmarshal(resp.Content, &r); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(r.Time, "+09:00") {
		t.Errorf("Tokyo time %q does not end in +09:00", r.Time)
	}
	parsed, err := time.Parse(time.RFC3339, r.Time)
	if err != nil || parsed.Unix() != r.Unix {
		t.Errorf("time %q and unix %d disagree (%v)", r.Time, r.Unix, err)
	}
	if d := time.Since(parsed); d < -time.Second || d > time.Minute {
		t.Errorf("time %q is not now", r.Time)
	}
}

func TestCurrentTimeDefaultsToUTC(t *testing.T) {
	now := time.Date(2025, 7, 1, 12, 0, 0, 0, time.UTC)
	for _, args := range []string{`{}`, `{"timezone": ""}`, `{"timezone": "UTC"}`, ``} {
		r, raw, isErr := callTime(t, now, args)
		if isErr || r.Timezone != "UTC" || r.Time != "2025-07-01T12:00:00Z" || r.Weekday != "Tuesday" {
			t.Errorf("args %q: got %s", args, raw)
		}
	}
	r, _, _ := callTime(t, now, `{"timezone": "Europe/Paris"}`)
	if r.Time != "2025-07-01T14:00:00+02:00" {
		t.Errorf("Paris in summer: %s, want +02:00", r.Time)
	}
}

func TestCurrentTimeErrors(t *testing.T) {
	cases := map[string]string{
		`{"timezone": "Mars/Olympus_Mons"}`: `unknown time zone \"Mars/Olympus_Mons\"`,
		`{"timezone": "Tokyo"}`:             `unknown time zone \"Tokyo\": pass an IANA zone name such as \"Asia/Tokyo\"`,
		`{"timezone": "Local"}`:             `\"Local\" is not accepted`,
		`{"timezone": "../etc/passwd"}`:     `unknown time zone`,
		`{"timezone": 9}`:                   `timezone: must be a string`,
		`{"tz": "UTC"}`:                     `tz: unknown key`,
	}
	for args, want := range cases {
		_, raw, isErr := callTime(t, time.Now(), args)
		if !isErr || !strings.Contains(raw, want) {
			t.Errorf("args %s: got %s (is_error %v), want an error containing %s", args, raw, isErr, want)
		}
	}
}
