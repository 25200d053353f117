package sdktest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/sdktest"
)

type addArgs struct {
	A int `json:"a" jsonschema:"the first term"`
	B int `json:"b" jsonschema:"the second term"`
}

type sum struct {
	Sum int `json:"sum"`
}

// provider is a small provider with typed tools, and a Shutdown that
// records it was called.
type provider struct {
	*sdk.Tools
	shutdown atomic.Bool
	waited   chan error // what the wait tool saw
}

func (p *provider) Shutdown(context.Context) error {
	p.shutdown.Store(true)
	return nil
}

func newProvider() *provider {
	p := &provider{waited: make(chan error, 1)}
	p.Tools = sdk.MustTools("calc", "1.0.0",
		sdk.MustTool("add", "Add two integers.", func(_ context.Context, in addArgs) (sum, error) {
			return sum{in.A + in.B}, nil
		}),
		sdk.MustTool("fail", "Always fail.", func(context.Context, struct{}) (any, error) {
			return nil, errors.New("this tool always fails")
		}),
		sdk.MustTool("wait", "Wait until the call is cancelled.", func(ctx context.Context, _ struct{}) (string, error) {
			<-ctx.Done()
			p.waited <- ctx.Err()
			return "", ctx.Err()
		}),
	)
	return p
}

func TestServe(t *testing.T) {
	impl := newProvider()
	t.Run("calls", func(t *testing.T) {
		p := sdktest.Serve(t, impl)
		md, err := p.Metadata(context.Background(), sdk.MetadataRequest{})
		if err != nil || md.Name != "calc" || md.Version != "1.0.0" || len(md.Tools) != 3 {
			t.Fatalf("metadata: %+v, %v", md, err)
		}

		if got := sdktest.Decode[sum](t, sdktest.Call(t, p, "add", addArgs{A: 2, B: 3})); got.Sum != 5 {
			t.Errorf("add: %+v", got)
		}
		if got := sdktest.Decode[sum](t, sdktest.Call(t, p, "add", json.RawMessage(`{"a": -1, "b": 1}`))); got.Sum != 0 {
			t.Errorf("add raw: %+v", got)
		}
		if got := sdktest.ErrorText(t, sdktest.Call(t, p, "fail", nil)); got != "this tool always fails" {
			t.Errorf("fail: %q", got)
		}

		// Arguments the schema refuses never reach the provider, as with
		// the host.
		got := sdktest.ErrorText(t, sdktest.Call(t, p, "add", map[string]any{"a": 1, "c": 2}))
		for _, want := range []string{`tool "add": invalid arguments`, "missing properties: 'b'", "additionalProperties 'c' not allowed", "Fix the arguments"} {
			if !strings.Contains(got, want) {
				t.Errorf("schema error %q lacks %q", got, want)
			}
		}

		// Errors and cancellation cross the connection as the host sees them.
		if _, err := p.CallTool(context.Background(), sdk.CallToolRequest{Name: "nope"}); !errors.Is(err, sdk.ErrUnknownTool) {
			t.Errorf("unknown tool: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, _ = p.CallTool(ctx, sdk.CallToolRequest{Name: "wait", Arguments: json.RawMessage(`{}`)})
		select {
		case err := <-impl.waited:
			// The server sees its own copy of the deadline expire, or the
			// client cancelling when its copy expires first.
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				t.Errorf("the tool saw %v, want the deadline", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("the tool did not see the deadline")
		}
		if impl.shutdown.Load() {
			t.Error("shut down before the test ended")
		}
	})
	if !impl.shutdown.Load() {
		t.Error("the provider was not shut down when the test ended")
	}
}

// recorder is a testing.TB that records failures and skips instead of
// reporting them, to test the kit's own failure reports. Fatal and Skip end
// the goroutine, as they do for a real test.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Skipf(format string, args ...any) {
	r.Errorf("SKIP: "+format, args...)
	runtime.Goexit()
}

func (r *recorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }
func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }
func (r *recorder) Skip(args ...any)  { r.Skipf("%s", fmt.Sprint(args...)) }

// run calls fn with a recorder in its own goroutine, so that Fatal can end
// it, and returns what was reported.
func run(t *testing.T, fn func(tb testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return strings.Join(r.msgs, "\n")
}

func TestFailures(t *testing.T) {
	p := sdktest.Serve(t, newProvider())
	cases := []struct {
		name string
		fn   func(tb testing.TB)
		want string
	}{
		{"unknown tool", func(tb testing.TB) { sdktest.Call(tb, p, "ad", nil) }, `provider "calc" has no tool "ad" (tools: add, fail, wait)`},
		{"unencodable args", func(tb testing.TB) { sdktest.Call(tb, p, "add", func() {}) }, "encoding the arguments"},
		{"decode an error", func(tb testing.TB) { sdktest.Decode[sum](tb, sdk.ErrorResult(errors.New("boom"))) }, `the tool reported an error: "boom"`},
		{"decode the wrong type", func(tb testing.TB) {
			sdktest.Decode[sum](tb, sdk.CallToolResponse{Content: json.RawMessage(`"text"`)})
		}, "into sdktest_test.sum"},
		{"error text of a success", func(tb testing.TB) { sdktest.ErrorText(tb, sdk.CallToolResponse{Content: json.RawMessage(`1`)}) }, "the tool succeeded: 1"},
		{"invalid spec", func(tb testing.TB) {
			bad := sdk.MustTools("bad", "1", sdk.Func("bad", "", json.RawMessage(`{"type": "array"}`), nil))
			sdktest.Serve(tb, bad)
		}, `sdktest.Serve: the host would refuse tool "bad": parameters: the root schema must have "type": "object"`},
		{"an attachment the host refuses", func(tb testing.TB) {
			pics := sdk.MustTools("pics", "1", sdk.Tool{Spec: sdk.ToolSpec{Name: "pic"},
				Handler: sdk.HandlerFunc(func(context.Context, sdk.CallToolRequest) (sdk.CallToolResponse, error) {
					return sdk.CallToolResponse{Content: json.RawMessage(`null`), Attachments: []sdk.Attachment{{MimeType: "image/png"}}}, nil
				})})
			sdktest.Call(tb, sdktest.Serve(tb, pics), "pic", nil)
		}, "sdktest.Call pic: the host refuses the result's attachments, and gives the model an error instead: attachments[0].data: empty"},
		{"no go command", func(tb testing.TB) {
			tb.Setenv("PATH", "")
			sdktest.Build(tb, ".")
		}, "SKIP: sdktest.Build: skipping: building . needs the go command"},
		{"build fails", func(tb testing.TB) { sdktest.Build(tb, "./no/such/package") }, "go build -o"},
		{"no command", func(tb testing.TB) { sdktest.Start(tb) }, "sdktest.Start: no command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := run(t, c.fn); !strings.Contains(got, c.want) {
				t.Errorf("reported %q, want %q", got, c.want)
			}
		})
	}
}

