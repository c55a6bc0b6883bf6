// Package embeddedtest starts a real embedded nats-server for a test, with
// the Holdover topology provisioned, and stops it when the test ends.
package embeddedtest

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

// Env is a running server, one client connection and the topology.
type Env struct {
	Server   *embedded.Server
	Conn     *nats.Conn
	JS       jetstream.JetStream
	Topology *streams.Topology
	// Auth holds the credentials of a server started by StartSecure, and
	// Tenant the tenant Conn and As connect to; nil and "" otherwise.
	Auth   *auth.Setup
	Tenant string
}

// StartSecure runs a file-backed server with authentication on, as
// `holdover dev` does, with an account for each of tenants (the first is
// the Env's; none means auth.DefaultTenant). Conn is that tenant's admin,
// which provisions the topology with cfg; every other part of a test
// connects with As, on its own role's credentials.
func StartSecure(t testing.TB, cfg streams.Config, tenants ...string) *Env {
	t.Helper()
	return StartSecureWith(t, cfg, auth.Limits{}, tenants...)
}

// StartSecureWith is StartSecure with limits on every tenant's account.
func StartSecureWith(t testing.TB, cfg streams.Config, limits auth.Limits, tenants ...string) *Env {
	t.Helper()
	if len(tenants) == 0 {
		tenants = []string{auth.DefaultTenant}
	}
	setup, err := auth.InitWith(t.TempDir(), limits, tenants...)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), MaxConsumers: -1, Auth: setup})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	env := &Env{Server: srv, Auth: setup, Tenant: tenants[0]}
	env.Conn, env.JS = env.As(t, auth.Admin)
	env.Topology, err = streams.Provision(context.Background(), env.JS, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// As opens a connection with role r's credentials in the Env's tenant,
// closed when the test ends. On an Env without auth it is Connect.
func (e *Env) As(t testing.TB, r auth.Role, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	if e.Auth == nil {
		return Connect(t, e.Server.ClientURL(), opts...)
	}
	return e.AsTenant(t, e.Tenant, r, opts...)
}

// AsTenant opens a connection with role r's credentials in tenant.
func (e *Env) AsTenant(t testing.TB, tenant string, r auth.Role, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	secure, err := ops.NATSConfig{Creds: e.Auth.Creds(tenant, r)}.Options()
	if err != nil {
		t.Fatal(err)
	}
	return Connect(t, e.Server.ClientURL(), append(secure, opts...)...)
}

// Start runs a file-backed server in a temporary folder, connects, and
// provisions the topology with cfg.
func Start(t testing.TB, cfg streams.Config) *Env {
	t.Helper()
	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), MaxConsumers: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	env := &Env{Server: srv}
	env.Conn, env.JS = Connect(t, srv.ClientURL())
	env.Topology, err = streams.Provision(context.Background(), env.JS, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// Connect opens a connection to url closed when the test ends.
func Connect(t testing.TB, url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// Leaks are the goleak options of a check that no goroutine outlives a
// part under test, in a test whose server runs in the same process: they
// pass over the goroutines of the server's consumers, which outlive the
// process that made them until NATS ends them (a lease, the release bound
// after its holder let go), and count from before ready, the goroutines
// of the test's own connections, each readied to make requests (its
// request subscription lives as long as it does).
func Leaks(t testing.TB, ready ...*nats.Conn) []goleak.Option {
	t.Helper()
	for _, nc := range ready {
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.AccountInfo(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return []goleak.Option{
		goleak.IgnoreCurrent(),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*consumer).loopAndGatherMsgs"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*consumer).processInboundAcks"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*consumer).processInboundNextMsgReqs"),
	}
}
