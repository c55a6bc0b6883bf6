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
	Logger       *slog.Logger
}

// Component returns the gateway as one component of [ops.Run]. nc should
// have a reconnect wait of [gateway.DefaultReconnectWait]; the answerer
// the gateway uses lives as long as the component runs.
func Component(nc *nats.Conn, js jetstream.JetStream, cfg Config) ops.Component {
	return ops.Component{Name: "gateway", Run: func(ctx context.Context) error {
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
			Logger:         cfg.Logger,
		})
		if err != nil {
			return err
		}
		return srv.Serve(ctx, cfg.Listener)
	}}
}
