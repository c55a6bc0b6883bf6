package ops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

var quiet = slog.New(slog.DiscardHandler)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// /healthz is ready while NATS is connected and not ready once it is gone.
func TestHealthzFollowsTheNATSConnection(t *testing.T) {
	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir()})
	require.NoError(t, err)
	disconnected := make(chan struct{}, 1)
	nc, err := nats.Connect(srv.ClientURL(), nats.DisconnectErrHandler(func(*nats.Conn, error) { disconnected <- struct{}{} }))
	require.NoError(t, err)
	defer nc.Close()
	h := ops.Handler(ops.NewMetrics(), ops.NATSConnected(nc))

	code, body := get(t, h, "/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"ready":true,"checks":{"nats":"ok"}}`, body)

	srv.Stop()
	<-disconnected
	code, body = get(t, h, "/healthz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	var got struct {
		Ready  bool
		Checks map[string]string
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	assert.False(t, got.Ready)
	assert.Contains(t, got.Checks["nats"], "not connected")
}

func TestMetricsAreServedWithTheirCodes(t *testing.T) {
	m := ops.NewMetrics()
	m.Error("projection", holdover.New(holdover.CodeBadRequest, "bad event"))
	m.Error("projection", errors.New("no code"))
	m.EventsFolded.WithLabelValues("projection").Add(3)
	m.FoldLag.WithLabelValues("projection").Observe(0.002)
	// A component's own collectors share the namespace and the registry.
	own := m.Collectors("gateway")
	own.Gauge("connections", "Open connections.").Set(2)
	own.Counter("slow_total", "Slow ones.").Inc()
	own.CounterVec("frames_total", "Frames.", "type").WithLabelValues("hello").Inc()
	own.Histogram("fanout_seconds", "Fan-out.", []float64{0.001}).Observe(0.0005)
	code, body := get(t, ops.Handler(m), "/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, line := range []string{
		`holdover_errors_total{code="BAD_REQUEST",component="projection"} 1`,
		`holdover_errors_total{code="INTERNAL",component="projection"} 1`,
		`holdover_projection_events_folded_total{consumer="projection"} 3`,
		`holdover_projection_fold_lag_seconds_count{consumer="projection"} 1`,
		`holdover_gateway_connections 2`,
		`holdover_gateway_slow_total 1`,
		`holdover_gateway_frames_total{type="hello"} 1`,
		`holdover_gateway_fanout_seconds_bucket{le="0.001"} 1`,
		`go_goroutines`,
	} {
		assert.Contains(t, body, line)
	}
}

func TestLogConfigChoosesFormat(t *testing.T) {
	var buf bytes.Buffer
	logger, err := ops.LogConfig{Format: "json", Level: slog.LevelWarn}.Logger(&buf)
	require.NoError(t, err)
	logger.Info("hidden")
	logger.Warn("shown", "session", "s1")
	var rec map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &rec))
	assert.Equal(t, "shown", rec["msg"])
	assert.Equal(t, "s1", rec["session"])

	buf.Reset()
	logger, err = ops.LogConfig{}.Logger(&buf)
	require.NoError(t, err)
	logger.Info("hello", "k", "v")
	assert.Contains(t, buf.String(), "msg=hello k=v")

	buf.Reset()
	logger.Warn("failed", ops.Err(holdover.New(holdover.CodeInternal, "disk full")))
	assert.Contains(t, buf.String(), "err=\"disk full\"")
	assert.NotContains(t, buf.String(), "stack trace", "logs carry the message, not the stack")

	_, err = ops.LogConfig{Format: "xml"}.Logger(io.Discard)
	assert.ErrorContains(t, err, `log format "xml"`)
}

// Issue 11: a logged error shows its chain, each cause after the message
// that wraps it, with any handler; a logger at debug level adds the stack,
// whether the error was logged with ops.Err or plainly.
func TestLoggedErrorsShowTheirChainAndTheStackOnlyAtDebug(t *testing.T) {
	cause := holdover.New(holdover.CodeInternal, "disk full")
	err := holdover.Wrapf(cause, holdover.CodeInternal, "append event to %s", "s1")
	const chain = "append event to s1: disk full"
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		logger, lerr := ops.LogConfig{Format: format, Level: slog.LevelInfo}.Logger(&buf)
		require.NoError(t, lerr)
		logger.Warn("failed", ops.Err(err))
		logger.Warn("failed", "err", err)
		assert.Equal(t, 2, strings.Count(buf.String(), chain), format+": %s", buf.String())
		assert.NotContains(t, buf.String(), "ops_test.go", format+": no stack above debug")

		buf.Reset()
		logger, lerr = ops.LogConfig{Format: format, Level: slog.LevelDebug}.Logger(&buf)
		require.NoError(t, lerr)
		logger.Warn("failed", ops.Err(err))
		logger.Debug("failed", "err", err)
		assert.Contains(t, buf.String(), chain, format)
		assert.Equal(t, 2, strings.Count(buf.String(), "(1) attached stack trace"), format+": the stack at debug: %s", buf.String())
		assert.Contains(t, buf.String(), "ops_test.go", format)
	}

	// Any other handler prints the chain of ops.Err, never its stack.
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Warn("failed", ops.Err(err))
	assert.Contains(t, buf.String(), `err="`+chain+`"`)
	assert.NotContains(t, buf.String(), "ops_test.go")
}

