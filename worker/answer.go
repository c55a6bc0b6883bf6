package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
	nc       *nats.Conn
	js       jetstream.JetStream
	sessions jetstream.Stream // SESSIONS: the reply subjects it follows
	cfg      Config
	log      *slog.Logger
	roots    *liveroot.Registry // who serves a Session (D7)
	views    *projection.Store
	replies  *inbox.Replies
	answerer *steer.Answerer

	outcomes   *prometheus.CounterVec
	resumes    *prometheus.CounterVec
	rootLeases *leases.Watcher // the root leases of Sessions with a queued reply
	recheck    func()          // stops looking leases and replies up after reconnects

	ctx        context.Context          // the follow-ups', ended by Stop
	following  jetstream.ConsumeContext // the queued replies (replies.go)
	background sync.WaitGroup           // their follow-ups
	mu         sync.Mutex               // orders stopped against new follow-ups
	stopped    bool
}

// newDurable returns the durable half on nc and js, answering against
// views and queuing replies on the sessions stream, with the live roots of
// Sessions in roots.
func newDurable(nc *nats.Conn, js jetstream.JetStream, sessions jetstream.Stream, views *projection.Store, roots *liveroot.Registry, cfg Config, log *slog.Logger) *durable {
	replies := inbox.NewReplies(js, sessions, views)
	return &durable{
		nc:       nc,
		js:       js,
		sessions: sessions,
		cfg:      cfg,
		log:      log,
		roots:    roots,
		views:    views,
		replies:  replies,
		answerer: steer.New(views, replies),
		outcomes: counterVec(cfg.Metrics, prometheus.CounterOpts{
			Namespace: "holdover", Subsystem: "answers", Name: "total",
			Help: "Late answers (D6) by outcome: accepted, the reason of a refusal (CALL_OPEN, CALL_UNKNOWN, CALL_SETTLED, NO_AGENT), or the error code.",
		}, "outcome"),
		resumes: counterVec(cfg.Metrics, prometheus.CounterOpts{
			Namespace: "holdover", Subsystem: "answers", Name: "resume_requests_total",
			Help: "Resume requests sent for Sessions with no live root and a queued reply (D7), by reason (no_root, root_lost) and result.",
		}, "reason", "result"),
		rootLeases: leases.NewWatcher(nc, js, log),
	}
}

func (d *durable) endpoints() []endpoint {
	return []endpoint{
		{name: opAnswer, serve: d.answer},
		{name: opView, serve: d.view},
	}
}

// start follows the queued replies (replies.go), and looks the followed
// root leases and replies up again after every reconnect. ctx, which ends
// with Stop, is every follow-up's.
func (d *durable) start(ctx context.Context) error {
	d.mu.Lock()
	d.stopped = false // again after a start that failed
	d.mu.Unlock()
	d.ctx = ctx
	follow, err := d.followReplies(ctx)
	if err != nil {
		return err
	}
	d.following = follow
	d.recheck = leases.OnReconnect(d.nc, 0, func(ctx context.Context) {
		d.rootLeases.Recheck(ctx)
		d.replies.Recheck(ctx)
	})
	return nil
}

// goBackground runs fn as a follow-up unless the half stops, and reports
// whether it did.
func (d *durable) goBackground(fn func()) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return false
	}
	d.background.Go(fn)
	return true
}

// stop ends the follow-ups; ctx, the worker's, has ended them already.
func (d *durable) stop() {
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
	if d.following != nil {
		d.following.Stop()
		<-d.following.Closed() // its subscription is gone
	}
	d.background.Wait()
	if d.recheck != nil {
		d.recheck()
	}
}

