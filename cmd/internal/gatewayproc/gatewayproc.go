// Package gatewayproc assembles a gateway process, shared by cmd/gateway
// and `holdover dev` so both serve exactly the same thing.
//
// It only wires parts together; the transport lives in package gateway.
package gatewayproc

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/gateway"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/web"
)

// Config configures a gateway process.
type Config struct {
	// Listener is where HTTP and WebSocket requests arrive; the
	// component closes it when it stops.
	Listener net.Listener
	// Tokens say who may connect and which Sessions each may use.
	Tokens *gateway.Tokens
	// Origins are extra browser origins allowed to open the WebSocket.
	Origins []string
	// ReleaseBound is how long a Client's claim outlives this gateway's
	// NATS connection.
	ReleaseBound time.Duration
	// Limits bound each connection and the connections not yet
	// authenticated.
	Limits gateway.Limits
	// Metrics is the process's registry; nil makes one for the gateway.
	Metrics *ops.Metrics
	// MetricsAddr, when set, is where /metrics and /healthz are served,
	// apart from the UI's Listener (which never serves /metrics). Empty
	// leaves them to the process (holdover dev serves its one registry).
	MetricsAddr string
	Logger      *slog.Logger
}

// DefaultMetricsAddr serves a gateway's metrics on loopback only, beside
// the question worker's 9464 and the notifier's 9466.
const DefaultMetricsAddr = "127.0.0.1:9465"

// Components returns the gateway as components of [ops.Run], in start
// order: its NATS connection, its metrics server when cfg.MetricsAddr is
// set, then the gateway. nc should have a reconnect wait of
// [gateway.DefaultReconnectWait]; the answerer the gateway uses lives as
// long as the gateway runs.
func Components(nc *nats.Conn, js jetstream.JetStream, cfg Config) []ops.Component {
	if cfg.Metrics == nil {
		cfg.Metrics = ops.NewMetrics()
	}
	out := []ops.Component{ops.NATSConnection(nc)}
	if cfg.MetricsAddr != "" {
		out = append(out, ops.HTTPServer("gateway-metrics", cfg.MetricsAddr, ops.Handler(cfg.Metrics, ops.NATSConnected(nc)), cfg.Logger))
	}
	return append(out, ops.Component{Name: "gateway", Run: func(ctx context.Context, ready func()) error {
		defer cfg.Listener.Close()
		ans, err := answerer.New(nc, answerer.Config{ReleaseBound: cfg.ReleaseBound, Log: cfg.Logger})
		if err != nil {
			return err
		}
		defer ans.Close()
		srv, err := gateway.New(gateway.Config{
			NATS:           nc,
			JetStream:      js,
			Tokens:         cfg.Tokens,
			Services:       []gateway.Service{gateway.UserQuestions(ans), gateway.Sessions()},
			Files:          web.Files(),
			OriginPatterns: cfg.Origins,
			Limits:         cfg.Limits,
			Metrics:        cfg.Metrics,
			Logger:         cfg.Logger,
		})
		if err != nil {
			return err
		}
		return srv.Run(ctx, cfg.Listener, ready)
	}})
}
