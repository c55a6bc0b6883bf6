package userquestions

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/streams"
)

// DefaultInflightGather is how long an inflight listing waits for more
// workers after the last one answered: the endpoint fans out to every
// worker, and none knows how many others there are.
const DefaultInflightGather = 50 * time.Millisecond

// AnswererConfig configures an Answerer.
type AnswererConfig struct {
	// ReleaseBound is the InactiveThreshold of this answerer's claims: how
	// long a wait stays paused after the answerer dies. 0 means
	// DefaultReleaseBound; values below MinReleaseBound are raised to it.
	// Keep the connection's reconnect wait well below it.
	ReleaseBound time.Duration
	// InflightGather: see DefaultInflightGather; 0 means the default.
	InflightGather time.Duration
	// Log receives the answerer's warnings; nil means slog.Default().
	Log *slog.Logger
}

// Answerer is the answering side of the waterfall, for gateways and
// terminal clients: it watches Sessions' requests, lists in-flight ones,
// settles, rejects or delegates them, and opens claims on their waits.
type Answerer struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	bound  time.Duration
	gather time.Duration
	log    *slog.Logger
	owners *leases.Watcher
	stop   func()
}

// NewAnswerer returns an answerer on nc. Close it when done.
func NewAnswerer(nc *nats.Conn, cfg AnswererConfig) (*Answerer, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, holdover.Newf(holdover.CodeInternal, "jetstream: %v", err)
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	a := &Answerer{
		nc:     nc,
		js:     js,
		bound:  leases.Bound(cfg.ReleaseBound),
		gather: cmpOr(cfg.InflightGather, DefaultInflightGather),
		log:    log,
		owners: leases.NewWatcher(nc, js, log),
	}
	a.stop = leases.OnReconnect(nc, 0, a.owners.Recheck)
	return a, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Close stops the answerer's background work. Close open Watches first.
func (a *Answerer) Close() { a.stop() }

// Inflight lists the Session's live requests across all workers.
func (a *Answerer) Inflight(ctx context.Context, sid string) ([]*Delivery, error) {
	reqs, err := fetchInflight(ctx, a.nc, sid, a.gather)
	if err != nil {
		return nil, err
	}
	out := make([]*Delivery, len(reqs))
	for i, r := range reqs {
		out[i] = a.delivery(r)
	}
	return out, nil
}

func (a *Answerer) delivery(r WaterfallRequest) *Delivery {
	return &Delivery{WaterfallRequest: r, a: a}
}

// fetchInflight asks every worker for its live requests of sid and merges
// the answers: it waits for the first, then until gather passes with no
// more. With no worker up, nothing is in flight.
func fetchInflight(ctx context.Context, nc *nats.Conn, sid string, gather time.Duration) ([]WaterfallRequest, error) {
	if err := streams.CheckSession(sid); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCallTimeout)
		defer cancel()
	}
	data, err := encode(InflightRequest{Session: sid})
	if err != nil {
		return nil, err
	}
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, holdover.Newf(holdover.CodeInternal, "subscribe for inflight: %v", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest(Subject(opInflight), inbox, data); err != nil {
		return nil, holdover.Newf(holdover.CodeInternal, "request inflight: %v", err)
	}
	var out []WaterfallRequest
	seen := make(map[string]bool)
	for first := true; ; first = false {
		wait := ctx
		if !first {
			var cancel context.CancelFunc
			wait, cancel = context.WithTimeout(ctx, gather)
			defer cancel()
		}
		m, err := sub.NextMsgWithContext(wait)
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			return nil, nil
		case err != nil && first:
			return nil, transportError(ctx, opInflight, err)
		case err != nil && ctx.Err() != nil:
			return nil, transportError(ctx, opInflight, err)
		case err != nil:
			return out, nil // gather passed: every worker that is up has answered
		}
		if err := replyError(m); err != nil {
			return nil, err
		}
		var part InflightResult
		if err := decode(m.Data, &part); err != nil {
			return nil, holdover.Newf(holdover.CodeInternal, "inflight reply: %v", err)
		}
		for _, r := range part.Requests {
			if !seen[r.RequestID] {
				seen[r.RequestID] = true
				out = append(out, r)
			}
		}
	}
}

// Delivery is one request as an answerer holds it. Its methods are the
// answerer's outcomes; none of them is acknowledged (C4): a Client keeps
// its draft until the request's cancel notice or the projection says how
// it ended.
type Delivery struct {
	WaterfallRequest
	a *Answerer

	mu    sync.Mutex
	claim *Claim
}