// TestStart runs the test plugin, which prints to stdout before its
// handshake, as a real subprocess.
func TestStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a plugin")
	}
	bin := sdktest.Build(t, "./testdata/testplugin")
	p := sdktest.Start(t, bin)
	md, err := p.Metadata(context.Background(), sdk.MetadataRequest{})
	if err != nil || md.Name != "testplugin" || len(md.Tools) == 0 {
		t.Fatalf("metadata: %+v, %v", md, err)
	}
	got := sdktest.Decode[struct {
		Text string `json:"text"`
		PID  int    `json:"pid"`
	}](t, sdktest.Call(t, p, "echo", map[string]string{"text": "hi"}))
	if got.Text != "hi" || got.PID == 0 {
		t.Errorf("echo: %+v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	resp, err := p.CallTool(ctx, sdk.CallToolRequest{Name: "deadline", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	var left int
	if err := json.Unmarshal(resp.Content, &left); err != nil || left <= 0 || left > 300 {
		t.Errorf("deadline left in the plugin: %s (%v)", resp.Content, err)
	}
}

// TestCallContext sees a plugin's progress and cancels a call through
// CallContext, against the plugin subprocess.
func TestCallContext(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a plugin")
	}
	p := sdktest.Start(t, sdktest.Build(t, "./testdata/testplugin"))

	t.Run("progress", func(t *testing.T) {
		var mu sync.Mutex
		var got []sdk.Progress
		ctx := sdk.WithProgress(t.Context(), func(pr sdk.Progress) {
			mu.Lock()
			got = append(got, pr)
			mu.Unlock()
		})
		resp := sdktest.CallContext(ctx, t, p, "sleep", map[string]any{"ms": 2000, "every_ms": 20, "tag": "p"})
		if s := sdktest.Decode[string](t, resp); s != "slept p" {
			t.Errorf("result %q", s)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) == 0 || got[0].Progress != 1 || got[0].Message != "still sleeping" {
			t.Errorf("progress %+v, want reports starting at 1 with the tool's message", got)
		}
	})

	t.Run("cancellation", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		// Cancel once the tool has reported that it runs.
		ctx = sdk.WithProgress(ctx, func(sdk.Progress) { cancel() })
		resp := sdktest.CallContext(ctx, t, p, "sleep", map[string]any{"ms": 60000, "every_ms": 10, "tag": "c"})
		if got := sdktest.ErrorText(t, resp); !strings.Contains(got, "context canceled") {
			t.Errorf("a cancelled call reads %q, want the context's error", got)
		}
		// The plugin stopped the tool and serves the next call.
		if s := sdktest.Decode[string](t, sdktest.Call(t, p, "sleep", map[string]any{"ms": 1, "tag": "after"})); s != "slept after" {
			t.Errorf("next call: %q", s)
		}
	})
}

