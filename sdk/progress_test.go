package sdk_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/sdktest"
)

// changing is a provider whose tool list changes when "add" is called.
type changing struct {
	*sdk.Tools
	mu      sync.Mutex
	extra   []sdk.ToolSpec
	changed chan struct{}
}

func (c *changing) ToolsChanged() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

func (c *changing) Metadata(ctx context.Context, req sdk.MetadataRequest) (sdk.MetadataResponse, error) {
	md, err := c.Tools.Metadata(ctx, req)
	c.mu.Lock()
	md.Tools = append(md.Tools, c.extra...)
	c.mu.Unlock()
	return md, err
}

func newChanging() *changing {
	c := &changing{changed: make(chan struct{})}
	c.Tools = sdk.MustTools("changing", "1",
		sdk.Func("slow", "Reports progress.", nil, func(ctx context.Context, _ json.RawMessage) (any, error) {
			for i := 1; i <= 3; i++ {
				sdk.ReportProgress(ctx, float64(i), 3, "step")
			}
			return "done", nil
		}),
		sdk.Func("add", "Adds a tool.", nil, func(context.Context, json.RawMessage) (any, error) {
			c.mu.Lock()
			c.extra = append(c.extra, sdk.ToolSpec{Name: "added", Parameters: sdk.EmptyObjectSchema})
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
			return "ok", nil
		}))
	return c
}

// Progress reported by a tool crosses the plugin boundary (CallToolStream)
// when the caller listens, and the call is a plain one when it does not.
func TestProgressCrossesThePluginBoundary(t *testing.T) {
	p := sdktest.Serve(t, newChanging())
	var got []sdk.Progress
	ctx := sdk.WithProgress(context.Background(), func(pr sdk.Progress) { got = append(got, pr) })
	resp, err := p.CallTool(ctx, sdk.CallToolRequest{Name: "slow", Arguments: json.RawMessage(`{}`)})
	if err != nil || string(resp.Content) != `"done"` {
		t.Fatal(resp, err)
	}
	want := []sdk.Progress{{Progress: 1, Total: 3, Message: "step"}, {Progress: 2, Total: 3, Message: "step"}, {Progress: 3, Total: 3, Message: "step"}}
	if !slices.Equal(got, want) {
		t.Fatalf("progress %v, want %v", got, want)
	}
	if _, err := p.CallTool(context.Background(), sdk.CallToolRequest{Name: "slow"}); err != nil {
		t.Fatal(err)
	}
	md, err := p.Metadata(context.Background(), sdk.MetadataRequest{})
	if err != nil || !slices.Contains(md.Capabilities, sdk.CapabilityProgress) || !slices.Contains(md.Capabilities, sdk.CapabilityToolsChanged) {
		t.Fatalf("capabilities %v, %v", md.Capabilities, err)
	}
	if _, err := p.CallTool(ctx, sdk.CallToolRequest{Name: "nope"}); err == nil {
		t.Fatal("unknown tool through the stream gave no error")
	}
}

// A tool-list change in the plugin reaches the host on the lifeline.
func TestToolsChangedCrossesThePluginBoundary(t *testing.T) {
	p := sdktest.Serve(t, newChanging())
	w, ok := p.(sdk.ToolsWatcher)
	if !ok {
		t.Fatal("the host side of a plugin is not a ToolsWatcher")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal(what)
		}
	}
	// The lifeline's first event covers changes made before it opened.
	opened := w.ToolsChanged()
	go p.(interface{ Watch(context.Context) error }).Watch(ctx)
	wait(opened, "no event when the lifeline opened")
	changed := w.ToolsChanged()
	if _, err := p.CallTool(context.Background(), sdk.CallToolRequest{Name: "add"}); err != nil {
		t.Fatal(err)
	}
	wait(changed, "no change announced")
	md, _ := p.Metadata(context.Background(), sdk.MetadataRequest{})
	if len(md.Tools) != 3 || md.Tools[2].Name != "added" {
		t.Fatalf("tools after the change: %+v", md.Tools)
	}
}
