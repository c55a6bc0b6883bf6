package ops

import (
	"log/slog"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdover-dev/holdover/auth"
)

// Origins admits the requests a process serves by where they came from
// (auth.CheckOrigin: an inbox of a role that may send them), and counts
// and logs each one it refuses. Every Holdover process that answers
// requests goes through one: the worker for its service, waits and
// discovery, an agent runtime for resume and discard requests, so a
// stored message that JetStream replays onto a request subject, or a
// request whose reply subject names a stream (NATS lets a responder
// publish one reply there past its deny rules), changes nothing.
type Origins struct {
	refused *prometheus.CounterVec
	log     *slog.Logger
}

// NewOrigins counts refusals in m's holdover_requests_refused_origin_total
// and logs them on log.
func NewOrigins(m *Metrics, log *slog.Logger) *Origins {
	return &Origins{refused: m.RefusedOrigin, log: log}
}

// Admit reports whether msg, a request to what (an endpoint or verb,
// the metric's label), may be served. A refused request must get no reply
// and change nothing: its reply subject, if any, is JetStream's or the
// sender's choice, not a requester's inbox.
func (o *Origins) Admit(what string, msg *nats.Msg) bool {
	err := auth.CheckOrigin(msg.Subject, msg.Reply)
	if err == nil {
		return true
	}
	o.refused.WithLabelValues(what).Inc()
	o.log.Warn("request refused for its origin", "endpoint", what, "subject", msg.Subject, "reply", msg.Reply, Err(err))
	return false
}
