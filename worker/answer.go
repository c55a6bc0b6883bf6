package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/inbox"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/steer"
)

// DefaultResumeTimeout bounds the wait for a runtime to take a resume
// request (D7).
const DefaultResumeTimeout = 10 * time.Second

// durable is the late-answer half of the service: the answer and view
// endpoints (D6), and resuming a Session that has no live root once an
// answer for it is queued (D7). The reply reservations are inbox's (D8),
// their markers the projection worker's.
type durable struct {
	worker   *Worker
	views    *projection.Store
	replies  *inbox.Replies
	answerer *steer.Answerer

	outcomes   *prometheus.CounterVec
	resumes    *prometheus.CounterVec
	rootLeases *leases.Watcher // the root leases of Sessions with a queued reply
	recheck    func()          // stops looking leases and replies up after reconnects

	background sync.WaitGroup // resume requests
}

func newDurable(w *Worker) *durable {
	views := w.views
	replies := inbox.NewReplies(w.js, w.top.Sessions, views)
	return &durable{
		worker:   w,
		views:    views,
		replies:  replies,
		answerer: steer.New(views, replies),
		outcomes: counterVec(w.metrics(), prometheus.CounterOpts{
			Namespace: "holdover", Subsystem: "answers", Name: "total",
			Help: "Late answers (D6) by outcome: accepted, not_answerable, or the error code.",
		}, "outcome"),
		resumes: counterVec(w.metrics(), prometheus.CounterOpts{
			Namespace: "holdover", Subsystem: "answers", Name: "resume_requests_total",
			Help: "Resume requests sent for Sessions with no live root after an accepted answer (D7), by reason (no_root, root_lost) and result.",
		}, "reason", "result"),
		rootLeases: leases.NewWatcher(w.nc, w.js, w.log),
	}
}

func (d *durable) endpoints() []endpoint {
	return []endpoint{
		{name: opAnswer, serve: d.answer, repliesLater: true},
		{name: opView, serve: d.view},
	}
}

// start looks the followed root leases and queued replies up again after
// every reconnect.
func (d *durable) start(context.Context) error {
	d.recheck = leases.OnReconnect(d.worker.nc, 0, func(ctx context.Context) {
		d.rootLeases.Recheck(ctx)
		d.replies.Recheck(ctx)
	})
	return nil
}

func (d *durable) stop() {
	d.background.Wait()
	if d.recheck != nil {
		d.recheck()
	}
}

// answer is the late-answer endpoint (D6). It sends its reply itself (an
// error reply is the worker's), and only then, once an answer is queued,
// makes sure a runtime will read it (D7): that follow-up is no part of
// the answer, and started before the reply it would compete with it for
// the connection and the CPU while the caller waits (issue 11).
func (d *durable) answer(ctx context.Context, req *request) (any, error) {
	var in holdover.AnswerRequest
	if err := decodeChecked(answerSchema, req.data, &in); err != nil {
		d.count(nil, err)
		return nil, err
	}
	in.User = req.header.Get(holdover.UserHeader)
	out, err := d.answerer.Answer(ctx, in)
	d.count(&out, err)
	if err != nil {
		return nil, err
	}
	d.worker.reply(req, out, nil)
	if out.Accepted {
		d.background.Go(func() { d.resumeIfIdle(ctx, in.Session, in.CallID, out.MessageID) })
	}
	return out, nil
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

// resumeIfIdle makes sure a runtime reads the reply messageID queued for
// (sid, callID) (D7). When the registry names no live root, or the root it
// names has lost its root lease (the instance died without releasing), it
// asks the runtime pool to resume the Session. A live root reads the reply
// itself, unless it dies first: its lease is followed until the reply
// leaves the inbox, and a root that ends before then is resumed from. The
// reply is durable either way: a failed resume is logged, and the reply
// waits for the next root.
func (d *durable) resumeIfIdle(ctx context.Context, sid, callID, messageID string) {
	for {
		rec, state, err := d.worker.roots.Root(ctx, sid, d.rootLeaseExists)
		if err != nil {
			d.worker.log.Warn("look up live root after an answer", "session", sid, ops.Err(err))
			return
		}
		if state != liveroot.Alive {
			d.resume(ctx, sid, state, rec)
			return
		}
		if !d.outlivedBy(ctx, sid, callID, messageID, rec.Instance) {
			return
		}
	}
}

// rootLeaseExists looks a root lease up, unless it is followed already
// for another queued reply and known alive: a runtime instance is the
// root of many Sessions, and answers to them would otherwise each look
// the same lease up.
func (d *durable) rootLeaseExists(ctx context.Context, name string) (bool, error) {
	if d.rootLeases.Alive(name) {
		return true, nil
	}
	return leases.Exists(ctx, d.worker.js, name)
}

// outlivedBy follows the root lease of instance until inbox says the reply
// messageID to (sid, callID) has left the inbox (its reservation released,
// D8) or ctx ends, and reports whether the lease ended first.
func (d *durable) outlivedBy(ctx context.Context, sid, callID, messageID, instance string) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	released, unwatchReply, err := d.replies.WatchRelease(ctx, sid, callID, messageID)
	if err != nil {
		d.worker.log.Warn("watch a queued reply; a root that dies before reading it is not resumed from", "session", sid, "call", callID, ops.Err(err))
		return false
	}
	defer unwatchReply()
	lost, unwatch := d.rootLeases.Watch(ctx, liveroot.LeaseName(instance))
	defer unwatch()
	select {
	case <-lost:
		// The reply may have been read just before, and its release not
		// marked yet: Held reads the log as well.
		held, err := d.replies.Held(ctx, sid, callID, messageID)
		return err != nil || held
	case <-released:
		return false // admitted, discarded or dropped: nothing left to read
	case <-ctx.Done():
		return false
	}
}

// resume asks the runtime pool to bring sid back; state says why: no root,
// or a root that was lost (rec names it).
func (d *durable) resume(ctx context.Context, sid string, state liveroot.State, rec liveroot.Record) {
	ctx, cancel := context.WithTimeout(ctx, d.worker.cfg.resumeTimeout())
	defer cancel()
	log := d.worker.log.With("session", sid, "reason", string(state))
	if state == liveroot.RootLost {
		log = log.With("lost", rec.Instance, "epoch", rec.Epoch)
	}
	instance, err := liveroot.RequestResume(ctx, d.worker.nc, sid)
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
