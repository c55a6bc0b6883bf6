package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/inbox"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/steer"
	"github.com/holdover-dev/holdover/streams"
)

// DefaultResumeTimeout bounds the wait for a runtime to take a resume
// request (D7).
const DefaultResumeTimeout = 10 * time.Second

// trackerRestartDelay is how long the durable half waits before it runs
// the reservation Tracker again after the Tracker stopped on its own.
const trackerRestartDelay = time.Second

// durable is the late-answer half of the service: the answer and view
// endpoints (D6), the reply reservations (D8), and resuming a Session
// that has no live root once an answer for it is queued (D7).
type durable struct {
	s            *Service
	views        *projection.Store
	reservations *inbox.Reservations
	answerer     *steer.Answerer
	tracker      *inbox.Tracker

	outcomes   *prometheus.CounterVec
	resumes    *prometheus.CounterVec
	rootLeases *leases.Watcher // the root leases of Sessions with a queued reply
	recheck    func()          // stops looking root leases up after reconnects

	background sync.WaitGroup // the Tracker and resume requests
}

func newDurable(s *Service) *durable {
	log := sessionlog.New(s.js, s.top.Sessions)
	reservations := inbox.NewReservations(s.top.Reservations, log)
	views := projection.NewStore(s.js, s.top.Sessions, s.top.Questions)
	d := &durable{
		s:            s,
		views:        views,
		reservations: reservations,
		answerer:     steer.New(views, reservations, s.js),
		outcomes: counterVec(s.metrics(), prometheus.CounterOpts{
			Namespace: "holdover", Subsystem: "answers", Name: "total",
			Help: "Late answers (D6) by outcome: accepted, not_answerable, or the error code.",
		}, "outcome"),
		resumes: counterVec(s.metrics(), prometheus.CounterOpts{
			Namespace: "holdover", Subsystem: "answers", Name: "resume_requests_total",
			Help: "Resume requests sent for Sessions with no live root after an accepted answer (D7), by reason (no_root, root_lost) and result.",
		}, "reason", "result"),
		rootLeases: leases.NewWatcher(s.nc, s.js, s.log),
	}
	d.tracker = inbox.NewTracker(reservations, s.top.Sessions, log, inbox.TrackerConfig{
		Logger:  s.log,
		OnError: func(err error) { s.metrics().Error("reservations", err) },
	})
	return d
}

func (d *durable) endpoints() []endpoint {
	return []endpoint{
		{name: opAnswer, serve: d.answer},
		{name: opView, serve: d.view},
	}
}

// start runs the reservation Tracker until ctx ends, restarting it when
// its consumer stops on its own.
func (d *durable) start(ctx context.Context) error {
	d.recheck = leases.OnReconnect(d.s.nc, 0, d.rootLeases.Recheck)
	d.background.Go(func() {
		for {
			err := d.tracker.Run(ctx)
			if ctx.Err() != nil {
				return
			}
			d.s.log.Error("reservation tracker stopped; restarting", "err", err, "after", trackerRestartDelay)
			select {
			case <-time.After(trackerRestartDelay):
			case <-ctx.Done():
				return
			}
		}
	})
	return nil
}

func (d *durable) stop() {
	d.background.Wait()
	if d.recheck != nil {
		d.recheck()
	}
}

// answer is the late-answer endpoint (D6). Once an answer is queued it
// makes sure a runtime will read it (D7), outside the answer itself.
func (d *durable) answer(ctx context.Context, req *request) (any, error) {
	var in holdover.AnswerRequest
	if err := decode(req.data, &in); err != nil {
		d.count(nil, err)
		return nil, err
	}
	out, err := d.answerer.Answer(ctx, in)
	d.count(&out, err)
	if err == nil && out.Accepted {
		d.background.Go(func() { d.resumeIfIdle(ctx, in.Session, in.CallID) })
	}
	return out, err
}

