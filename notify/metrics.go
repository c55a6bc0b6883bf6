package notify

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdover-dev/holdover/ops"
)

// notifyMetrics are the collectors only the notifier reports, on the
// process registry. Dead letters are also counted in ops'
// holdover_errors_total under component "notify".
type notifyMetrics struct {
	delivered, retried, deadLettered *prometheus.CounterVec
	seeds                            prometheus.Counter
	lag                              prometheus.Histogram
}

func newNotifyMetrics(m *ops.Metrics) *notifyMetrics {
	c := m.Collectors("notify")
	nm := &notifyMetrics{
		delivered:    c.CounterVec("delivered_total", "Notifications a webhook accepted (2xx), by kind; each webhook counts once.", "kind"),
		retried:      c.CounterVec("retried_total", "Failed webhook attempts that are tried again after a back-off, by kind.", "kind"),
		deadLettered: c.CounterVec("dead_lettered_total", "Notifications given up on for one webhook (attempts spent or refused), by kind.", "kind"),
		seeds:        c.Counter("seeds_total", "Session Views caught up from the log: on first sight of a Session, after a gap (another notifier took the events between), or for a redelivered event."),
		lag: c.Histogram("lag_seconds", "Time from a Session event being stored to its last notification being settled at every webhook.",
			prometheus.ExponentialBuckets(0.001, 2, 16)),
	}
	for _, k := range Kinds { // every series exists from the start, at 0
		nm.delivered.WithLabelValues(string(k))
		nm.retried.WithLabelValues(string(k))
		nm.deadLettered.WithLabelValues(string(k))
	}
	return nm
}
