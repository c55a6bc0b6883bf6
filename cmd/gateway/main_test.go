package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/cmd/internal/proctest"
	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

// The command serves the embedded UI and /healthz against a real server,
// /metrics only on --metrics-addr, and stops cleanly on its context.
func TestRunServesUntilStopped(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	require.NoError(t, os.WriteFile(tokens, []byte(`{"tokens":{"t":{"user":"ana","sessions":["*"]}}}`), 0o600))
	cfg := config{listen: proctest.FreeAddr(t), metrics: proctest.FreeAddr(t), tokens: tokens, nats: ops.NATSConfig{URL: env.Server.ClientURL()}}

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
	err := run(context.Background(), config{listen: proctest.FreeAddr(t), tokens: tokens}, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "lists no Sessions")
}

// A gateway process rides out a restart of its NATS server: not ready on
// /healthz while it is down, ready again by itself once it is back
// (issue 22).
func TestGatewayProcessRidesOutAServerRestart(t *testing.T) {
	opts, srv, gw, listen := gatewayOnAServer(t)
	proctest.RidesOutAServerRestart(t, gw, "http://"+listen+"/healthz", srv, opts)
}

// gatewayOnAServer starts a NATS server on a fixed port with the
// topology, with opts to start it again as itself, and a gateway process
// on it that serves on listen.
func gatewayOnAServer(t *testing.T) (opts embedded.Options, srv *embedded.Server, gw *proctest.Process, listen string) {
	t.Helper()
	opts = embedded.Options{StoreDir: t.TempDir(), Port: proctest.FreePort(t)}
	srv, err := embedded.Start(opts)
	require.NoError(t, err)
	_, js := embeddedtest.Connect(t, srv.ClientURL())
	_, err = streams.Provision(context.Background(), js, streams.Config{})
	require.NoError(t, err)
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	require.NoError(t, os.WriteFile(tokens, []byte(`{"tokens":{"t":{"user":"ana","sessions":["*"]}}}`), 0o600))
	listen = proctest.FreeAddr(t)
	gw = proctest.Start(t, proctest.Build(t, "gateway"), "--nats", srv.ClientURL(), "--listen", listen, "--metrics-addr", proctest.FreeAddr(t), "--tokens", tokens)
	return opts, srv, gw, listen
}

// A gateway process on a cluster that loses its quorum is not ready on
// /healthz while it has none, and ready again by itself once it is back
// (issue 22).
func TestGatewayProcessRidesOutALostQuorum(t *testing.T) {
	c := proctest.StartCluster(t, 3)
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	require.NoError(t, os.WriteFile(tokens, []byte(`{"tokens":{"t":{"user":"ana","sessions":["*"]}}}`), 0o600))
	listen := proctest.FreeAddr(t)
	proctest.Start(t, proctest.Build(t, "gateway"), "--nats", c.URL(0), "--listen", listen, "--metrics-addr", proctest.FreeAddr(t), "--tokens", tokens)
	proctest.RidesOutALostQuorum(t, "http://"+listen+"/healthz", c)
}

// A gateway process started on a cluster without a quorum serves, not
// ready, and is ready by itself once the quorum is back (issue 22).
func TestGatewayProcessStartsOnAClusterWithoutQuorum(t *testing.T) {
	c := proctest.StartCluster(t, 3)
	c.Stop(1)
	c.Stop(2)
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	require.NoError(t, os.WriteFile(tokens, []byte(`{"tokens":{"t":{"user":"ana","sessions":["*"]}}}`), 0o600))
	listen := proctest.FreeAddr(t)
	gw := proctest.Start(t, proctest.Build(t, "gateway"), "--nats", c.URL(0), "--listen", listen, "--metrics-addr", proctest.FreeAddr(t), "--tokens", tokens)
	proctest.AwaitHealth(t, "http://"+listen+"/healthz", http.StatusServiceUnavailable, time.Minute, "not ready without a quorum")
	c.Start(1)
	c.Start(2)
	proctest.AwaitHealth(t, "http://"+listen+"/healthz", http.StatusOK, time.Minute, "ready once the quorum is back")
	require.NotContains(t, gw.Output(), "stopped")
}

// Issue 25: a gateway whose NATS connection closes for good (its server
// came back with authentication on and refuses it twice) has stopped
// serving anything: the process exits non-zero, so its supervisor starts
// it again, instead of running on with no NATS.
func TestGatewayProcessExitsNonZeroWhenItsConnectionClosesForGood(t *testing.T) {
	opts, srv, gw, listen := gatewayOnAServer(t)
	proctest.AwaitHealth(t, "http://"+listen+"/healthz", http.StatusOK, 20*time.Second, "ready")

	proctest.RestartRefusing(t, srv, opts)

	require.Equal(t, 1, gw.ExitCode(t, time.Minute), "%s", gw.Output())
	require.Contains(t, gw.Output(), "the NATS connection closed for good")
	require.Contains(t, gw.Output(), "stopping the process")
}
