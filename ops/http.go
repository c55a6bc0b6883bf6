package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Check is one readiness condition of a process.
type Check struct {
	Name  string
	Ready func() error
}

// NATSConnected is ready while nc is connected. A process that lost NATS
// can neither fold nor answer, so it is not ready until it reconnects.
func NATSConnected(nc *nats.Conn) Check {
	return Check{Name: "nats", Ready: func() error {
		if !nc.IsConnected() {
			return errors.New("not connected to NATS (" + nc.Status().String() + ")")
		}
		return nil
	}}
}

// streamCheckTimeout bounds StreamAvailable's look-up: below the 3 s a
// readiness probe waits in deploy/kubernetes, well above a healthy
// cluster's answer (milliseconds).
const streamCheckTimeout = 2 * time.Second

// StreamAvailable is ready while stream has a leader. On a cluster that
// lost its quorum the connection stays up but the stream's leader steps
// down (within JetStream's 10 s quorum check): nothing can be appended,
// folded or answered, so the process is not ready until a leader is
// elected again. A server of a leaderless stream still answers its info,
// from its own copy, with no leader named.
func StreamAvailable(js jetstream.JetStream, stream string) Check {
	return Check{Name: "jetstream", Ready: func() error {
		if !js.Conn().IsConnected() {
			return errors.New("not asked: not connected to NATS")
		}
		ctx, cancel := context.WithTimeout(context.Background(), streamCheckTimeout)
		defer cancel()
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return fmt.Errorf("stream %s does not answer: %w", stream, err)
		}
		if c := s.CachedInfo().Cluster; c != nil && c.Leader == "" {
			return fmt.Errorf("stream %s has no leader: the cluster has lost its quorum, or is electing one", stream)
		}
		return nil
	}}
}

// Handler serves /metrics from m and /healthz from checks. /healthz
// answers 200 when every check passes and 503 otherwise, with a JSON body
// naming each check's state.
func Handler(m *Metrics, checks ...Check) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		status, body := http.StatusOK, map[string]string{}
		for _, c := range checks {
			if err := c.Ready(); err != nil {
				status, body[c.Name] = http.StatusServiceUnavailable, err.Error()
				continue
			}
			body[c.Name] = "ok"
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"ready": status == http.StatusOK, "checks": body})
	})
	return mux
}

// HTTPServer is a component serving h on addr. It is ready once it is
// bound, so a taken port fails the process at once, and shuts down
// gracefully when its context ends.
func HTTPServer(name, addr string, h http.Handler, logger *slog.Logger) Component {
	return Component{Name: name, Run: func(ctx context.Context, ready func()) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		logger.Info("serving", "component", name, "addr", ln.Addr().String())
		return Serve(ctx, &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}, ln, ready)
	}}
}

// shutdownTimeout bounds a graceful shutdown of an HTTP server: the
// requests in progress finish within it.
const shutdownTimeout = 5 * time.Second

// Serve runs srv on ln as a component's Run does: ready once it serves,
// until ctx ends, then shut down gracefully within shutdownTimeout. It
// closes ln.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, ready func()) error {
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	ready()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	serr := srv.Shutdown(shutdown)
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return errors.Join(err, serr)
	}
	return serr
}
