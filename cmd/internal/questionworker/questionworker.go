// Package questionworker assembles the question worker: the parts one
// process runs against a NATS server, shared by cmd/question-worker and
// `holdover dev` so both run exactly the same thing.
//
// It only wires parts together; what they do lives in their own packages.
package questionworker

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/worker"
)

// Config configures a question worker.
type Config struct {
	// MetricsAddr is where /metrics and /healthz are served.
	MetricsAddr string
	// Streams says how the topology is stored when it is provisioned.
	Streams streams.Config
	// NoProvision looks the topology up instead of provisioning it: for
	// worker credentials, which may not (provision with admin's, `holdover
	// provision`).
	NoProvision bool
	// Service configures the userQuestions service (waits, claims, late answers).
	Service worker.Config
	// Metrics is the process's registry, which /metrics serves; nil makes
	// one. A process that runs more beside the worker (`holdover dev`)
	// passes its own, so one endpoint shows everything.
	Metrics *ops.Metrics
	Logger  *slog.Logger
}

// DefaultMetricsAddr serves metrics on loopback only.
const DefaultMetricsAddr = "127.0.0.1:9464"

// Components provisions (or looks up) the topology on js and returns the
// worker's parts in start order, each relying on the ones before it: the
// NATS connection, the metrics and health server, the projection worker,
// then the userQuestions service. Pass them to [ops.Run].
func Components(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, cfg Config) ([]ops.Component, error) {
	open := func() (*streams.Topology, error) { return streams.Provision(ctx, js, cfg.Streams) }
	if cfg.NoProvision {
		open = func() (*streams.Topology, error) { return streams.Open(ctx, js) }
	}
	var topo *streams.Topology
	if err := untilAnswered(ctx, "open the topology", func() (err error) { topo, err = open(); return err }, cfg.Logger); err != nil {
		return nil, err
	}
	metrics := cfg.Metrics
	if metrics == nil {
		metrics = ops.NewMetrics()
	}
	store := projection.NewStore(js, topo.Sessions, topo.Questions)
	projector := projection.NewWorker(store, inbox.NewReplies(js, topo.Sessions, store), projection.WorkerConfig{Metrics: metrics, Logger: cfg.Logger})
	svcCfg := cfg.Service
	svcCfg.Metrics = metrics
	svcCfg.Views = store
	svc := worker.New(nc, js, topo, svcCfg, cfg.Logger.With("component", "userQuestions"))
	// Not ready before the service has started: a worker still waiting for
	// JetStream to answer serves nothing, whatever the stream says.
	var serving atomic.Bool
	started := ops.Check{Name: "userQuestions", Ready: func() error {
		if !serving.Load() {
			return errors.New("the userQuestions service has not started: JetStream has not answered it yet")
		}
		return nil
	}}
	return []ops.Component{
		ops.NATSConnection(nc),
		ops.HTTPServer("metrics", cfg.MetricsAddr, ops.Handler(metrics, ops.NATSConnected(nc), ops.StreamAvailable(js, streams.SessionsStream), started), cfg.Logger),
		{Name: "projection", Run: projector.Run},
		{Name: "userQuestions", Run: func(ctx context.Context, ready func()) error {
			stopping := context.AfterFunc(ctx, func() { serving.Store(false) })
			defer stopping()
			return untilAnswered(ctx, "start the service", func() error {
				return svc.Run(ctx, func() {
					serving.Store(ctx.Err() == nil) // not once it stops
					ready()
				})
			}, cfg.Logger)
		}},
	}, nil
}

// untilAnswered runs try until JetStream answers it, trying again with a
// growing delay while it does not (a cluster without a quorum, whose
// servers still take connections), so a worker started then waits for
// the quorum instead of exiting. A refusal, or ctx ending, is returned.
func untilAnswered(ctx context.Context, what string, try func() error, logger *slog.Logger) error {
	delay := 500 * time.Millisecond
	for {
		err := try()
		if err == nil || !streams.Unavailable(err) || ctx.Err() != nil {
			return err
		}
		logger.Warn("JetStream did not answer; trying again", "to", what, ops.Err(err), "retry", delay)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 4*time.Second)
	}
}