// answer is the late-answer endpoint (D6). Making sure a runtime reads
// an accepted answer (D7) is no part of it: the reply it queued is
// followed from the reply subject (replies.go), so a worker that dies
// after queuing it strands nothing.
func (d *durable) answer(ctx context.Context, req *request) (any, error) {
	var in holdover.AnswerRequest
	if err := decodeChecked(answerSchema, req.data, &in); err != nil {
		d.count(nil, err)
		return nil, err
	}
	in.User = req.header.Get(holdover.UserHeader)
	out, err := d.answerer.Answer(ctx, in)
	if err == nil && out.Reason != nil && out.Reason.Code == holdover.CodeCallOpen {
		out, err = d.answerInterrupted(ctx, in, out)
	}
	d.count(&out, err)
	if err != nil {
		return nil, err
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
		d.outcomes.WithLabelValues(string(out.Reason.Code)).Inc()
	}
}

// resumeIfIdle makes sure a runtime reads the reply messageID queued for
// (sid, callID) (D7), and reports when it needs no more: once it no
// longer awaits admission (inbox.Replies.Held). Until then, when the
// registry names no live root, or the root it names has lost its root
// lease (the instance died without releasing), it asks the runtime pool
// to resume the Session; a live root, its own or the one it resumed, is
// followed until the reply leaves the inbox, and a root that ends before
// then is resumed from. It reports false when it could not go on (a read
// failed, no runtime took the Session, ctx ended); the reply is durable,
// and its follow-up is tried again.
func (d *durable) resumeIfIdle(ctx context.Context, sid, callID, messageID string) bool {
	resumed := false // a runtime took the Session, and has not been followed yet
	for {
		held, err := d.replies.Held(ctx, sid, callID, messageID)
		if err != nil {
			d.log.Warn("read whether a queued reply awaits admission", "session", sid, "call", callID, ops.Err(err))
			return false
		}
		if !held {
			return true
		}
		rec, state, err := d.roots.Root(ctx, sid, d.rootLeaseExists)
		if err != nil {
			d.log.Warn("look up live root for a queued reply", "session", sid, ops.Err(err))
			return false
		}
		if state != liveroot.Alive {
			// A runtime that took the Session and is no live root at once
			// failed it: ask again later, not in a loop.
			if resumed || !d.resume(ctx, sid, state, rec, "a queued reply") {
				return false
			}
			resumed = true
			continue // follow the root it resumed
		}
		released, err := d.outlivedBy(ctx, sid, callID, messageID, rec.Instance)
		if err != nil {
			return false
		}
		if released {
			return true
		}
		resumed = false
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
	return leases.Exists(ctx, d.js, name)
}

// outlivedBy follows the root lease of instance until inbox says the reply
// messageID to (sid, callID) has left the inbox (its reservation released,
// D8), and reports that; or until the lease ends first (false), or ctx
// ends (its error).
func (d *durable) outlivedBy(ctx context.Context, sid, callID, messageID, instance string) (released bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	gone, unwatchReply, err := d.replies.WatchRelease(ctx, sid, callID, messageID)
	if err != nil {
		d.log.Warn("watch a queued reply", "session", sid, "call", callID, ops.Err(err))
		return false, err
	}
	defer unwatchReply()
	lost, unwatch := d.rootLeases.Watch(ctx, liveroot.LeaseName(instance))
	defer unwatch()
	select {
	case <-lost:
		return false, nil // the reply may have been read just before: Held tells
	case <-gone:
		return true, nil // admitted, discarded or dropped: nothing left to read
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// resume asks the runtime pool to bring sid back for why (a queued reply,
// an interrupted call), and reports whether a runtime took it; state says
// what became of its root: none, or one that was lost (rec names it).
func (d *durable) resume(ctx context.Context, sid string, state liveroot.State, rec liveroot.Record, why string) bool {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.ResumeTimeout)
	defer cancel()
	log := d.log.With("session", sid, "reason", string(state))
	if state == liveroot.RootLost {
		log = log.With("lost", rec.Instance, "epoch", rec.Epoch)
	}
	instance, err := liveroot.RequestResume(ctx, d.nc, sid)
	if err != nil {
		d.resumes.WithLabelValues(string(state), string(holdover.Wire(err).Code)).Inc()
		log.Warn("resume session for "+why, ops.Err(err))
		return false
	}
	d.resumes.WithLabelValues(string(state), "resumed").Inc()
	log.Info("resumed session for "+why, "instance", instance)
	return true
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
