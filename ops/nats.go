package ops

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSConfig says how a process reaches NATS. Flags default to the
// HOLDOVER_NATS_URL and HOLDOVER_NATS_CREDS environment variables, so a
// container can be configured either way.
type NATSConfig struct {
	URL string
	// Creds is a NATS credentials file; empty connects without one.
	Creds string
}

// RegisterFlags adds --nats and --creds to fs.
func (c *NATSConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.URL, "nats", envOr("HOLDOVER_NATS_URL", nats.DefaultURL), "NATS server URL(s), comma separated (env HOLDOVER_NATS_URL)")
	fs.StringVar(&c.Creds, "creds", os.Getenv("HOLDOVER_NATS_CREDS"), "NATS credentials file (env HOLDOVER_NATS_CREDS)")
}

// Connect opens a connection named name that reconnects forever and logs
// every disconnect and reconnect. Options in extra come after these
// defaults and so override them (the gateway's shorter reconnect wait).
func (c NATSConfig) Connect(name string, logger *slog.Logger, extra ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: this process closed the connection
				logger.Warn("disconnected from NATS", Err(err))
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			logger.Info("reconnected to NATS", "url", nc.ConnectedUrlRedacted())
		}),
	}
	if c.Creds != "" {
		opts = append(opts, nats.UserCredentials(c.Creds))
	}
	opts = append(opts, extra...)
	nc, err := nats.Connect(c.URL, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to NATS at %s: %w", c.URL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("open JetStream at %s: %w", c.URL, err)
	}
	return nc, js, nil
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
