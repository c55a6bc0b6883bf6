package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// The command serves the embedded UI and /healthz against a real server,
// /metrics only on --metrics-addr, and stops cleanly on its context.
func TestRunServesUntilStopped(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	require.NoError(t, os.WriteFile(tokens, []byte(`{"tokens":{"t":{"user":"ana","sessions":["*"]}}}`), 0o600))
	cfg := config{listen: freeAddr(t), metrics: freeAddr(t), tokens: tokens, nats: ops.NATSConfig{URL: env.Server.ClientURL()}}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, slog.New(slog.DiscardHandler)) }()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + cfg.listen + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 10*time.Millisecond)
	resp, err := http.Get("http://" + cfg.listen + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the web UI is served")
	for addr, want := range map[string]int{cfg.listen: http.StatusNotFound, cfg.metrics: http.StatusOK} {
		resp, err := http.Get("http://" + addr + "/metrics")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, "GET /metrics on %s", addr)
	}

	cancel()
	require.NoError(t, <-done)
}

func TestRunRefusesABadTokenFile(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	require.NoError(t, os.WriteFile(tokens, []byte(`{"tokens":{"t":{"user":"ana"}}}`), 0o600))
	err := run(context.Background(), config{listen: freeAddr(t), tokens: tokens}, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "lists no Sessions")
}
