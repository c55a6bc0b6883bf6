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
// through [Metrics.Collectors].
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
	// ReservationMarkers counts the markers the projection worker wrote on
	// reply subjects, by marker (released, restored).
	ReservationMarkers *prometheus.CounterVec
	// KVConflicts counts compare-and-set writes that lost to another
	// writer, by bucket.
	KVConflicts *prometheus.CounterVec
	// Errors counts failures and passed-over input by component and stable
	// error code.
	Errors *prometheus.CounterVec
	// EventsRejected counts Session events the question fold could not use,
	// by event type (known types, else "unknown") and reason.
	EventsRejected *prometheus.CounterVec
	// RefusedOrigin counts requests refused for their origin, by endpoint
	// ([Origins]).
	RefusedOrigin *prometheus.CounterVec
}

// NewMetrics returns the process's collectors on a fresh registry that
// also carries the Go runtime and process collectors.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{Registry: reg}
	projection, all := m.Collectors("projection"), m.Collectors("")
	m.EventsFolded = projection.CounterVec("events_folded_total", "Session events folded into the userQuestions projection.", "consumer")
	m.FoldLag = projection.HistogramVec("fold_lag_seconds", "Time from an event being stored in the Session log to its projection being written.",
		prometheus.ExponentialBuckets(0.0005, 2, 16), "consumer")
	m.CatchUps = projection.CounterVec("catch_ups_total", "Session log reads that filled a gap before a delivered event.", "consumer")
	m.ReservationMarkers = projection.CounterVec("reservation_markers_total", "Markers written on late-reply subjects after the Session log released a reply or restored a released one (D8).", "marker")
	m.KVConflicts = all.CounterVec("kv_write_conflicts_total", "KV compare-and-set writes that lost to a concurrent writer.", "bucket")
	m.Errors = all.CounterVec("errors_total", "Failures and passed-over input, by component and stable error code.", "component", "code")
	m.EventsRejected = all.CounterVec("events_rejected_total", "Session events the question fold could not use, by event type and reason (undecodable, invalid_body, tool_schema_key, invalid_arguments); and, under type askTimed, the timed waits ended unanswered for a call the log does not track, by reason (no_log: went pending, logged at info; no_call, invalid_arguments, legacy_header, call_ended: refused UNTRACKED_CALL instead of pending).", "type", "reason")
	m.RefusedOrigin = all.CounterVec("requests_refused_origin_total", "Requests refused for their origin, by endpoint: the worker's service endpoints, its waits' abort and status and its discovery (PING, INFO, STATS); an agent runtime's resume and discard. Each was a stored message that a JetStream consumer or direct get replayed there, a request replying to anything but an inbox, or one from a role that may not send it (docs/permissions.md, \"Indirect paths\"). Nothing changed and no reply was sent.", "endpoint")
	return m
}

// Collectors makes collectors on m's registry named
// holdover_<subsystem>_<name> (holdover_<name> for subsystem ""): the one
// place that spells the namespace, for NewMetrics and for a component's
// own metrics.
func (m *Metrics) Collectors(subsystem string) Collectors {
	return Collectors{f: promauto.With(m.Registry), subsystem: subsystem}
}

// Collectors registers collectors of one subsystem; see [Metrics.Collectors].
type Collectors struct {
	f         promauto.Factory
	subsystem string
}

func (c Collectors) opts(name, help string) prometheus.Opts {
	return prometheus.Opts{Namespace: "holdover", Subsystem: c.subsystem, Name: name, Help: help}
}

// Counter registers a counter.
func (c Collectors) Counter(name, help string) prometheus.Counter {
	return c.f.NewCounter(prometheus.CounterOpts(c.opts(name, help)))
}

// CounterVec registers a counter with labels.
func (c Collectors) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return c.f.NewCounterVec(prometheus.CounterOpts(c.opts(name, help)), labels)
}

// Gauge registers a gauge.
func (c Collectors) Gauge(name, help string) prometheus.Gauge {
	return c.f.NewGauge(prometheus.GaugeOpts(c.opts(name, help)))
}

// Histogram registers a histogram with buckets.
func (c Collectors) Histogram(name, help string, buckets []float64) prometheus.Histogram {
	o := c.opts(name, help)
	return c.f.NewHistogram(prometheus.HistogramOpts{Namespace: o.Namespace, Subsystem: o.Subsystem, Name: o.Name, Help: o.Help, Buckets: buckets})
}

// HistogramVec registers a histogram with buckets and labels.
func (c Collectors) HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	o := c.opts(name, help)
	return c.f.NewHistogramVec(prometheus.HistogramOpts{Namespace: o.Namespace, Subsystem: o.Subsystem, Name: o.Name, Help: o.Help, Buckets: buckets}, labels)
}

// Error counts err for component under its stable code, INTERNAL when it
// carries none.
func (m *Metrics) Error(component string, err error) {
	m.Errors.WithLabelValues(component, string(holdover.Wire(err).Code)).Inc()
}
