// Package answerer is the answering side of the userQuestions service,
// for the processes that answer questions for people: gateways, on behalf
// of their web Clients, and terminal clients. Its Client watches Sessions'
// foreground requests (the waterfall), lists the ones in flight, settles,
// rejects or delegates them, and opens claims on their waits (W2–W4). It
// speaks the wire of package userquestions and never imports the worker.
package answerer

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
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
)

// Config configures a Client. Its zero value is the defaults.
type Config struct {
	// ReleaseBound is the InactiveThreshold of this answerer's claims: how
	// long a wait stays paused after the answerer dies. 0 means
	// userquestions.DefaultReleaseBound; values below
	// userquestions.MinReleaseBound are raised to it.
	// Keep the connection's reconnect wait well below it.
	ReleaseBound time.Duration
	// InflightGather: see userquestions.DefaultInflightGather; 0 means the default.
	InflightGather time.Duration
	// CallTimeout bounds a late answer or a view read made with a context
	// that has no deadline; 0 means userquestions.DefaultCallTimeout.
	CallTimeout time.Duration
	// Log receives the answerer's warnings; nil means slog.Default().
	Log *slog.Logger
}

// Client is an answerer's link to the question workers: it watches
// Sessions' requests, lists in-flight ones, settles, rejects or delegates
// them, and opens claims on their waits.
type Client struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	bound   time.Duration
	gather  time.Duration
	timeout time.Duration
	log     *slog.Logger
	workers *leases.Watcher
	stop    func()
}

// withDefaults fills in what cfg leaves zero.
func (cfg Config) withDefaults() Config {
	cfg.ReleaseBound = leases.Bound(cfg.ReleaseBound)
	if cfg.InflightGather <= 0 {
		cfg.InflightGather = userquestions.DefaultInflightGather
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = userquestions.DefaultCallTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return cfg
}

// New returns an answerer's Client on nc. Close it when done.
func New(nc *nats.Conn, cfg Config) (*Client, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "jetstream")
	}
	cfg = cfg.withDefaults()
	a := &Client{
		nc:      nc,
		js:      js,
		bound:   cfg.ReleaseBound,
		gather:  cfg.InflightGather,
		timeout: cfg.CallTimeout,
		log:     cfg.Log,
		workers: leases.NewWatcher(nc, js, cfg.Log),
	}
	a.stop = leases.OnReconnect(nc, 0, a.workers.Recheck)
	return a, nil
}

// Close stops the answerer's background work. Close open Watches first.
// It returns once that work has stopped; closing again does nothing.
func (a *Client) Close() error {
	a.stop()
	return nil
}

// Answer sends a late answer to a continued call (D6). A result with
// Accepted false means the call is unknown or not continued; REPLY_QUEUED
// and BAD_ANSWER come back as errors with those codes.
func (a *Client) Answer(ctx context.Context, req holdover.AnswerRequest) (holdover.AnswerResult, error) {
	var out holdover.AnswerResult
	err := userquestions.Call(ctx, a.nc, a.timeout, userquestions.OpAnswer, req, &out)
	return out, err
}

// View returns the Session's userQuestions projection, caught up to the
// Session's last event.
func (a *Client) View(ctx context.Context, sid string) (projection.View, error) {
	var out projection.View
	err := userquestions.Call(ctx, a.nc, a.timeout, userquestions.OpView, userquestions.ViewRequest{Session: sid}, &out)
	return out, err
}

// Inflight lists the Session's live requests across all workers.
func (a *Client) Inflight(ctx context.Context, sid string) ([]*Delivery, error) {
	reqs, err := userquestions.FetchInflight(ctx, a.nc, sid, a.gather)
	if err != nil {
		return nil, err
	}
	out := make([]*Delivery, len(reqs))
	for i, r := range reqs {
		out[i] = a.delivery(r)
	}
	return out, nil
}

func (a *Client) delivery(r userquestions.WaterfallRequest) *Delivery {
	return &Delivery{WaterfallRequest: r, a: a}
}

// Delivery is one request as an answerer holds it. Its methods are the
// answerer's outcomes; none of them is acknowledged (C4): a Client keeps
// its draft until the request's cancel notice or the projection says how
// it ended.
type Delivery struct {
	userquestions.WaterfallRequest
	a *Client

	mu    sync.Mutex
	claim *Claim
}

// Settle answers the request. A batch that does not name every question
// exactly once is BAD_ANSWER here and would be dropped by the worker.
func (d *Delivery) Settle(answers []holdover.Answer) error {
	if err := holdover.ValidateBatch(d.Questions, answers); err != nil {
		return err
	}
	if answers == nil {
		answers = []holdover.Answer{}
	}
	return d.send(userquestions.WaterfallOutcome{Kind: userquestions.OutcomeSettle, Answers: answers})
}

// Reject fails the request with err's code and message: ASK_TIMED_OUT when
// the Client's countdown ran out (W5), ASK_CANCELLED when the user closed
// an unkeyed blocking panel (C2).
func (d *Delivery) Reject(err error) error {
	return d.send(userquestions.WaterfallOutcome{Kind: userquestions.OutcomeReject, Error: holdover.Wire(err)})
}

// Delegate passes the request on without answering it: it releases the
// claim first, so the wait's deadline runs again (W4), and the request stays
// with the other and later answerers.
func (d *Delivery) Delegate(ctx context.Context) error {
	if err := d.releaseClaim(ctx); err != nil {
		return err
	}
	return d.send(userquestions.WaterfallOutcome{Kind: userquestions.OutcomeDelegate})
}