func (d *durable) count(out *holdover.AnswerResult, err error) {
	switch {
	case err != nil:
		d.outcomes.WithLabelValues(string(holdover.Wire(err).Code)).Inc()
	case out.Accepted:
		d.outcomes.WithLabelValues("accepted").Inc()
	default:
		d.outcomes.WithLabelValues("not_answerable").Inc()
	}
}

// resumeIfIdle makes sure a runtime reads the reply queued for (sid,
// callID) (D7). When the registry names no live root, or the root it
// names has lost its root lease (the instance died without releasing), it
// asks the runtime pool to resume the Session. A live root reads the reply
// itself, unless it dies first: its lease is followed until the reply
// leaves the inbox, and a root that ends before then is resumed from. The
// reply is durable either way: a failed resume is logged, and the reply
// waits for the next root.
func (d *durable) resumeIfIdle(ctx context.Context, sid, callID string) {
	for {
		rec, state, err := d.s.roots.Root(ctx, sid, liveroot.Leases(d.s.js))
		if err != nil {
			d.s.log.Warn("look up live root after an answer", "session", sid, ops.Err(err))
			return
		}
		if state != liveroot.Alive {
			d.resume(ctx, sid, state, rec)
			return
		}
		if !d.outlivedBy(ctx, sid, callID, rec.Instance) {
			return
		}
	}
}

// outlivedBy follows the root lease of instance until the reply to (sid,
// callID) leaves the inbox (its reservation is released, D8) or ctx ends,
// and reports whether the lease ended first.
func (d *durable) outlivedBy(ctx context.Context, sid, callID, instance string) bool {
	key, err := streams.ReservationKey(sid, callID)
	if err != nil {
		return false // the answer was accepted under this id: cannot happen
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reservation, err := d.s.top.Reservations.Watch(ctx, key)
	if err != nil {
		d.s.log.Warn("watch a queued reply; a root that dies before reading it is not resumed from", "session", sid, "call", callID, ops.Err(err))
		return false
	}
	defer func() { _ = reservation.Stop() }()
	lost, unwatch := d.rootLeases.Watch(ctx, liveroot.LeaseName(instance))
	defer unwatch()
	held := false // the watch first delivers the stored value, then nil
	for {
		select {
		case <-lost:
			// The reply may have been read just before, and the Tracker
			// not have caught up yet: Held reads the log as well.
			_, held, err := d.reservations.Held(ctx, sid, callID)
			return err != nil || held
		case <-ctx.Done():
			return false
		case e, ok := <-reservation.Updates():
			switch {
			case !ok:
				return false
			case e == nil && !held, e != nil && e.Operation() != jetstream.KeyValuePut:
				return false // admitted, discarded or dropped: nothing left to read
			case e != nil:
				held = true
			}
		}
	}
}

// resume asks the runtime pool to bring sid back; state says why: no root,
// or a root that was lost (rec names it).
func (d *durable) resume(ctx context.Context, sid string, state liveroot.State, rec liveroot.Record) {
	ctx, cancel := context.WithTimeout(ctx, d.s.cfg.resumeTimeout())
	defer cancel()
	log := d.s.log.With("session", sid, "reason", string(state))
	if state == liveroot.RootLost {
		log = log.With("lost", rec.Instance, "epoch", rec.Epoch)
	}
	instance, err := liveroot.RequestResume(ctx, d.s.nc, sid)
	if err != nil {
		d.resumes.WithLabelValues(string(state), string(holdover.Wire(err).Code)).Inc()
		log.Warn("resume session for a queued reply", ops.Err(err))
		return
	}
	d.resumes.WithLabelValues(string(state), "resumed").Inc()
	log.Info("resumed session for a queued reply", "instance", instance)
}

// counterVec registers a counter vector on m, or returns the one already
// registered there under the same name, so two services sharing one
// process's metrics count together.
func counterVec(m *ops.Metrics, opts prometheus.CounterOpts, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(opts, labels)
	if err := m.Registry.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing
			}
		}
		panic(err) // a name clash with a different kind of metric is a programming error
	}
	return c
}
