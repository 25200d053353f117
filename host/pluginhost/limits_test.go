package pluginhost_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/pluginhost"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// A tool sleeping past its timeout is cancelled, and the caller gets an
// error naming the limit within timeout + 1s. A plugin that honours the
// cancellation keeps running. A per-tool timeout overrides the provider's.
func TestTimeoutCancelsTheCall(t *testing.T) {
	p, _, marks := start(t, pluginhost.Config{Limits: pluginhost.Limits{Timeout: time.Second, Key: "plugins[0]"}})
	pid := p.PID()
	began := time.Now()
	_, err := call(ctx, p, "sleep", `{"ms":30000,"tag":"slow"}`)
	took := time.Since(began)
	if !errors.Is(err, pluginhost.ErrLimit) || !strings.Contains(err.Error(), "within 1s (plugins[0].timeout)") || !strings.Contains(err.Error(), `tool "sleep"`) {
		t.Fatalf("a call past its timeout: %v", err)
	}
	if took > 2*time.Second {
		t.Fatalf("the error came %s after the call, want within timeout + 1s", took)
	}
	waitMark(t, marks, "cancelled slow: context canceled")
	if _, err := call(ctx, p, "echo", `{}`); err != nil {
		t.Fatal(err)
	}
	if p.PID() != pid {
		t.Fatalf("a plugin that honoured the cancellation was restarted (pid %d, then %d)", pid, p.PID())
	}

	q, _, _ := start(t, pluginhost.Config{Name: "other", Limits: pluginhost.Limits{Timeout: time.Minute,
		ToolTimeouts: map[string]time.Duration{"sleep": 300 * time.Millisecond}, Key: "mcp_servers.files"}})
	if _, err := call(ctx, q, "sleep", `{"ms":30000}`); !errors.Is(err, pluginhost.ErrLimit) ||
		!strings.Contains(err.Error(), "within 300ms (mcp_servers.files.tool_timeouts.sleep)") {
		t.Fatalf("a per-tool timeout: %v", err)
	}
}

// The timeout bounds silence, not the whole call: progress restarts it.
func TestProgressRestartsTheTimeout(t *testing.T) {
	p, _, _ := start(t, pluginhost.Config{Limits: pluginhost.Limits{Timeout: 500 * time.Millisecond}})
	resp, err := call(ctx, p, "sleep", `{"ms":1500,"every_ms":100,"tag":"busy"}`)
	if err != nil || string(resp.Content) != `"slept busy"` {
		t.Fatalf("a call reporting progress was cut off: %s %v", resp.Content, err)
	}
}

