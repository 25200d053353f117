package service

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
)

// sweeper deletes the threads left idle for longer than checkpointer.idle_ttl,
// in the background, until stopped.
type sweeper struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// sweepBatch bounds one DeleteIdle call, so a store with a backlog is
// emptied in steps that never hold it for long.
const sweepBatch = 500

// sweepEvery is how often the sweeper looks for idle threads: a tenth of
// the TTL, within a second and an hour, so a thread outlives its TTL by at
// most about a tenth of it.
func sweepEvery(ttl time.Duration) time.Duration {
	return min(max(ttl/10, time.Second), time.Hour)
}

// startSweeper starts a sweeper for ttl > 0; none (nil) for ttl 0.
func startSweeper(pr checkpoint.Pruner, ttl time.Duration, log hclog.Logger) *sweeper {
	if ttl <= 0 {
		return nil
	}
	if log == nil {
		log = DefaultLogger()
	}
	log = log.Named("retention")
	ctx, cancel := context.WithCancel(context.Background())
	sw := &sweeper{cancel: cancel}
	sw.done.Add(1)
	go func() {
		defer sw.done.Done()
		t := time.NewTicker(sweepEvery(ttl))
		defer t.Stop()
		for {
			if n, err := DeleteIdle(ctx, pr, time.Now().Add(-ttl)); err != nil && ctx.Err() == nil {
				log.Warn("deleting idle threads failed; trying again later", "error", err)
			} else if n > 0 {
				log.Info("deleted idle threads", "threads", n, "idle_ttl", ttl)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return sw
}

// DeleteIdle deletes every thread of the store last written before cutoff
// (and held by no run), a batch at a time, and returns how many it
// deleted: the sweeper of checkpointer.idle_ttl and `store compact
// --delete-idle` both use it.
func DeleteIdle(ctx context.Context, pr checkpoint.Pruner, cutoff time.Time) (int, error) {
	total := 0
	for {
		n, err := pr.DeleteIdle(ctx, cutoff, sweepBatch)
		total += n
		if err != nil {
			return total, fmt.Errorf("after %d threads: %w", total, err)
		}
		if n < sweepBatch {
			return total, nil
		}
	}
}

// stop ends the sweeper and waits for a sweep under way; nil-safe.
func (sw *sweeper) stop() {
	if sw == nil {
		return
	}
	sw.cancel()
	sw.done.Wait()
}