// Settle answers the request. A batch that does not name every question
// exactly once is BAD_ANSWER here and would be dropped by the Host.
func (d *Delivery) Settle(answers []holdover.Answer) error {
	if err := holdover.ValidateBatch(d.Questions, answers); err != nil {
		return err
	}
	if answers == nil {
		answers = []holdover.Answer{}
	}
	return d.send(WaterfallOutcome{Kind: OutcomeSettle, Answers: answers})
}

// Reject fails the request with err's code and message: ASK_TIMED_OUT when
// the Client's countdown ran out (W5), ASK_CANCELLED when the user closed
// an unkeyed blocking panel (C2).
func (d *Delivery) Reject(err error) error {
	return d.send(WaterfallOutcome{Kind: OutcomeReject, Error: holdover.Wire(err)})
}

// Delegate passes the request on without answering it: it releases the
// claim first, so the Host deadline runs again (W4), and the request stays
// with the other and later answerers.
func (d *Delivery) Delegate(ctx context.Context) error {
	if err := d.releaseClaim(ctx); err != nil {
		return err
	}
	return d.send(WaterfallOutcome{Kind: OutcomeDelegate})
}

func (d *Delivery) send(out WaterfallOutcome) error {
	if d.Reply == "" {
		return holdover.Newf(holdover.CodeBadRequest, "request %s has no reply subject", d.RequestID)
	}
	data, err := encode(out)
	if err != nil {
		return err
	}
	if err := d.a.nc.Publish(d.Reply, data); err != nil {
		return holdover.Newf(holdover.CodeInternal, "send %s outcome of %s: %v", out.Kind, d.RequestID, err)
	}
	return nil
}

// AttachWait opens the claim on the request's wait (W3) before the Client
// attaches its answer channel; read its one frame with Claim.Remaining.
// The Client keeps it until the Host closes it (W4). A request without a
// wait (a legacy ask) cannot be claimed: BAD_REQUEST. Attaching twice
// returns the open claim.
func (d *Delivery) AttachWait(ctx context.Context) (*Claim, error) {
	if d.Wait == nil {
		return nil, holdover.Newf(holdover.CodeBadRequest, "request %s has no wait to claim", d.RequestID)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.claim != nil {
		return d.claim, nil
	}
	c, err := attachWait(ctx, d.a.nc, d.a.js, d.Session, d.Wait.CallID, d.a.bound)
	if err != nil {
		return nil, err
	}
	d.claim = c
	return c, nil
}

func (d *Delivery) releaseClaim(ctx context.Context) error {
	d.mu.Lock()
	c := d.claim
	d.claim = nil
	d.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Release(ctx)
}

// Handler receives a Watch's requests. Its methods run on the Watch's one
// goroutine, in order, so a request always comes before its cancel.
type Handler interface {
	// Request is called once for every live request of the Session.
	Request(d *Delivery)
	// Cancel is called once when a delivered request ends, with the
	// reason of its cancel notice (or ReasonOwnerLost, ReasonGone).
	Cancel(d *Delivery, reason string)
}

// Watch is an answerer's view of one Session's requests.
type Watch struct {
	a          *Answerer
	sid        string
	cancelSubj string
	h          Handler

	msgs     chan *nats.Msg
	subs     []*nats.Subscription
	internal chan func()
	stopSync func()
	quit     chan struct{}
	done     chan struct{}
	closing  sync.Once
	closeErr error

	// Guarded by the watch goroutine: only it touches them.
	live   map[string]*Delivery
	owners map[string]func() // owner lease → unwatch
}

// watchBuffer holds requests and cancels that arrive while the handler
// is busy; the server drops what does not fit, so it is generous.
const watchBuffer = 4096

// Watch subscribes to sid's requests and cancel notices, then lists the
// requests already in flight, and delivers each live request once to h.
// After a reconnect it lists again: requests missed meanwhile are
// delivered, and delivered ones that ended meanwhile are cancelled with
// ReasonGone. Requests of a worker that dies are cancelled with
// ReasonOwnerLost within the release bound.
func (a *Answerer) Watch(ctx context.Context, sid string, h Handler) (*Watch, error) {
	ask, err := streams.AskSubject(sid)
	if err != nil {
		return nil, err
	}
	cancelSubj, _ := streams.CancelSubject(sid) // same Session check as above
	w := &Watch{
		a: a, sid: sid, cancelSubj: cancelSubj, h: h,
		msgs:     make(chan *nats.Msg, watchBuffer),
		internal: make(chan func(), 16),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		live:     make(map[string]*Delivery),
		owners:   make(map[string]func()),
	}
	// One channel for both subjects keeps their order: the connection's
	// reader pushes into it as messages arrive.
	for _, subject := range []string{ask, cancelSubj} {
		sub, err := a.nc.ChanSubscribe(subject, w.msgs)
		if err != nil {
			w.unsubscribe()
			return nil, holdover.Newf(holdover.CodeInternal, "subscribe to %s: %v", subject, err)
		}
		w.subs = append(w.subs, sub)
	}
	if err := flush(ctx, a.nc); err != nil {
		w.unsubscribe()
		return nil, err
	}
	reqs, err := fetchInflight(ctx, a.nc, sid, a.gather)
	if err != nil {
		w.unsubscribe()
		return nil, err
	}
	go w.run(reqs)
	w.stopSync = leases.OnReconnect(a.nc, 0, func(context.Context) { w.post(w.resync) })
	return w, nil
}

func (w *Watch) run(initial []WaterfallRequest) {
	defer close(w.done)
	for _, r := range initial {
		w.deliver(r)
	}
	for {
		select {
		case m := <-w.msgs:
			w.handle(m)
		case f := <-w.internal:
			f()
		case <-w.quit:
			return
		}
	}
}

// post runs f on the watch goroutine, unless the watch has closed.
func (w *Watch) post(f func()) {
	select {
	case w.internal <- f:
	case <-w.quit:
	}
}

func (w *Watch) handle(m *nats.Msg) {
	if m.Subject == w.cancelSubj {
		var n CancelNotice
		if decode(m.Data, &n) == nil {
			w.end(n.RequestID, n.Reason)
		}
		return
	}
	var r WaterfallRequest
	if err := decode(m.Data, &r); err != nil {
		w.a.log.Warn("drop malformed waterfall request", "session", w.sid, "err", err)
		return
	}
	r.Reply = m.Reply
	w.deliver(r)
}

func (w *Watch) deliver(r WaterfallRequest) {
	if _, dup := w.live[r.RequestID]; dup || r.Reply == "" {
		return
	}
	d := w.a.delivery(r)
	w.live[r.RequestID] = d
	w.watchOwner(r.Owner)
	w.h.Request(d)
}

func (w *Watch) end(requestID, reason string) {
	d, ok := w.live[requestID]
	if !ok {
		return
	}
	delete(w.live, requestID)
	if reason == ReasonOwnerLost || reason == ReasonGone {
		// Nobody is left to close the claim: a worker that owns the call
		// next must not find it held.
		ctx, cancel := context.WithTimeout(context.Background(), DefaultCallTimeout)
		if err := d.releaseClaim(ctx); err != nil {
			w.a.log.Warn("release claim of a lost request", "request", requestID, "err", err)
		}
		cancel()
	}
	w.h.Cancel(d, reason)
}

// watchOwner makes sure the death of owner cancels its requests.
func (w *Watch) watchOwner(owner string) {
	if owner == "" || w.owners[owner] != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultCallTimeout)
	defer cancel()
	lost, unwatch := w.a.owners.Watch(ctx, owner)
	w.owners[owner] = unwatch
	go func() {
		select {
		case <-lost:
			w.post(func() { w.ownerLost(owner) })
		case <-w.quit:
		}
	}()
}

