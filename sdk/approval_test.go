package sdk_test

import (
	"context"
	"encoding/json"
	"strings"
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

// RequiresApproval marks a typed tool, and only that one, as needing a
// person's approval, on the host's side of the plugin boundary.
func TestRequiresApprovalOption(t *testing.T) {
	type sendArgs struct {
		To string `json:"to" jsonschema:"the address"`
	}
	send := sdk.MustTool("send_mail", "Sends a mail.", func(_ context.Context, in sendArgs) (string, error) { return "sent to " + in.To, nil },
		sdk.RequiresApproval(), sdk.WithProperty("to", `{"minLength": 3}`))
	draft := sdk.MustTool("draft_mail", "Drafts a mail.", func(_ context.Context, in sendArgs) (string, error) { return "drafted", nil })
	p := sdktest.Serve(t, sdk.MustTools("mail", "1", send, draft))
	md, err := p.Metadata(context.Background(), sdk.MetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range md.Tools {
		got[s.Name] = s.RequiresApproval
	}
	if !got["send_mail"] || got["draft_mail"] || len(got) != 2 {
		t.Fatalf("requires_approval by tool: %v", got)
	}
	// The option leaves the schema to the others.
	if msg := sdktest.ErrorText(t, sdktest.Call(t, p, "send_mail", sendArgs{To: "a"})); !strings.Contains(msg, "/to") {
		t.Errorf("a too short address: %s", msg)
	}
}
