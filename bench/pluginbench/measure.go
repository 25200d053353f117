package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// measureLatency times every serial call of every path. After each path's
// warm-up, the timed calls run in blocks of block calls per path, the paths
// taking turns (and rotating who goes first), so that the machine's drifts
// in speed fall on all paths alike and the paths can be compared.
func measureLatency(ctx context.Context, paths []*callPath, warmup, calls, block int) error {
	for _, p := range paths {
		for range warmup {
			if err := p.call(ctx); err != nil {
				return fmt.Errorf("%s: %w", p.short, err)
			}
		}
		p.lat = make([]time.Duration, 0, calls)
	}
	for round := 0; len(paths[0].lat) < calls; round++ {
		k := min(block, calls-len(paths[0].lat))
		for j := range paths {
			p := paths[(round+j)%len(paths)]
			for range k {
				t0 := time.Now()
				err := p.call(ctx)
				d := time.Since(t0)
				if err != nil {
					return fmt.Errorf("%s: %w", p.short, err)
				}
				p.lat = append(p.lat, d)
			}
		}
	}
	return nil
}

// measureThroughput gives each path's calls/s with callers concurrent
// callers in a closed loop. After each path's warm-up, the d of each path
// is cut into slices of about slice, the paths taking turns, for the same
// reason as the latency blocks.
func measureThroughput(ctx context.Context, paths []*callPath, callers int, warm, d, slice time.Duration) error {
	for _, p := range paths {
		if _, _, err := closedLoop(ctx, p.call, callers, warm); err != nil {
			return fmt.Errorf("%s: %w", p.short, err)
		}
	}
	k := max(1, int(d/slice))
	calls := make([]int64, len(paths))
	took := make([]time.Duration, len(paths))
	for round := range k {
		for j := range paths {
			i := (round + j) % len(paths)
			n, el, err := closedLoop(ctx, paths[i].call, callers, d/time.Duration(k))
			if err != nil {
				return fmt.Errorf("%s: %w", paths[i].short, err)
			}
			calls[i] += n
			took[i] += el
		}
	}
	for i, p := range paths {
		p.tput = append(p.tput, float64(calls[i])/took[i].Seconds())
	}
	return nil
}

// loadRun is the load put on builtin or remote before their second RSS
// reading.
type loadRun struct {
	name, call string
	rate       float64
}

// loadProviders calls builtin's calculator and a quickstart remote tool
// through pluginhost with 64 callers, so the second RSS reading of those
// two is taken after work, as for the echo plugins.
func (lp *longLived) loadProviders(ctx context.Context, warm, d time.Duration) ([]loadRun, error) {
	if d == 0 {
		return nil, nil
	}
	calc := sdk.CallToolRequest{Name: "calculator", Arguments: json.RawMessage(`{"expression":"2+3*4"}`)}
	clip := &sdk.ToolSpec{Name: "read_clipboard", Description: "Read the current clipboard text.",
		Parameters: json.RawMessage(`{"type":"object","properties":{},"required":[]}`)}
	deferred := sdk.CallToolRequest{Name: "read_clipboard", Arguments: json.RawMessage(`{}`), RunTool: clip}
	runs := []struct {
		lr   loadRun
		call func(context.Context) error
	}{
		{loadRun{name: "builtin", call: "`calculator` {\"expression\":\"2+3*4\"}"}, func(ctx context.Context) error {
			resp, err := lp.pr.builtin.CallTool(ctx, calc)
			if err == nil && (resp.IsError || !bytes.Contains(resp.Content, []byte("14"))) {
				err = fmt.Errorf("calculator returned %s", resp.Content)
			}
			return err
		}},
		{loadRun{name: "remote", call: "`read_clipboard` {} with its spec (schema compiled and checked, call deferred)"}, func(ctx context.Context) error {
			resp, err := lp.pr.remote.CallTool(ctx, deferred)
			if err == nil && !resp.Deferred {
				err = fmt.Errorf("the remote bridge did not defer the call: %+v", resp)
			}
			return err
		}},
	}
	var out []loadRun
	for _, r := range runs {
		progress("load: %s, 64 callers, %v", r.lr.name, d)
		rate, err := throughput(ctx, r.call, 64, warm, d)
		if err != nil {
			return nil, fmt.Errorf("load on %s: %w", r.lr.name, err)
		}
		r.lr.rate = rate
		out = append(out, r.lr)
	}
	return out, nil
}

// throughput is calls/s of one call with callers concurrent callers in a
// closed loop for d, after an untimed warm-up.
func throughput(ctx context.Context, call func(context.Context) error, callers int, warm, d time.Duration) (float64, error) {
	if _, _, err := closedLoop(ctx, call, callers, warm); err != nil {
		return 0, err
	}
	n, el, err := closedLoop(ctx, call, callers, d)
	if err != nil {
		return 0, err
	}
	return float64(n) / el.Seconds(), nil
}

// closedLoop runs callers goroutines, each calling as soon as its previous
// call is answered, for d; it returns the calls answered and the time from
// the first call to the last answer.
func closedLoop(ctx context.Context, call func(context.Context) error, callers int, d time.Duration) (int64, time.Duration, error) {
	if d <= 0 {
		return 0, 0, nil
	}
	var stop atomic.Bool
	var total atomic.Int64
	var errOnce sync.Once
	var firstErr error
	var wg sync.WaitGroup
	t0 := time.Now()
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int64
			for !stop.Load() {
				if err := call(ctx); err != nil {
					errOnce.Do(func() { firstErr = err })
					stop.Store(true)
					break
				}
				n++
			}
			total.Add(n)
		}()
	}
	timer := time.NewTimer(d)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
	}
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(t0)
	if firstErr != nil {
		return 0, 0, firstErr
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	return total.Load(), elapsed, nil
}

// quantile is the nearest-rank q-quantile of ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}
