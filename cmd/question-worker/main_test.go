package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/cmd/internal/proctest"
	"github.com/holdover-dev/holdover/cmd/internal/questionworker"
	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/streams"
)

// The worker provisions the topology on a bare server, joins the shared
// projection consumer, and stops cleanly when asked (SIGTERM).
func TestRunProvisionsAndStopsCleanly(t *testing.T) {
	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, ops.NATSConfig{URL: srv.ClientURL()}, questionworker.Config{
			MetricsAddr: "127.0.0.1:0",
			Streams:     streams.Config{Memory: true},
			Logger:      slog.New(slog.DiscardHandler),
		})
	}()
	_, js := embeddedtest.Connect(t, srv.ClientURL())
	require.Eventually(t, func() bool {
		_, err := js.Consumer(ctx, streams.SessionsStream, projection.DefaultDurable)
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "the worker joins the projection consumer")
	cancel()
	require.NoError(t, <-done)
}

// A worker with worker credentials may not provision: it is refused at
// start, before NATS would leave its requests unanswered (issue 10).
func TestProvisionNeedsAdminCredentials(t *testing.T) {
	setup, err := auth.Init(t.TempDir())
	require.NoError(t, err)
	err = checkProvision(ops.NATSConfig{Creds: setup.Creds(auth.DefaultTenant, auth.Worker)}, true)
	require.ErrorContains(t, err, "worker credentials may not provision")
	require.NoError(t, checkProvision(ops.NATSConfig{Creds: setup.Creds(auth.DefaultTenant, auth.Worker)}, false))
	require.NoError(t, checkProvision(ops.NATSConfig{Creds: setup.Creds(auth.DefaultTenant, auth.Admin)}, true))
	require.NoError(t, checkProvision(ops.NATSConfig{}, true), "no credentials: no authentication, anyone provisions")
}

// --replicas 3 against a server that runs alone stops the worker at start
// with what the replicas need (issue 22).
func TestRunRefusesMoreReplicasThanServers(t *testing.T) {
	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	err = run(context.Background(), ops.NATSConfig{URL: srv.ClientURL()}, questionworker.Config{
		MetricsAddr: "127.0.0.1:0",
		Streams:     streams.Config{Replicas: 3},
		Logger:      slog.New(slog.DiscardHandler),
	})
	require.ErrorContains(t, err, "3 replicas need a NATS cluster of at least 3 JetStream servers, and this server runs alone")
}

// A worker process rides out a restart of its NATS server: not ready on
// /healthz while it is down, ready again by itself once it is back
// (issue 22).
func TestWorkerProcessRidesOutAServerRestart(t *testing.T) {
	opts := embedded.Options{StoreDir: t.TempDir(), Port: proctest.FreePort(t)}
	srv, err := embedded.Start(opts)
	require.NoError(t, err)
	metrics := proctest.FreeAddr(t)
	worker := proctest.Start(t, proctest.Build(t, "question-worker"), "--nats", srv.ClientURL(), "--metrics-addr", metrics)
	proctest.RidesOutAServerRestart(t, worker, "http://"+metrics+"/healthz", srv, opts)
}

// A worker process on a cluster that loses its quorum is not ready on
// /healthz while it has none, and ready again by itself once it is back
// (issue 22).
func TestWorkerProcessRidesOutALostQuorum(t *testing.T) {
	c := proctest.StartCluster(t, 3)
	metrics := proctest.FreeAddr(t)
	proctest.Start(t, proctest.Build(t, "question-worker"), "--nats", c.URL(0), "--metrics-addr", metrics, "--provision=false")
	proctest.RidesOutALostQuorum(t, "http://"+metrics+"/healthz", c)
}
