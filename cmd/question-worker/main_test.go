package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
