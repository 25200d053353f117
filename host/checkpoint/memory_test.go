package checkpoint_test

import (
	"context"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/checkpoint/checkpointtest"
)

func TestMemory(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Checkpointer {
		return checkpoint.NewMemory()
	})
}

func TestMemoryRetention(t *testing.T) {
	checkpointtest.RunRetention(t, func(t *testing.T, opts ...checkpoint.Option) checkpoint.Checkpointer {
		return checkpoint.NewMemory(opts...)
	})
}

func TestMemoryUseAfterClose(t *testing.T) {
	ctx := context.Background()
	m := checkpoint.NewMemory()
	if err := m.Put(ctx, checkpoint.Checkpoint{ThreadID: "t", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := m.Put(ctx, checkpoint.Checkpoint{ThreadID: "t", Seq: 2}); err == nil {
		t.Error("Put after Close succeeded")
	}
	if _, err := m.Latest(ctx, "t"); err == nil {
		t.Error("Latest after Close succeeded")
	}
	if _, err := m.History(ctx, "t", 0); err == nil {
		t.Error("History after Close succeeded")
	}
	if err := m.DeleteThread(ctx, "t"); err == nil {
		t.Error("DeleteThread after Close succeeded")
	}
}