func (w *Watch) ownerLost(owner string) {
	for id, d := range w.live {
		if d.Owner == owner {
			w.end(id, ReasonOwnerLost)
		}
	}
	if unwatch := w.owners[owner]; unwatch != nil {
		unwatch()
		delete(w.owners, owner)
	}
}

// resync lists the Session's requests again after a reconnect.
func (w *Watch) resync() {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultCallTimeout)
	defer cancel()
	reqs, err := fetchInflight(ctx, w.a.nc, w.sid, w.a.gather)
	if err != nil {
		w.a.log.Warn("resync watch", "session", w.sid, "err", err)
		return
	}
	listed := make(map[string]bool, len(reqs))
	for _, r := range reqs {
		listed[r.RequestID] = true
	}
	for id := range w.live {
		if !listed[id] {
			w.end(id, ReasonGone)
		}
	}
	for _, r := range reqs {
		w.deliver(r)
	}
}

// Close tears the watch down as a Client teardown must (W4): every live
// request is delegated, releasing its claim, and the subscriptions end.
// Closing again does nothing. It waits for the Handler, so it must not be
// called from one.
func (w *Watch) Close(ctx context.Context) error {
	w.closing.Do(func() {
		w.stopSync()
		var errs []error
		delegated := make(chan struct{})
		w.post(func() {
			defer close(delegated)
			for _, d := range w.live {
				errs = append(errs, d.Delegate(ctx))
			}
		})
		<-delegated
		close(w.quit)
		<-w.done
		w.unsubscribe()
		for _, unwatch := range w.owners {
			unwatch()
		}
		w.closeErr = errors.Join(errs...)
	})
	return w.closeErr
}

func (w *Watch) unsubscribe() {
	for _, sub := range w.subs {
		_ = sub.Unsubscribe()
	}
}
