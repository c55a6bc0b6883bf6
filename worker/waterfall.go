package worker

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
	"github.com/holdover-dev/holdover/waiter"
)

// waterfall is the worker's end of the waterfall (W6, W8; the wire is in
// userquestions/waterfall.go): it publishes the requests of its waits and
// receives every outcome on one wildcard subscription, routed by the
// request id that ends each reply subject.
type waterfall struct {
	nc     *nats.Conn
	lease  string // the worker's lease, which every request names as its owner
	prefix string // <streams.OutcomePrefix>.<nuid>. ; a reply subject is prefix + request id
	sub    *nats.Subscription
}

// newWaterfall subscribes to the outcomes of this worker's requests and
// hands each to route with the request id it names.
func newWaterfall(nc *nats.Conn, lease string, route func(requestID string, m *nats.Msg)) (*waterfall, error) {
	wf := &waterfall{nc: nc, lease: lease, prefix: streams.OutcomePrefix + "." + nuid.Next() + "."}
	sub, err := nc.Subscribe(wf.prefix+"*", func(m *nats.Msg) {
		route(strings.TrimPrefix(m.Subject, wf.prefix), m)
	})
	if err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "subscribe to waterfall outcomes")
	}
	// Answerers reply at the speed of people; only a flood could fill
	// this, and a dropped outcome is a lost answer, so do not bound it.
	_ = sub.SetPendingLimits(-1, -1)
	wf.sub = sub
	return wf, nil
}

// request is the waterfall request of w, as answerers see it and as
// inflight lists it: everything in it is the wait's own.
func (wf *waterfall) request(w *waiter.Wait) userquestions.WaterfallRequest {
	key := w.Key()
	r := userquestions.WaterfallRequest{
		RequestID: w.ID(),
		Session:   key.Session,
		CallID:    key.CallID,
		Questions: w.Questions(),
		Intent:    w.Intent(),
		Deadline:  deadlineOf(w),
		Owner:     wf.lease,
		Reply:     wf.prefix + w.ID(),
	}
	if key.CallID != "" {
		r.Wait = &userquestions.WaitRef{CallID: key.CallID, Timed: w.Timed()}
	}
	return r
}

// deadlineOf is the wait's Host deadline as a request carries it: in UTC,
// nil without one.
func deadlineOf(w *waiter.Wait) *time.Time {
	d, ok := w.Deadline()
	if !ok {
		return nil
	}
	d = d.UTC()
	return &d
}

// publish sends w's request to the Session's answerers. A "no responders"
// status comes back on the reply subject.
func (wf *waterfall) publish(w *waiter.Wait) error {
	req := wf.request(w)
	subject, err := streams.AskSubject(req.Session)
	if err != nil {
		return err
	}
	data, err := userquestions.Encode(req)
	if err != nil {
		return err
	}
	err = wf.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: req.Reply, Data: data})
	return holdover.Wrapf(err, holdover.CodeInternal, "publish request %s", req.RequestID)
}

// cancel tells the Session's answerers that the request ended.
func (wf *waterfall) cancel(sid string, notice userquestions.CancelNotice) error {
	subject, err := streams.CancelSubject(sid)
	if err != nil {
		return err
	}
	data, _ := json.Marshal(notice) // strings only
	return holdover.Wrapf(wf.nc.Publish(subject, data), holdover.CodeInternal, "publish cancel of %s", notice.RequestID)
}

func (wf *waterfall) close() { _ = wf.sub.Unsubscribe() }