func (d *Delivery) send(out userquestions.WaterfallOutcome) error {
	if d.Reply == "" {
		return holdover.Newf(holdover.CodeBadRequest, "request %s has no reply subject", d.RequestID)
	}
	data, err := userquestions.Encode(out)
	if err != nil {
		return err
	}
	if err := d.a.nc.Publish(d.Reply, data); err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "send %s outcome of %s", out.Kind, d.RequestID)
	}
	return nil
}

// AttachWait opens the claim on the request's wait (W3) before the Client
// attaches its answer channel; read its one frame with Claim.Remaining.
// The Client keeps it until the worker closes it (W4). A request without a
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
	// reason of its cancel notice (or userquestions.ReasonOwnerLost, userquestions.ReasonGone).
	Cancel(d *Delivery, reason string)
}

// Watch is an answerer's view of one Session's requests.
type Watch struct {
	a          *Client
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
	live    map[string]*Delivery
	workers map[string]func() // worker lease → unwatch
}

// watchBuffer holds requests and cancels that arrive while the handler
// is busy; the server drops what does not fit, so it is generous.
const watchBuffer = 4096

// Watch subscribes to sid's requests and cancel notices, then lists the
// requests already in flight, and delivers each live request once to h.
// After a reconnect it lists again: requests missed meanwhile are
// delivered, and delivered ones that ended meanwhile are cancelled with
// userquestions.ReasonGone. Requests of a worker that dies are cancelled with
// userquestions.ReasonOwnerLost within the release bound.
func (a *Client) Watch(ctx context.Context, sid string, h Handler) (*Watch, error) {
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
		workers:  make(map[string]func()),
	}
	// One channel for both subjects keeps their order: the connection's
	// reader pushes into it as messages arrive.
	for _, subject := range []string{ask, cancelSubj} {
		sub, err := a.nc.ChanSubscribe(subject, w.msgs)
		if err != nil {
			w.unsubscribe()
			return nil, holdover.Wrapf(err, holdover.CodeInternal, "subscribe to %s", subject)
		}
		w.subs = append(w.subs, sub)
	}
	if err := userquestions.Flush(ctx, a.nc); err != nil {
		w.unsubscribe()
		return nil, err
	}
	reqs, err := userquestions.FetchInflight(ctx, a.nc, sid, a.gather)
	if err != nil {
		w.unsubscribe()
		return nil, err
	}
	go w.run(reqs)
	w.stopSync = leases.OnReconnect(a.nc, 0, func(context.Context) { w.post(w.resync) })
	return w, nil
}

func (w *Watch) run(initial []userquestions.WaterfallRequest) {
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
		var n userquestions.CancelNotice
		if userquestions.Decode(m.Data, &n) == nil {
			w.end(n.RequestID, n.Reason)
		}
		return
	}
	var r userquestions.WaterfallRequest
	if err := userquestions.Decode(m.Data, &r); err != nil {
		w.a.log.Warn("drop malformed waterfall request", "session", w.sid, "err", err)
		return
	}
	r.Reply = m.Reply
	w.deliver(r)
}

func (w *Watch) deliver(r userquestions.WaterfallRequest) {
	if _, dup := w.live[r.RequestID]; dup || r.Reply == "" {
		return
	}
	d := w.a.delivery(r)
	w.live[r.RequestID] = d
	w.watchWorker(r.Owner)
	w.h.Request(d)
}

func (w *Watch) end(requestID, reason string) {
	d, ok := w.live[requestID]
	if !ok {
		return
	}
	delete(w.live, requestID)
	if reason == userquestions.ReasonOwnerLost || reason == userquestions.ReasonGone {
		// Nobody is left to close the claim: a worker that owns the call
		// next must not find it held.
		ctx, cancel := context.WithTimeout(context.Background(), userquestions.DefaultCallTimeout)
		if err := d.releaseClaim(ctx); err != nil {
			w.a.log.Warn("release claim of a lost request", "request", requestID, "err", err)
		}
		cancel()
	}
	w.h.Cancel(d, reason)
}

// watchWorker makes sure the death of the worker holding lease cancels
// its requests.
func (w *Watch) watchWorker(lease string) {
	if lease == "" || w.workers[lease] != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), userquestions.DefaultCallTimeout)
	defer cancel()
	lost, unwatch := w.a.workers.Watch(ctx, lease)
	w.workers[lease] = unwatch
	go func() {
		select {
		case <-lost:
			w.post(func() { w.workerLost(lease) })
		case <-w.quit:
		}
	}()
}

func (w *Watch) workerLost(lease string) {
	for id, d := range w.live {
		if d.Owner == lease {
			w.end(id, userquestions.ReasonOwnerLost)
		}
	}
	if unwatch := w.workers[lease]; unwatch != nil {
		unwatch()
		delete(w.workers, lease)
	}
}

// resync lists the Session's requests again after a reconnect.
func (w *Watch) resync() {
	ctx, cancel := context.WithTimeout(context.Background(), userquestions.DefaultCallTimeout)
	defer cancel()
	reqs, err := userquestions.FetchInflight(ctx, w.a.nc, w.sid, w.a.gather)
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
			w.end(id, userquestions.ReasonGone)
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
		for _, unwatch := range w.workers {
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

// AttachWait opens a new claim on the wait of (sid, callID) for one of the
// Clients this answerer serves. Delivery.AttachWait keeps one claim per
// delivery, which suits an answerer with one Client; a gateway shares each
// Session's deliveries among all its Clients, so each Client holds a claim
// of its own and releases it itself (Claim.Release) when it delegates or
// goes away (W4).
func (a *Client) AttachWait(ctx context.Context, sid, callID string) (*Claim, error) {
	return attachWait(ctx, a.nc, a.js, sid, callID, a.bound)
}