// A plugin that panics before its handshake is reported with its exit
// status and what it wrote on stderr, not go-plugin's "Unrecognized remote
// plugin message".
func TestStartReportsACrashAtStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a plugin")
	}
	bin := sdktest.Build(t, "./testdata/crashplugin")
	got := run(t, func(tb testing.TB) { sdktest.Start(tb, bin) })
	for _, want := range []string{"exited before its handshake", "exit status 2", "panic: the configuration file is missing", "crashplugin/main.go"} {
		if !strings.Contains(got, want) {
			t.Errorf("reported %q, want %q in it", got, want)
		}
	}
	if strings.Contains(got, "Unrecognized remote plugin message") || strings.Contains(got, "architecture") {
		t.Errorf("reported go-plugin's message, which points the wrong way: %q", got)
	}
}

// ServeConfigured checks the options against the provider's options
// schema first, as the host does, and fails the test naming each bad
// option by its path; the provider never sees them.
func TestServeConfiguredChecksTheOptions(t *testing.T) {
	built := false
	p := sdk.MustConfigured(func(context.Context, struct {
		Units string `json:"units,omitempty"`
	}) (sdk.Provider, error) {
		built = true
		return newProvider(), nil
	}, sdk.WithProperty("units", `{"enum": ["metric", "imperial"]}`))
	got := run(t, func(tb testing.TB) { sdktest.ServeConfigured(tb, map[string]string{"units": "kelvin", "unit": "x"}, p) })
	for _, want := range []string{
		"sdktest.Serve: the options do not match the provider's options schema",
		`options.units: value must be one of "metric", "imperial"`,
		`options.unit: unknown key: did you mean "units"? (allowed: units)`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("reported %q, want %q", got, want)
		}
	}
	if built {
		t.Error("the provider was built from options its schema refuses")
	}
}

// logRecorder is a testing.TB that keeps what is logged to it.
type logRecorder struct {
	testing.TB
	mu   sync.Mutex
	logs []string
}

func (r *logRecorder) Log(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprint(args...))
}

func (r *logRecorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.logs, "\n")
}

// go-plugin's own lines about an in-process connection go to the test's
// log, where Start's go too, not to the test binary's stderr.
func TestServeLogsToTheTestLog(t *testing.T) {
	r := &logRecorder{TB: t}
	t.Run("serve", func(t *testing.T) {
		r.TB = t
		p := sdktest.Serve(r, newProvider())
		sdktest.Decode[sum](t, sdktest.Call(t, p, "add", addArgs{A: 1, B: 1}))
	})
	if got := r.String(); !strings.Contains(got, "[DEBUG] sdktest: plugin address") {
		t.Errorf("go-plugin's lines did not reach the test's log:\n%s", got)
	}
}
