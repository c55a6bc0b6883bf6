package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/cmd/internal/proctest"
	"github.com/holdover-dev/holdover/cmd/internal/questionworker"
	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
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
	requireFolds(t, srv.ClientURL())
}

// A worker process on a cluster that loses its quorum is not ready on
// /healthz while it has none, and ready again by itself once it is back
// (issue 22).
func TestWorkerProcessRidesOutALostQuorum(t *testing.T) {
	c := proctest.StartCluster(t, 3)
	metrics := proctest.FreeAddr(t)
	proctest.Start(t, proctest.Build(t, "question-worker"), "--nats", c.URL(0), "--metrics-addr", metrics, "--provision=false")
	proctest.RidesOutALostQuorum(t, "http://"+metrics+"/healthz", c)
	requireFolds(t, c.URL(0))
}

// A worker process started on a cluster without a quorum waits, not
// ready, instead of exiting, and is ready and folding by itself once the
// quorum is back (issue 22).
func TestWorkerProcessStartsOnAClusterWithoutQuorum(t *testing.T) {
	c := proctest.StartCluster(t, 3)
	c.Stop(1)
	c.Stop(2)
	metrics := proctest.FreeAddr(t)
	worker := proctest.Start(t, proctest.Build(t, "question-worker"), "--nats", c.URL(0), "--metrics-addr", metrics, "--provision=false")
	require.Eventually(t, func() bool { return strings.Contains(worker.Output(), "JetStream did not answer") }, time.Minute, 50*time.Millisecond)
	require.NotEqual(t, http.StatusOK, proctest.Health("http://"+metrics+"/healthz"), "not ready without a quorum")
	c.Start(1)
	c.Start(2)
	proctest.AwaitHealth(t, "http://"+metrics+"/healthz", http.StatusOK, time.Minute, "ready once the quorum is back")
	requireFolds(t, c.URL(0))
	require.NotContains(t, worker.Output(), "component failed")
}

// requireFolds appends a question to a new Session's log on the server at
// url and waits for the worker to fold it: ready on /healthz is ready to
// work.
func requireFolds(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	_, js := embeddedtest.Connect(t, url)
	topo, err := streams.Open(ctx, js)
	require.NoError(t, err)
	log := sessionlog.New(js, topo.Sessions)
	args, err := json.Marshal(holdover.ToolArgs{Questions: []holdover.Question{{ID: "q", Question: "Ship it?"}}})
	require.NoError(t, err)
	header := &events.RequestHeader{Tools: []events.ToolSchema{{Name: holdover.ToolName, InputSchema: json.RawMessage(`{"type":"object","properties":{"questions":{}}}`)}}}
	var last uint64
	for _, b := range []events.Body{header, &events.ToolCall{CallID: "c1", Name: holdover.ToolName, Arguments: args}} {
		last, err = log.Append(ctx, "after-the-fault", last, events.New(time.Now(), b))
		require.NoError(t, err)
	}
	// Read, not watched: a watch is a consumer, which the cluster creates
	// only once its meta leader is elected again, after the streams'.
	require.Eventually(t, func() bool {
		e, err := topo.Questions.Get(ctx, "after-the-fault")
		if err != nil {
			return false
		}
		var v projection.View
		return json.Unmarshal(e.Value(), &v) == nil && v.LastSeq >= last
	}, time.Minute, 50*time.Millisecond, "the worker folds the Session")
}

// Issue 25: a worker whose NATS connection closes for good (its server
// came back with authentication on and refuses it twice) serves nothing
// any more: the process exits non-zero, so its supervisor starts it again.
func TestWorkerProcessExitsNonZeroWhenItsConnectionClosesForGood(t *testing.T) {
	opts := embedded.Options{StoreDir: t.TempDir(), Port: proctest.FreePort(t)}
	srv, err := embedded.Start(opts)
	require.NoError(t, err)
	metrics := proctest.FreeAddr(t)
	worker := proctest.Start(t, proctest.Build(t, "question-worker"), "--nats", srv.ClientURL(), "--metrics-addr", metrics)
	proctest.AwaitHealth(t, "http://"+metrics+"/healthz", http.StatusOK, 20*time.Second, "ready")

	proctest.RestartRefusing(t, srv, opts)

	require.Equal(t, 1, worker.ExitCode(t, time.Minute), "%s", worker.Output())
	require.Contains(t, worker.Output(), "component failed; stopping the process")
}
