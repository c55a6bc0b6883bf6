package ops

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/auth"
)

// NATSConfig says how a process reaches NATS. Flags default to the
// HOLDOVER_NATS_URL and HOLDOVER_NATS_CREDS environment variables, so a
// container can be configured either way.
type NATSConfig struct {
	URL string
	// Creds is a NATS credentials file; empty connects without one. One
	// written by `holdover auth init` names its role, and the connection
	// then takes that role's inbox prefix (auth.Role.InboxPrefix), the
	// only reply subjects its permissions let it subscribe to.
	Creds string
	// TLSCA, TLSCert and TLSKey are PEM files: the authority the server's
	// certificate must chain to, and this client's certificate and key
	// when the server asks for one. Empty leaves TLS to the URL's scheme.
	TLSCA, TLSCert, TLSKey string
}

// RegisterFlags adds --nats, --creds and the TLS flags to fs.
func (c *NATSConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.URL, "nats", envOr("HOLDOVER_NATS_URL", nats.DefaultURL), "NATS server URL(s), comma separated (env HOLDOVER_NATS_URL)")
	fs.StringVar(&c.Creds, "creds", os.Getenv("HOLDOVER_NATS_CREDS"), "NATS credentials file (env HOLDOVER_NATS_CREDS); `holdover auth init` writes one per role")
	fs.StringVar(&c.TLSCA, "tls-ca", os.Getenv("HOLDOVER_NATS_TLS_CA"), "PEM file of the authority NATS servers' certificates must chain to (env HOLDOVER_NATS_TLS_CA)")
	fs.StringVar(&c.TLSCert, "tls-cert", os.Getenv("HOLDOVER_NATS_TLS_CERT"), "PEM client certificate for NATS servers that ask for one (env HOLDOVER_NATS_TLS_CERT)")
	fs.StringVar(&c.TLSKey, "tls-key", os.Getenv("HOLDOVER_NATS_TLS_KEY"), "PEM key of --tls-cert (env HOLDOVER_NATS_TLS_KEY)")
}

// Options are the nats.go options of the credentials and TLS files.
func (c NATSConfig) Options() ([]nats.Option, error) {
	var opts []nats.Option
	if c.Creds != "" {
		role, err := auth.RoleOf(c.Creds)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.UserCredentials(c.Creds))
		if role != "" {
			opts = append(opts, nats.CustomInboxPrefix(role.InboxPrefix()))
		}
	}
	if c.TLSCA != "" {
		opts = append(opts, nats.RootCAs(c.TLSCA))
	}
	switch {
	case c.TLSCert != "" && c.TLSKey != "":
		opts = append(opts, nats.ClientCert(c.TLSCert, c.TLSKey))
	case c.TLSCert != "" || c.TLSKey != "":
		return nil, holdover.New(holdover.CodeBadRequest, "--tls-cert and --tls-key go together")
	}
	return opts, nil
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
		// A refusal by the server arrives here and nowhere else (a refused
		// request just waits): a permissions violation means this process's
		// credentials lack a right the code needs, so say so loudly.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if sub != nil {
				logger.Error("NATS refused or dropped a subscription's messages", "subject", sub.Subject, Err(err))
				return
			}
			logger.Error("NATS refused an operation", Err(err))
		}),
	}
	secure, err := c.Options()
	if err != nil {
		return nil, nil, err
	}
	opts = append(opts, secure...)
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

// NATSConnection is a process's connection nc as a component: ready at
// once, it fails when nc closes for good, so that the process exits
// instead of serving nothing. A connection made by Connect reconnects
// forever: it closes only when the server refuses it on a reconnect (its
// credentials, twice in a row) or when the process closes it.
func NATSConnection(nc *nats.Conn) Component {
	return Component{Name: "nats " + nc.Opts.Name, Run: func(ctx context.Context, ready func()) error {
		closed := nc.StatusChanged(nats.CLOSED)
		defer nc.RemoveStatusListener(closed)
		if !nc.IsClosed() {
			ready()
			select {
			case <-ctx.Done():
				return nil
			case <-closed:
			}
		}
		return holdover.Wrap(cmp.Or(nc.LastError(), nats.ErrConnectionClosed), holdover.CodeInternal, "the NATS connection closed for good")
	}}
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
