package sdk_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/sdktest"
)

// A tool a provider marks RequiresApproval is marked so on the host's side
// of the plugin boundary, and the others are not.
func TestRequiresApprovalCrossesThePluginBoundary(t *testing.T) {
	del := sdk.Func("delete_all", "Deletes everything.", nil, func(context.Context, json.RawMessage) (any, error) { return "gone", nil })
	del.Spec.RequiresApproval = true
	look := sdk.Func("look", "Looks.", nil, func(context.Context, json.RawMessage) (any, error) { return "seen", nil })
	p := sdktest.Serve(t, sdk.MustTools("p", "1", del, look))
	md, err := p.Metadata(context.Background(), sdk.MetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range md.Tools {
		got[s.Name] = s.RequiresApproval
	}
	if !got["delete_all"] || got["look"] || len(got) != 2 {
		t.Fatalf("requires_approval by tool: %v", got)
	}
}
