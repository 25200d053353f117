package server

import (
	"net/http"

	"github.com/tenxgraph/tenxgraph/host/toolnode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

// metrics are the server's Prometheus series. Each server has its own
// registry, so several servers in one process (tests) do not collide.
type metrics struct {
	reg       *prometheus.Registry
	runs      *prometheus.CounterVec
	pauses    prometheus.Counter
	resumes   prometheus.Counter
	toolCalls *prometheus.CounterVec
	toolTime  *prometheus.HistogramVec
	ignored   prometheus.Counter
	expired   prometheus.Counter
}

func newMetrics(app *thread.App) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tenxgraph_runs_total",
			Help: "Runs by outcome: completed, interrupted, refused (a 4xx: nothing changed) or failed."}, []string{"outcome"}),
		pauses: prometheus.NewCounter(prometheus.CounterOpts{Name: "tenxgraph_pauses_total",
			Help: "Runs that paused for remote tool calls."}),
		resumes: prometheus.NewCounter(prometheus.CounterOpts{Name: "tenxgraph_resumes_total",
			Help: "Runs that continued a paused or stopped thread."}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tenxgraph_tool_calls_total",
			Help: "Server tool calls by provider and outcome (ok, error)."}, []string{"provider", "outcome"}),
		toolTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tenxgraph_tool_call_duration_seconds",
			Help: "Server tool call latency by provider.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"provider"}),
		ignored: prometheus.NewCounter(prometheus.CounterOpts{Name: "tenxgraph_client_tools_ignored_total",
			Help: "Per-run client tools left out because their name was taken."}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{Name: "tenxgraph_remote_calls_expired_total",
			Help: "Remote tool calls the client did not answer in time, answered with an error result by this server."}),
	}
	m.reg.MustRegister(m.runs, m.pauses, m.resumes, m.toolCalls, m.toolTime, m.ignored, m.expired,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tenxgraph_thread_cache_evictions_total",
			Help: "Threads dropped from the cache of decoded threads to stay within cache.max_bytes."},
			func() float64 { return float64(app.CacheStats().Evictions) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tenxgraph_thread_cache_bytes",
			Help: "Estimated memory of the threads in the cache (bounded by cache.max_bytes)."},
			func() float64 { return float64(app.CacheStats().Bytes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tenxgraph_thread_cache_threads",
			Help: "Threads in the cache of decoded threads."},
			func() float64 { return float64(app.CacheStats().Threads) }))
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// observe counts what an event says happened.
func (m *metrics) observe(ev graph.Event) {
	switch d := ev.Data.(type) {
	case graph.RunStarted:
		if d.Resumed {
			m.resumes.Inc()
		}
	case toolnode.ToolEvent:
		if ev.Type != toolnode.EventToolFinished {
			return
		}
		outcome := "ok"
		if d.IsError {
			outcome = "error"
		}
		m.toolCalls.WithLabelValues(d.Provider, outcome).Inc()
		m.toolTime.WithLabelValues(d.Provider).Observe(d.Duration.Seconds())
	case toolnode.ToolIgnored:
		m.ignored.Inc()
	case toolnode.RemoteCallExpired:
		m.expired.Inc()
	}
}

// finished counts a run's outcome.
func (m *metrics) finished(res graph.Result, err error) {
	switch {
	case err != nil:
		if code, body := errorBody(err); body.Error.Code == "run_cancelled" {
			m.runs.WithLabelValues("cancelled").Inc()
		} else if code < 500 {
			m.runs.WithLabelValues("refused").Inc()
		} else {
			m.runs.WithLabelValues("failed").Inc()
		}
	case res.Status == graph.StatusInterrupted:
		m.runs.WithLabelValues("interrupted").Inc()
		m.pauses.Inc()
	default:
		m.runs.WithLabelValues(string(res.Status)).Inc()
	}
}
