package userquestions

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/steer"
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
	s        *Service
	views    *projection.Store
	answerer *steer.Answerer
	tracker  *inbox.Tracker

	outcomes *prometheus.CounterVec
	resumes  *prometheus.CounterVec

	background sync.WaitGroup // the Tracker and resume requests
}

func newDurable(s *Service) *durable {
	log := sessionlog.New(s.js, s.top.Sessions)
	reservations := inbox.NewReservations(s.top.Reservations, log)
	views := projection.NewStore(s.js, s.top.Sessions, s.top.Questions)
	d := &durable{
		s:        s,
		views:    views,
		answerer: steer.New(views, reservations, s.js),
		outcomes: counterVec(s.metrics(), prometheus.CounterOpts{
			Namespace: "holdover", Subsystem: "answers", Name: "total",
			Help: "Late answers (D6) by outcome: accepted, not_answerable, or the error code.",
		}, "outcome"),
		resumes: counterVec(s.metrics(), prometheus.CounterOpts{
			Namespace: "holdover", Subsystem: "answers", Name: "resume_requests_total",
			Help: "Resume requests sent for Sessions with no live root after an accepted answer (D7), by result.",
		}, "result"),
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

func (d *durable) stop() { d.background.Wait() }

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
		d.background.Go(func() { d.resumeIfIdle(ctx, in.Session) })
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

// resumeIfIdle asks the runtime pool to resume sid when it has no live
// root, so the queued reply is read (D7). The reply is durable either
// way: a failed resume is logged, and the reply waits for the next root.
func (d *durable) resumeIfIdle(ctx context.Context, sid string) {
	_, live, err := d.s.roots.Lookup(ctx, sid)
	switch {
	case err != nil:
		d.s.log.Warn("look up live root after an answer", "session", sid, "err", err)
		return
	case live:
		return
	}
	ctx, cancel := context.WithTimeout(ctx, d.s.cfg.resumeTimeout())
	defer cancel()
	instance, err := liveroot.RequestResume(ctx, d.s.nc, sid)
	if err != nil {
		d.resumes.WithLabelValues(string(holdover.Wire(err).Code)).Inc()
		d.s.log.Warn("resume session for a queued reply", "session", sid, "err", err)
		return
	}
	d.resumes.WithLabelValues("resumed").Inc()
	d.s.log.Info("resumed session for a queued reply", "session", sid, "instance", instance)
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
