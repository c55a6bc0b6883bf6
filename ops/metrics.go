package ops

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/holdover-dev/holdover"
)

// Metrics are the Prometheus collectors of one process. They live on a
// registry of their own, so two components (or two tests) in one process
// never collide in the global default registry.
//
// To add a metric, add a field here and one line in [NewMetrics]; a
// component that wants a metric nobody else reads may instead register it
// with promauto.With(m.Registry).
type Metrics struct {
	// Registry is what /metrics serves.
	Registry *prometheus.Registry

	// EventsFolded counts Session events folded into the projection, by
	// consumer, including events read back to fill a gap.
	EventsFolded *prometheus.CounterVec
	// FoldLag is the time from an event being stored in the Session log to
	// its projection being written, by consumer.
	FoldLag *prometheus.HistogramVec
	// CatchUps counts Session log reads that filled a gap between the
	// stored projection and a delivered event, by consumer.
	CatchUps *prometheus.CounterVec
	// KVConflicts counts compare-and-set writes that lost to another
	// writer, by bucket.
	KVConflicts *prometheus.CounterVec
	// Errors counts failures and passed-over input by component and stable
	// error code.
	Errors *prometheus.CounterVec
}

// NewMetrics returns the process's collectors on a fresh registry that
// also carries the Go runtime and process collectors.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := promauto.With(reg)
	return &Metrics{
		Registry: reg,
		EventsFolded: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "holdover", Subsystem: "projection", Name: "events_folded_total",
			Help: "Session events folded into the userQuestions projection.",
		}, []string{"consumer"}),
		FoldLag: f.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "holdover", Subsystem: "projection", Name: "fold_lag_seconds",
			Help:    "Time from an event being stored in the Session log to its projection being written.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"consumer"}),
		CatchUps: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "holdover", Subsystem: "projection", Name: "catch_ups_total",
			Help: "Session log reads that filled a gap before a delivered event.",
		}, []string{"consumer"}),
		KVConflicts: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "holdover", Name: "kv_write_conflicts_total",
			Help: "KV compare-and-set writes that lost to a concurrent writer.",
		}, []string{"bucket"}),
		Errors: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "holdover", Name: "errors_total",
			Help: "Failures and passed-over input, by component and stable error code.",
		}, []string{"component", "code"}),
	}
}

// Error counts err for component under its stable code, INTERNAL when it
// carries none.
func (m *Metrics) Error(component string, err error) {
	m.Errors.WithLabelValues(component, string(holdover.Wire(err).Code)).Inc()
}
