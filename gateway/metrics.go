package gateway

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/holdover-dev/holdover/ops"
)

// gatewayMetrics are the collectors only the gateway reports. Refused
// frames are counted in ops.Metrics.Errors under component "gateway".
type gatewayMetrics struct {
	connections prometheus.Gauge
	sessions    prometheus.Gauge
	frames      *prometheus.CounterVec
	dropped     prometheus.Counter
	fanOut      prometheus.Histogram
}

func newGatewayMetrics(m *ops.Metrics) *gatewayMetrics {
	f := promauto.With(m.Registry)
	return &gatewayMetrics{
		connections: f.NewGauge(prometheus.GaugeOpts{
			Namespace: "holdover", Subsystem: "gateway", Name: "connections",
			Help: "Open WebSocket connections.",
		}),
		sessions: f.NewGauge(prometheus.GaugeOpts{
			Namespace: "holdover", Subsystem: "gateway", Name: "watched_sessions",
			Help: "Sessions with at least one watching connection; each has one shared feed.",
		}),
		frames: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "holdover", Subsystem: "gateway", Name: "client_frames_total",
			Help: "Frames received from Clients, by frame type.",
		}, []string{"type"}),
		dropped: f.NewCounter(prometheus.CounterOpts{
			Namespace: "holdover", Subsystem: "gateway", Name: "slow_clients_total",
			Help: "Connections closed because the Client fell too far behind the frames sent to it.",
		}),
		fanOut: f.NewHistogram(prometheus.HistogramOpts{
			Namespace: "holdover", Subsystem: "gateway", Name: "request_fanout_seconds",
			Help:    "Time from a Remote Event request reaching the gateway to its frame being queued for every watching connection.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 16),
		}),
	}
}
