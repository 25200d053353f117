package graph

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// An interrupt's Block is read once and shared by the copies the engine
// makes of it; a copy whose Value was replaced reads its own; and what it
// gives is what message.UnmarshalBlock gives, errors included.
func TestInterruptBlockIsReadOnceAndStaysTrue(t *testing.T) {
	raw, err := message.MarshalBlock(message.RemoteToolCallBlock{ID: "c1", Name: "read", Arguments: json.RawMessage(`{ "a": 1 }`), Node: "tools"})
	if err != nil {
		t.Fatal(err)
	}
	it := Interrupt{ID: "c1", Value: raw, memo: new(blockMemo)}
	want, err := message.UnmarshalBlock(raw)
	if err != nil {
		t.Fatal(err)
	}
	first, err := it.Block()
	if err != nil || !reflect.DeepEqual(first, want) {
		t.Fatalf("Block() = %#v, %v; want %#v", first, err, want)
	}
	copied := it
	again, err := copied.Block()
	if err != nil || &again.(message.RemoteToolCallBlock).Arguments[0] != &first.(message.RemoteToolCallBlock).Arguments[0] {
		t.Fatalf("a copy decoded its interrupt again (or failed: %v)", err)
	}

	other, _ := message.MarshalBlock(message.ApprovalRequestBlock{ID: "c2", Name: "rm", Arguments: json.RawMessage(`{}`), Node: "tools"})
	copied.Value = other
	if b, err := copied.Block(); err != nil || b.BlockType() != message.TypeApprovalRequest {
		t.Fatalf("a copy with another Value read %#v, %v; want its own approval request", b, err)
	}
	if b, _ := it.Block(); b.BlockType() != message.TypeRemoteToolCall {
		t.Fatalf("the original now reads %s", b.BlockType())
	}

	bad := Answer{Value: json.RawMessage(`{"type":"tool_result","tool_call_id":"c1","extra":1}`), memo: new(blockMemo)}
	_, want2 := message.UnmarshalBlock(bad.Value)
	for range 2 {
		if _, err := bad.Block(); err == nil || want2 == nil || err.Error() != want2.Error() {
			t.Fatalf("Block() error %v, want UnmarshalBlock's %v", err, want2)
		}
	}
	if b, err := (Answer{Value: json.RawMessage(`{"type":"approval","tool_call_id":"c2","approved":true}`)}).Block(); err != nil || b.BlockType() != message.TypeApproval {
		t.Fatalf("an answer without a memo read %#v, %v", b, err)
	}
}
