package gateway

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdover-dev/holdover/ops"
)

// gatewayMetrics are the collectors only the gateway reports, made with
// ops' helpers on the process registry. Refused frames are counted in
// ops.Metrics.Errors under component "gateway".
type gatewayMetrics struct {
	connections prometheus.Gauge
	sessions    prometheus.Gauge
	frames      *prometheus.CounterVec
	dropped     prometheus.Counter
	queuedBytes prometheus.Gauge
	// unauthenticated are the connections that have not said hello yet;
	// unauthRefused those refused at the upgrade for too many of them.
	unauthenticated prometheus.Gauge
	unauthRefused   *prometheus.CounterVec
	fanOut          prometheus.Histogram
	// sentFrames over sentMessages is how many frames a WebSocket message
	// carried on average: 1 for protocol 1 Clients and an idle gateway,
	// more under a burst (protocol 2 batches).
	sentFrames   prometheus.Counter
	sentMessages prometheus.Counter
}

func newGatewayMetrics(m *ops.Metrics) *gatewayMetrics {
	c := m.Collectors("gateway")
	return &gatewayMetrics{
		connections:     c.Gauge("connections", "Open WebSocket connections."),
		sessions:        c.Gauge("watched_sessions", "Sessions with at least one watching connection; each has one shared feed."),
		frames:          c.CounterVec("client_frames_total", "Frames received from Clients, by frame type.", "type"),
		dropped:         c.Counter("slow_clients_total", "Connections closed because the Client stopped reading: a live frame found its send queue full, or a write waited past the write timeout."),
		unauthenticated: c.Gauge("unauthenticated_connections", "WebSocket connections that have not said hello yet."),
		unauthRefused: c.CounterVec("unauthenticated_refused_total",
			"Connections refused at the upgrade because too many had not said hello yet: scope global (503) or ip, from one remote address (429).", "scope"),
		queuedBytes:  c.Gauge("send_queue_bytes", "Bytes of frames waiting to be written to Clients, every connection together; each connection holds at most its send queue's bound."),
		sentFrames:   c.Counter("sent_frames_total", "Frames written to Clients."),
		sentMessages: c.Counter("sent_messages_total", "WebSocket messages written to Clients; a protocol 2 message may carry several frames."),
		fanOut: c.Histogram("request_fanout_seconds",
			"Time from a Remote Event request reaching the gateway to its frame being queued for every watching connection.",
			prometheus.ExponentialBuckets(0.00005, 2, 16)),
	}
}
