// Package embeddedtest starts a real embedded nats-server for a test, with
// the Holdover topology provisioned, and stops it when the test ends.
package embeddedtest

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/streams"
)

// Env is a running server, one client connection and the topology.
type Env struct {
	Server   *embedded.Server
	Conn     *nats.Conn
	JS       jetstream.JetStream
	Topology *streams.Topology
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