// A failing component stops the others; Run waits for all and returns
// the failure.
func TestRunStopsEveryComponentWhenOneFails(t *testing.T) {
	stopped := make(chan string, 2)
	waiter := func(name string) ops.Component {
		return ops.Component{Name: name, Run: func(ctx context.Context, ready func()) error {
			ready()
			<-ctx.Done()
			stopped <- name
			return nil
		}}
	}
	boom := errors.New("boom")
	failing := ops.Component{Name: "failing", Run: func(_ context.Context, ready func()) error {
		ready()
		return boom
	}}
	err := ops.Run(context.Background(), quiet, waiter("a"), failing, waiter("b"))
	assert.ErrorIs(t, err, boom)
	assert.ErrorContains(t, err, "failing: boom")
	// b starts if the failure comes after failing is ready; it relies on
	// the ones before it, so it stops before a.
	var order []string
	for len(stopped) > 0 {
		order = append(order, <-stopped)
	}
	assert.Contains(t, [][]string{{"a"}, {"b", "a"}}, order)
}

// Issue 25: a component that returns before it was asked to, even with
// no error, fails the process: it serves nothing any more.
func TestRunFailsWhenAComponentReturnsEarly(t *testing.T) {
	err := ops.Run(context.Background(), quiet,
		ops.Component{Name: "waits", Run: func(ctx context.Context, ready func()) error {
			ready()
			<-ctx.Done()
			return nil
		}},
		ops.Component{Name: "quits", Run: func(_ context.Context, ready func()) error {
			ready()
			return nil
		}})
	assert.ErrorIs(t, err, ops.ErrStoppedEarly)
	assert.ErrorContains(t, err, "quits: stopped before it was asked to")

	err = ops.Run(context.Background(), quiet, ops.Component{Name: "never ready", Run: func(context.Context, func()) error { return nil }})
	assert.ErrorIs(t, err, ops.ErrStoppedEarly, "also before it was ready")
}

// Issue 25: each component starts once the one before it is ready, and
// they stop in the reverse order, each before the ones it may rely on.
func TestRunStartsInOrderAndStopsInReverse(t *testing.T) {
	var (
		mu     sync.Mutex
		events []string
	)
	log := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	gate := make(chan struct{})
	component := func(name string, before <-chan struct{}) ops.Component {
		return ops.Component{Name: name, Run: func(ctx context.Context, ready func()) error {
			log("start " + name)
			if before != nil {
				<-before // its start phase: ready only once this opens
			}
			ready()
			<-ctx.Done()
			log("stop " + name)
			return nil
		}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- ops.Run(ctx, quiet, component("a", gate), component("b", nil), component("c", nil)) }()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) == 1
	}, 10*time.Second, time.Millisecond)
	close(gate)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) == 3
	}, 10*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-errc)
	assert.Equal(t, []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}, events)
}

func TestRunReturnsNilWhenAskedToStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- ops.Run(ctx, quiet, ops.Component{Name: "w", Run: func(ctx context.Context, ready func()) error {
			ready()
			close(started)
			<-ctx.Done()
			return ctx.Err()
		}})
	}()
	<-started
	cancel()
	assert.NoError(t, <-errc)
}

// Start returns once the component is ready; Stop ends it and returns its
// failure; a component that fails before it is ready fails the Start.
func TestStartAndStop(t *testing.T) {
	s, err := ops.Start(context.Background(), ops.Component{Name: "w", Run: func(ctx context.Context, ready func()) error {
		ready()
		<-ctx.Done()
		return context.Cause(ctx)
	}})
	require.NoError(t, err)
	select {
	case <-s.Done():
		t.Fatal("ended before Stop")
	default:
	}
	assert.NoError(t, s.Stop(), "the cancellation it was asked for is no failure")
	assert.NoError(t, s.Stop(), "twice")

	boom := errors.New("boom")
	_, err = ops.Start(context.Background(), ops.Component{Name: "f", Run: func(context.Context, func()) error { return boom }})
	assert.ErrorIs(t, err, boom)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ops.Start(ctx, ops.Component{Name: "slow", Run: func(ctx context.Context, _ func()) error {
		<-ctx.Done()
		return nil
	}})
	assert.ErrorIs(t, err, context.Canceled, "asked to stop before it was ready")
}

func TestHTTPServerServesAndFailsOnATakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- ops.HTTPServer("metrics", addr, ops.Handler(ops.NewMetrics()), quiet).Run(ctx, func() {})
	}()
	var resp *http.Response
	require.Eventually(t, func() bool {
		resp, err = http.Get("http://" + addr + "/healthz")
		return err == nil
	}, 5*time.Second, 10*time.Millisecond, "the server comes up")
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	_, err = ops.Start(context.Background(), ops.HTTPServer("second", addr, http.NotFoundHandler(), quiet))
	assert.True(t, err != nil && strings.Contains(err.Error(), "address already in use"), "got %v", err)
	cancel()
	assert.NoError(t, <-errc)
}

// StreamAvailable is ready while the stream answers with a leader (a
// single server leads every stream), and not ready for a stream nobody
// provisioned or once NATS is gone. Losing a cluster's quorum is the
// process tests' part (cmd/question-worker, cmd/gateway).
func TestStreamAvailable(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	require.NoError(t, ops.StreamAvailable(env.JS, streams.SessionsStream).Ready())
	require.ErrorContains(t, ops.StreamAvailable(env.JS, "NOPE").Ready(), "stream NOPE does not answer")
	env.Server.Stop()
	require.Eventually(t, func() bool { return !env.Conn.IsConnected() }, 10*time.Second, 10*time.Millisecond)
	require.ErrorContains(t, ops.StreamAvailable(env.JS, streams.SessionsStream).Ready(), "not connected to NATS")
}