// A tool that ignores its cancellation gets its error result at the
// timeout all the same; the plugin is then replaced by a fresh process,
// and the next call works.
func TestIgnoringCancellationRestartsThePlugin(t *testing.T) {
	p, l, marks := start(t, pluginhost.Config{Limits: pluginhost.Limits{Timeout: 500 * time.Millisecond, Key: "plugins[0]"}})
	pid := p.PID()
	began := time.Now()
	_, err := call(ctx, p, "sleep", `{"ms":600000,"ignore_cancel":true,"tag":"stubborn"}`)
	if !errors.Is(err, pluginhost.ErrLimit) || !strings.Contains(err.Error(), "plugins[0].timeout") {
		t.Fatalf("a stubborn call past its timeout: %v", err)
	}
	if took := time.Since(began); took > 1500*time.Millisecond {
		t.Fatalf("the error came %s after the call, want within timeout + 1s", took)
	}
	waitMark(t, marks, "started stubborn")
	if !gone(pid, 10*time.Second) {
		t.Fatalf("plugin %d still runs although its handler ignored cancellation", pid)
	}
	var out struct{ PID int }
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := call(ctx, p, "echo", `{}`)
		if err == nil {
			json.Unmarshal(resp.Content, &out)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call works after the restart: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out.PID == pid || out.PID == 0 {
		t.Fatalf("answered by pid %d, want a new process (old %d)", out.PID, pid)
	}
	if !strings.Contains(l.String(), "did not return within") {
		t.Errorf("the plugin did not say why it ended:\n%s", l.String())
	}
}

// An over-size argument never reaches the plugin; an over-size result is
// dropped. Both errors name the limit.
func TestSizeLimits(t *testing.T) {
	p, _, marks := start(t, pluginhost.Config{Limits: pluginhost.Limits{MaxArgumentBytes: 100, MaxResultBytes: 1000, Key: "builtin_tools"}})
	long := `{"ms":1,"tag":"` + strings.Repeat("x", 200) + `"}`
	_, err := call(ctx, p, "sleep", long)
	if !errors.Is(err, pluginhost.ErrLimit) || !strings.Contains(err.Error(), "over the limit of 100 (builtin_tools.max_argument_bytes)") {
		t.Fatalf("an over-size argument: %v", err)
	}
	if _, err := call(ctx, p, "sleep", `{"ms":1,"tag":"small"}`); err != nil {
		t.Fatal(err)
	}
	waitMark(t, marks, "started small")
	if data, _ := os.ReadFile(marks); strings.Contains(string(data), "xxxx") {
		t.Fatalf("the over-size call reached the plugin:\n%s", data)
	}
	_, err = call(ctx, p, "big", `{"bytes":5000}`)
	if !errors.Is(err, pluginhost.ErrLimit) || !strings.Contains(err.Error(), "5002 bytes, over the limit of 1000 (builtin_tools.max_result_bytes)") {
		t.Fatalf("an over-size result: %v", err)
	}
	if resp, err := call(ctx, p, "big", `{"bytes":998}`); err != nil || len(resp.Content) != 1000 {
		t.Fatalf("a result at the limit: %d bytes, %v", len(resp.Content), err)
	}
}

// Shutdown is bounded even when a call in flight ignores its context: the
// drain ends with ctx, and the process is stopped within seconds.
func TestShutdownBoundedWithAStuckCall(t *testing.T) {
	p, _, marks := start(t, pluginhost.Config{})
	pid := p.PID()
	errc := make(chan error, 1)
	go func() {
		_, err := call(ctx, p, "sleep", `{"ms":600000,"ignore_cancel":true,"tag":"stuck"}`)
		errc <- err
	}()
	waitMark(t, marks, "started stuck")
	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	err := p.Shutdown(sctx)
	if took := time.Since(began); took > 200*time.Millisecond+3*time.Second {
		t.Fatalf("Shutdown took %s with a stuck call", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown cut off a call and said: %v", err)
	}
	if !gone(pid, 5*time.Second) {
		t.Fatalf("plugin %d still running after Shutdown", pid)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("the stuck call succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stuck call was never answered")
	}
}

// A plugin that keeps crashing waits out a growing backoff between starts;
// Shutdown does not wait for the backoff, and no process of the plugin is
// started after it returns.
func TestShutdownCancelsTheBackoff(t *testing.T) {
	p, _, _ := start(t, pluginhost.Config{})
	// Six crashes in a row: the next start waits 1.6s (100ms doubling from
	// the second crash on).
	last := 0
	for range 6 {
		deadline := time.Now().Add(10 * time.Second)
		pid := p.PID()
		for pid == 0 || pid == last {
			if time.Now().After(deadline) {
				t.Fatal("the plugin did not restart")
			}
			time.Sleep(5 * time.Millisecond)
			pid = p.PID()
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		last = pid
	}
	for p.PID() == last { // until the crash is seen and the backoff begins
		time.Sleep(5 * time.Millisecond)
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("Shutdown took %s: it waited out the 1.6s backoff", took)
	}
	if pid := p.PID(); pid != 0 {
		t.Fatalf("a process (%d) runs after Shutdown returned", pid)
	}
}

// A result over max_result_bytes is refused by gRPC as it arrives, not
// received whole and then dropped: the host's receive limit (set after
// go-plugin's, which is 2 GiB) follows the plugin's MaxResultBytes. A result
// at the limit still arrives whole; the plugin is not blamed (not
// restarted) and its next call works.
func TestResultRefusedAsItArrives(t *testing.T) {
	const limit = 8 << 20
	p, _, _ := start(t, pluginhost.Config{Limits: pluginhost.Limits{MaxResultBytes: limit, Key: "plugins[0]"}})
	pid := p.PID()
	resp, err := call(ctx, p, "big", fmt.Sprintf(`{"bytes":%d}`, limit-2)) // a JSON string: 2 quotes
	if err != nil || len(resp.Content) != limit {
		t.Fatalf("a result at the limit: %d bytes, %v", len(resp.Content), err)
	}
	_, err = call(ctx, p, "big", fmt.Sprintf(`{"bytes":%d}`, limit+(1<<20)))
	// The size is not in the message: the host never read the result.
	if !errors.Is(err, pluginhost.ErrLimit) || !strings.Contains(err.Error(), `tool "big" returned more than the limit of 8388608 bytes (plugins[0].max_result_bytes); the result was dropped`) {
		t.Fatalf("a result 1 MiB over the limit: %v", err)
	}
	if _, err := call(ctx, p, "echo", `{}`); err != nil {
		t.Fatalf("the call after: %v", err)
	}
	if p.PID() != pid {
		t.Fatalf("the plugin was restarted for a result the host refused (pid %d, then %d)", pid, p.PID())
	}
}

// The text of one call's progress reports counts against max_result_bytes
// too: a tool that reports without end is cancelled with an error naming
// the limit, and its plugin keeps serving.
func TestProgressBoundedPerCall(t *testing.T) {
	p, _, marks := start(t, pluginhost.Config{Limits: pluginhost.Limits{MaxResultBytes: 100, Key: "plugins[0]"}})
	pid := p.PID()
	var reported atomic.Int64
	pctx := sdk.WithProgress(ctx, func(pr sdk.Progress) { reported.Add(int64(len(pr.Message))) })
	began := time.Now()
	_, err := call(pctx, p, "sleep", `{"ms":30000,"every_ms":5,"tag":"chatty"}`)
	if !errors.Is(err, pluginhost.ErrLimit) || !strings.Contains(err.Error(), `tool "sleep" sent more than 100 bytes of progress messages (plugins[0].max_result_bytes); the call was cancelled`) {
		t.Fatalf("a call reporting without end: %v", err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("cancelled after %s", took)
	}
	if n := reported.Load(); n > 100 {
		t.Fatalf("%d bytes of progress reached the caller, over the limit of 100", n)
	}
	waitMark(t, marks, "cancelled chatty")
	if _, err := call(ctx, p, "echo", `{}`); err != nil || p.PID() != pid {
		t.Fatalf("the call after: %v (pid %d, then %d)", err, pid, p.PID())
	}
}

// max_result_bytes counts a result's attachments with its content: a
// result of exactly the limit, with as many attachments as a result may
// carry and the longest names, arrives whole (the receive limit makes room
// for their framing); a byte more is dropped with the error naming the
// key; and one far over is refused as it arrives. The plugin keeps
// serving throughout.
func TestAttachmentsCountAgainstTheResultLimit(t *testing.T) {
	const limit, each = 8 << 20, 64 << 10
	p, _, _ := start(t, pluginhost.Config{Limits: pluginhost.Limits{MaxResultBytes: limit, Key: "plugins[0]"}})
	pid := p.PID()
	content := limit - sdk.MaxAttachments*each - 2 // a JSON string: 2 quotes
	args := func(content, each int) string {
		return fmt.Sprintf(`{"bytes":%d,"attachments":%d,"attachment_bytes":%d,"long_names":true}`, content, sdk.MaxAttachments, each)
	}
	resp, err := call(ctx, p, "big", args(content, each))
	if err != nil || resp.Size() != limit || len(resp.Attachments) != sdk.MaxAttachments {
		t.Fatalf("a result of exactly the limit with %d attachments: %d bytes, %d attachments, %v", sdk.MaxAttachments, resp.Size(), len(resp.Attachments), err)
	}
	for i, a := range resp.Attachments {
		if len(a.Data) != each || len(a.MimeType) != sdk.MaxMimeTypeBytes || len(a.Filename) != sdk.MaxFilenameBytes {
			t.Fatalf("attachment %d arrived as %d bytes, %q, %q", i, len(a.Data), a.MimeType, a.Filename)
		}
	}
	_, err = call(ctx, p, "big", args(content+1, each))
	if !errors.Is(err, pluginhost.ErrLimit) || !strings.Contains(err.Error(), `tool "big" returned 8388609 bytes (its content and 100 attachments), over the limit of 8388608 (plugins[0].max_result_bytes); the result was dropped`) {
		t.Fatalf("a result one byte over the limit: %v", err)
	}
	_, err = call(ctx, p, "big", args(0, 1<<20))
	if !errors.Is(err, pluginhost.ErrLimit) || !strings.Contains(err.Error(), `tool "big" returned more than the limit of 8388608 bytes (plugins[0].max_result_bytes); the result was dropped`) {
		t.Fatalf("a result of 100 MiB of attachments: %v", err)
	}
	if _, err := call(ctx, p, "echo", `{}`); err != nil || p.PID() != pid {
		t.Fatalf("the call after: %v (pid %d, then %d)", err, pid, p.PID())
	}
}
