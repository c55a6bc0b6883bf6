package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

// Consumers that outlive their readers. Every role that reads a stream may
// create consumers of any name there, and NATS cannot tell them apart by
// role or bound them but per stream (max_consumers): a consumer's name is
// one token of the create subject, and whether it is durable, and how long
// it outlives its reader (inactive_threshold), is in the request's body,
// which no permission reads. What Holdover's own readers make ends by
// itself soon after they stop reading (an ordered consumer 5 minutes
// later, an inbox reader's 30 s, a lease or claim a release bound), except
// the shared durables on SESSIONS. So the worker ends the rest: a consumer
// on the topology's streams that the server would not end within
// DefaultConsumerIdle of its last use (a durable other than the kept ones,
// streams.KeptDurables, or one with a longer inactive threshold), once it
// has been idle that long: no pull waiting, no push subscriber, nothing
// delivered or acknowledged since. A flood of them takes its stream's
// max_consumers only while its maker keeps every one of them in use.

// DefaultConsumerIdle is how long a consumer that would outlive its
// reader may stay idle before the worker deletes it; DefaultSweepEvery is
// how often the worker looks.
const (
	DefaultConsumerIdle = 10 * time.Minute
	DefaultSweepEvery   = time.Minute
)

// sweep is the part of the worker that deletes idle consumers that would
// outlive their readers. It serves no endpoint.
type sweep struct {
	js      jetstream.JetStream
	log     *slog.Logger
	idle    time.Duration
	every   time.Duration
	deleted *prometheus.CounterVec
	stopped chan struct{}
	done    sync.WaitGroup
}

func newSweep(js jetstream.JetStream, cfg Config, log *slog.Logger) *sweep {
	return &sweep{
		js: js, log: log, idle: cfg.ConsumerIdle, every: cfg.SweepEvery,
		deleted: counterVec(cfg.Metrics, prometheus.CounterOpts{
			Name: "holdover_consumers_swept_total",
			Help: "Consumers the worker deleted, by stream: ones the server would not end soon after their last use (a durable that is not a shared or declared one, or an ephemeral with a long inactive threshold), idle for the worker's --consumer-idle (docs/permissions.md, \"Indirect paths\").",
		}, "stream"),
	}
}

// start begins sweeping every s.every until ctx ends or stop.
func (s *sweep) start(ctx context.Context) {
	if s.idle < 0 {
		return
	}
	s.stopped = make(chan struct{})
	s.done.Go(func() {
		tick := time.NewTicker(s.every)
		defer tick.Stop()
		for {
			select {
			case <-s.stopped:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				s.once(ctx)
			}
		}
	})
}

// stop ends what start began and waits for it.
func (s *sweep) stop() {
	if s.stopped != nil {
		close(s.stopped)
		s.done.Wait()
		s.stopped = nil
	}
}

// sweptStreams are the streams whose consumers the sweep looks at: every
// stream of the topology.
var sweptStreams = []string{streams.SessionsStream, streams.ClaimsStream,
	streams.KVStreamPrefix + streams.QuestionsBucket, streams.KVStreamPrefix + streams.RootsBucket}

// once looks at every consumer of the topology's streams once.
func (s *sweep) once(ctx context.Context) {
	for _, name := range sweptStreams {
		stream, err := s.js.Stream(ctx, name)
		if err != nil {
			s.log.Warn("look a stream up to sweep its consumers", "stream", name, ops.Err(err))
			continue
		}
		var kept map[string]bool // durables that live while unread: the shared ones, on SESSIONS only
		if name == streams.SessionsStream {
			kept = streams.KeptDurables(stream.CachedInfo().Config)
		}
		list := stream.ListConsumers(ctx)
		for info := range list.Info() {
			if s.outlives(info, kept) && s.idleFor(info) >= s.idle {
				s.delete(ctx, stream, info)
			}
		}
		if err := list.Err(); err != nil && ctx.Err() == nil {
			s.log.Warn("list consumers to sweep", "stream", name, ops.Err(err))
		}
	}
}

// outlives reports whether the server would keep the consumer more than
// the sweep's idle bound after its last use.
func (s *sweep) outlives(info *jetstream.ConsumerInfo, kept map[string]bool) bool {
	cfg := info.Config
	if cfg.Durable != "" && kept[info.Name] {
		return false
	}
	return cfg.InactiveThreshold <= 0 || cfg.InactiveThreshold > s.idle
}

// idleFor is how long, as of the server's reading, the consumer has gone
// unused: 0 while a pull waits on it or a subscriber takes its pushes,
// else the time since its creation, its last delivery or its last
// acknowledgement, whichever came last.
func (s *sweep) idleFor(info *jetstream.ConsumerInfo) time.Duration {
	if info.NumWaiting > 0 || info.PushBound {
		return 0
	}
	last := info.Created
	for _, t := range []*time.Time{info.Delivered.Last, info.AckFloor.Last} {
		if t != nil && t.After(last) {
			last = *t
		}
	}
	return info.TimeStamp.Sub(last)
}

func (s *sweep) delete(ctx context.Context, stream jetstream.Stream, info *jetstream.ConsumerInfo) {
	switch err := stream.DeleteConsumer(ctx, info.Name); {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return // another worker's sweep was first, or its reader deleted it
	case err != nil:
		if ctx.Err() == nil {
			s.log.Warn("delete an idle consumer that would outlive its reader", "stream", info.Stream, "consumer", info.Name, ops.Err(err))
		}
		return
	}
	s.deleted.WithLabelValues(info.Stream).Inc()
	s.log.Warn("deleted an idle consumer that would outlive its reader",
		"stream", info.Stream, "consumer", info.Name, "durable", info.Config.Durable != "",
		"inactive_threshold", info.Config.InactiveThreshold, "idle", s.idleFor(info).Round(time.Millisecond))
}
