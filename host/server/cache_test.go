package server_test

import (
	"fmt"
	"testing"
)

// cache.max_bytes bounds the cache of decoded threads, and /metrics counts
// the threads it dropped to stay within it.
func TestThreadCacheMetrics(t *testing.T) {
	const budget = 4096
	e := start(t, setup{cache: map[string]any{"max_bytes": budget}})
	const (
		evictions = "tenxgraph_thread_cache_evictions_total"
		bytes     = "tenxgraph_thread_cache_bytes"
		threads   = "tenxgraph_thread_cache_threads"
	)
	m0 := e.metrics()
	for _, s := range []string{evictions, bytes, threads} {
		if _, ok := m0[s]; !ok {
			t.Fatalf("/metrics has no %s", s)
		}
	}
	const n = 10
	for i := range n {
		if r := e.invoke(runBody(fmt.Sprint("c", i), "hello")); r.Status != "completed" {
			t.Fatalf("run %d: %s", i, r.Status)
		}
	}
	m := e.metrics()
	if m[bytes] > budget || m[bytes] <= 0 {
		t.Errorf("%s = %v, want within (0, %d]", bytes, m[bytes], budget)
	}
	if m[threads] < 1 || m[threads] >= n {
		t.Errorf("%s = %v, want some of the %d threads", threads, m[threads], n)
	}
	if got := m[evictions] - m0[evictions]; got != n-m[threads] {
		t.Errorf("%s moved by %v, want %v (threads run minus threads kept)", evictions, got, n-m[threads])
	}
}
