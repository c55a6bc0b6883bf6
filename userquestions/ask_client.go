package userquestions

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	leases "github.com/holdover-dev/holdover/lease"
)

// The caller's side of the foreground calls. A Client holds one liveness
// lease for all its calls, so the worker ends the waits of an agent that
// dies (ASK_ABORTED), and watches the lease of each call's owner, so a
// worker that dies leaves no call hanging: a timed call turns pending, and
// a blocking ask, which has no deadline to lose, is asked again of another
// worker. After a reconnect it asks each owner whether its calls are still
// live, since a reply sent while it was cut off is lost.

// CallerConfig configures a Client's foreground calls.
type CallerConfig struct {
	// ReleaseBound is the InactiveThreshold of the Client's lease: how
	// long a dead agent's waits outlive it. 0 means DefaultReleaseBound;
	// values below MinReleaseBound are raised to it.
	ReleaseBound time.Duration
	// InflightGather: see DefaultInflightGather; 0 means the default.
	InflightGather time.Duration
	// Log receives warnings; nil means slog.Default().
	Log *slog.Logger
}

// callerSide is the Client's foreground state, set up on the first call.
type callerSide struct {
	mu     sync.Mutex
	cfg    CallerConfig
	ready  bool
	closed bool
	nc     *nats.Conn
	js     jetstream.JetStream
	log    *slog.Logger
	lease  *leases.Lease
	prefix string // reply subjects are prefix + call token
	mux    *nats.Subscription
	calls  map[string]*pendingCall
	owners *leases.Watcher
	stop   func()
}

// pendingCall is one call waiting for its reply.
type pendingCall struct {
	token  string
	frames chan *nats.Msg // the accepted frame, then the reply
	ended  chan struct{}  // closed with err set when the call cannot get a reply

	mu        sync.Mutex
	owner     string
	requestID string
	abandoned bool // the caller stopped waiting before it knew the owner
	err       error
	endOnce   sync.Once
}

func (pc *pendingCall) end(err error) {
	pc.endOnce.Do(func() {
		pc.mu.Lock()
		pc.err = err
		pc.mu.Unlock()
		close(pc.ended)
	})
}

// errOwnerLost ends a call whose owning worker is gone or no longer has
// it. It never leaves this file: a timed call turns pending, a blocking
// one is asked again.
var errOwnerLost = errors.New("the worker owning the wait is gone")

// errRefused ends a call that a stopping worker refused before any wait
// existed. It never leaves this file: the call is asked again.
var errRefused = errors.New("a stopping worker refused the call")

// retryDelay spaces out asking again after the n-th refusal in a row, so
// a Client does not spin against a worker that is still stopping.
func retryDelay(n int) time.Duration {
	return min(10*time.Millisecond<<min(n, 6), 500*time.Millisecond)
}

// ConfigureCalls sets how the Client's foreground calls hold their lease.
// Call it before the first Ask or AskTimed; later calls change nothing.
func (c *Client) ConfigureCalls(cfg CallerConfig) {
	c.fg.mu.Lock()
	defer c.fg.mu.Unlock()
	if !c.fg.ready {
		c.fg.cfg = cfg
	}
}

// AskTimed waits at most req.TimeoutMs for an answer batch (W1, W5):
// answers, or pending when the wait ended unanswered (the Host deadline, a
// Client countdown, or its worker's death). A cancelled ctx is ASK_ABORTED;
// every other failure keeps the code the service sent.
func (c *Client) AskTimed(ctx context.Context, req holdover.AskTimedRequest) (holdover.Outcome, error) {
	deadline := timedDeadline(req)
	msg, err := c.waitCall(ctx, opAskTimed, req, deadline)
	for refused := 0; errors.Is(err, errRefused); refused++ {
		if sleepCtx(ctx, retryDelay(refused)) != nil {
			return holdover.Outcome{}, aborted(ctx)
		}
		msg, err = c.waitCall(ctx, opAskTimed, req, deadline)
	}
	if errors.Is(err, errOwnerLost) {
		return holdover.Outcome{Pending: true}, nil
	}
	if err != nil {
		return holdover.Outcome{}, err
	}
	var out holdover.Outcome
	if err := decode(msg.Data, &out); err != nil {
		return holdover.Outcome{}, holdover.Newf(holdover.CodeInternal, "%s reply: %v", opAskTimed, err)
	}
	return out, nil
}

// Ask waits until the questions are answered (M1, M3). A keyed request
// (with a CallID) never times out; a legacy one fails NO_PROVIDER when no
// Client is there to answer (W6). If the worker owning the wait dies, the
// question is asked again of another worker, so the call neither hangs nor
// fails for it.
func (c *Client) Ask(ctx context.Context, req holdover.AskRequest) ([]holdover.Answer, error) {
	retried, delays := false, 0
	for {
		msg, err := c.waitCall(ctx, opAsk, req, time.Time{})
		switch {
		case errors.Is(err, errOwnerLost):
			retried = true
			continue
		case errors.Is(err, errRefused), retried && holdover.HasCode(err, holdover.CodeDuplicateWait):
			// A stopping worker, or a lost owner that was only cut off and
			// still holds the wait until it finds its lease gone.
			if sleepCtx(ctx, retryDelay(delays)) != nil {
				return nil, aborted(ctx)
			}
			delays++
			continue
		case err != nil:
			return nil, err
		}
		var out holdover.Batch
		if err := decode(msg.Data, &out); err != nil {
			return nil, holdover.Newf(holdover.CodeInternal, "%s reply: %v", opAsk, err)
		}
		return out.Answers, nil
	}
}

// Inflight lists the Session's live foreground requests across workers,
// for a Client that joins after they were published.
func (c *Client) Inflight(ctx context.Context, sid string) ([]WaterfallRequest, error) {
	c.fg.mu.Lock()
	gather := cmpOr(c.fg.cfg.InflightGather, DefaultInflightGather)
	c.fg.mu.Unlock()
	return fetchInflight(ctx, c.nc, sid, gather)
}

// Close releases the Client's foreground calls: its lease ends, so the
// workers end the waits of calls still in progress with ASK_ABORTED.
func (c *Client) Close() {
	cs := &c.fg
	cs.mu.Lock()
	if !cs.ready || cs.closed {
		cs.closed = true
		cs.mu.Unlock()
		return
	}
	cs.closed = true
	calls := cs.calls
	cs.calls = map[string]*pendingCall{}
	cs.mu.Unlock()
	cs.stop()
	_ = cs.mux.Unsubscribe()
	cs.owners.Close()
	// An agent may not delete consumers (package auth), so its lease ends
	// the release bound after this connection's interest in it; each call
	// its owner still holds is aborted there, so its wait ends now, as the
	// lease's deletion would have ended it.
	var aborts sync.WaitGroup
	for _, pc := range calls {
		pc.end(holdover.New(holdover.CodeAskAborted, "the client was closed before the question was answered"))
		pc.mu.Lock()
		owner, id := pc.owner, pc.requestID
		if acc, ok := pendingAccepted(pc); ok && owner == "" {
			owner, id = acc.Owner, acc.RequestID
		}
		pc.mu.Unlock()
		if owner != "" {
			aborts.Go(func() { cs.sendAbort(owner, id) })
		}
	}
	aborts.Wait()
	cs.lease.Drop()
}

// setup holds the lease and subscribes the reply mux on the first call.
func (c *Client) setup(ctx context.Context) (*callerSide, error) {
	cs := &c.fg
	cs.mu.Lock()
	defer cs.mu.Unlock()
	switch {
	case cs.closed:
		return nil, holdover.New(holdover.CodeBadRequest, "the client is closed")
	case cs.ready:
		return cs, nil
	}
	js, err := jetstream.New(c.nc)
	if err != nil {
		return nil, holdover.Newf(holdover.CodeInternal, "jetstream: %v", err)
	}
	cs.nc, cs.js = c.nc, js
	cs.log = cs.cfg.Log
	if cs.log == nil {
		cs.log = slog.Default()
	}
	cs.calls = make(map[string]*pendingCall)
	cs.prefix = c.nc.NewInbox() + "."
	if cs.mux, err = c.nc.Subscribe(cs.prefix+"*", cs.onReply); err != nil {
		return nil, holdover.Newf(holdover.CodeInternal, "subscribe for replies: %v", err)
	}
	if cs.lease, err = leases.Hold(ctx, c.nc, js, roleCaller, "", leases.Bound(cs.cfg.ReleaseBound)); err != nil {
		_ = cs.mux.Unsubscribe()
		return nil, err
	}
	// A caller's calls go to a few workers again and again: their leases
	// stay watched between calls, so the accepted frame costs no lookup
	// and the reply behind it waits for none.
	cs.owners = leases.NewWatcher(c.nc, js, cs.log, leases.KeepWatching)
	cs.stop = leases.OnReconnect(c.nc, 0, cs.resync)
	cs.ready = true
	return cs, nil
}

// waitCall sends one ask or askTimed and waits for its reply, following
// the owner's lease once the accepted frame names it, and, for a call due
// at deadline (zero for none), asking the owner after it (ask_backstop.go).
func (c *Client) waitCall(ctx context.Context, op string, in any, deadline time.Time) (*nats.Msg, error) {
	if ctx.Err() != nil {
		return nil, aborted(ctx)
	}
	data, err := encode(in)
	if err != nil {
		return nil, err
	}
	cs, err := c.setup(ctx)
	if err != nil {
		return nil, err
	}
	pc, lease := cs.open()
	if pc == nil {
		return nil, holdover.New(holdover.CodeBadRequest, "the client is closed")
	}
	msg := nats.NewMsg(Subject(op))
	msg.Reply = cs.prefix + pc.token
	msg.Header.Set(headerCallerLease, lease)
	msg.Data = data
	if err := c.nc.PublishMsg(msg); err != nil {
		cs.forget(pc)
		return nil, holdover.Newf(holdover.CodeInternal, "call %s: %v", Subject(op), err)
	}

	var lost <-chan struct{}
	unwatch := func() {}
	defer func() { unwatch() }()
	overdue, disarm := cs.backstopFor(pc, deadline)
	defer disarm()
	for {
		select {
		case m := <-pc.frames:
			if acc, ok := acceptedFrame(m); ok {
				pc.mu.Lock()
				pc.owner, pc.requestID = acc.Owner, acc.RequestID
				pc.mu.Unlock()
				lost, unwatch = cs.owners.Watch(ctx, acc.Owner)
				continue
			}
			cs.forget(pc)
			return reply(ctx, op, m)
		case <-lost:
			cs.forget(pc)
			// A reply that arrived as the owner was judged lost still wins.
			if m, ok := pendingReply(pc); ok {
				return reply(ctx, op, m)
			}
			return nil, errOwnerLost
		case <-overdue:
			if m, ok := pendingReply(pc); ok {
				cs.forget(pc)
				return reply(ctx, op, m)
			}
			cs.abandon(pc) // its owner aborts the wait when it wakes
			return nil, errOwnerLost
		case <-pc.ended:
			cs.forget(pc)
			if m, ok := pendingReply(pc); ok {
				return reply(ctx, op, m)
			}
			pc.mu.Lock()
			defer pc.mu.Unlock()
			return nil, pc.err
		case <-ctx.Done():
			cs.abandon(pc)
			return nil, aborted(ctx)
		}
	}
}

// pendingAccepted takes an accepted frame already queued for pc, if there
// is one, dropping anything else queued: its caller has stopped waiting.
func pendingAccepted(pc *pendingCall) (accepted, bool) {
	for {
		select {
		case m := <-pc.frames:
			if acc, ok := acceptedFrame(m); ok {
				return acc, true
			}
		default:
			return accepted{}, false
		}
	}
}

// pendingReply takes a reply already queued for pc, if there is one.
func pendingReply(pc *pendingCall) (*nats.Msg, bool) {
	for {
		select {
		case m := <-pc.frames:
			if _, ok := acceptedFrame(m); !ok {
				return m, true
			}
		default:
			return nil, false
		}
	}
}

// acceptedFrame reads the accepted frame that names a call's owner.
func acceptedFrame(m *nats.Msg) (accepted, bool) {
	var acc accepted
	if m.Header.Get(headerFrame) != frameAccepted || json.Unmarshal(m.Data, &acc) != nil || acc.Owner == "" {
		return accepted{}, false
	}
	return acc, true
}

// reply reads a call's final message: the result, the service's error, no
// worker at all, or the reply of a worker that stopped, which either ended
// the call's wait or refused the call before any wait existed.
func reply(ctx context.Context, op string, m *nats.Msg) (*nats.Msg, error) {
	if isNoResponders(m) {
		return nil, transportError(ctx, op, nats.ErrNoResponders)
	}
	switch m.Header.Get(headerOwnerStopped) {
	case "":
	case stoppedEndedWait:
		return nil, errOwnerLost
	default:
		return nil, errRefused
	}
	if err := replyError(m); err != nil {
		return nil, err
	}
	return m, nil
}

// aborted is the result of a call whose caller stopped waiting (W5).
func aborted(ctx context.Context) error {
	return holdover.Newf(holdover.CodeAskAborted, "the question was aborted because its call was cancelled: %v", context.Cause(ctx))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// open registers a new call and returns it with the lease it runs under.
func (cs *callerSide) open() (*pendingCall, string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return nil, ""
	}
	pc := &pendingCall{token: newRequestID(), frames: make(chan *nats.Msg, 2), ended: make(chan struct{})}
	cs.calls[pc.token] = pc
	return pc, cs.lease.Name()
}

func (cs *callerSide) forget(pc *pendingCall) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.calls[pc.token] == pc {
		delete(cs.calls, pc.token)
	}
}

// abandon ends a call whose caller stopped waiting: its owner is told to
// abort the wait (ASK_ABORTED). If the owner is not known yet, the call
// stays registered until its accepted frame names one, or its reply or
// the release bound shows there is nothing to abort.
func (cs *callerSide) abandon(pc *pendingCall) {
	pc.mu.Lock()
	owner, id := pc.owner, pc.requestID
	if owner == "" {
		if acc, ok := pendingAccepted(pc); ok {
			owner, id = acc.Owner, acc.RequestID
		} else {
			pc.abandoned = true // onReply sends the abort when the frame comes
		}
	}
	pc.mu.Unlock()
	if owner != "" {
		cs.forget(pc)
		go cs.sendAbort(owner, id)
		return
	}
	time.AfterFunc(leases.Bound(cs.cfg.ReleaseBound), func() { cs.forget(pc) })
}

// sendAbort tells owner to abort request id, retrying while the owner is
// reachable but slow, so an abort is not lost to a brief disconnect.
func (cs *callerSide) sendAbort(owner, id string) {
	for attempt := 0; attempt < 3; attempt++ {
		_, err := cs.nc.Request(ownerSubject(owner, verbAbort), []byte(id), time.Second)
		if err == nil || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrConnectionClosed) {
			return
		}
	}
	cs.log.Warn("abort not acknowledged; the wait ends with its deadline or its owner", "owner", owner, "request", id)
}

// onReply routes a frame or reply to its call.
func (cs *callerSide) onReply(m *nats.Msg) {
	token := m.Subject[len(cs.prefix):]
	cs.mu.Lock()
	pc := cs.calls[token]
	cs.mu.Unlock()
	if pc == nil {
		return // the call ended; a late reply has nobody to go to
	}
	// Under pc.mu, so that abandon either sees this frame queued or has
	// marked the call abandoned before it is queued.
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.abandoned {
		cs.forget(pc)
		if acc, ok := acceptedFrame(m); ok {
			go cs.sendAbort(acc.Owner, acc.RequestID)
		}
		return
	}
	select {
	case pc.frames <- m:
	default: // an accepted frame and one reply fit; more is a duplicate
	}
}

// resync runs after a reconnect: replies and advisories sent meanwhile
// were lost. If the Client's own lease is gone, the workers have already
// aborted its waits; if a call's owner is gone or no longer has the call,
// its reply was lost or will never come.
func (cs *callerSide) resync(ctx context.Context) {
	cs.mu.Lock()
	calls := make([]*pendingCall, 0, len(cs.calls))
	for _, pc := range cs.calls {
		calls = append(calls, pc)
	}
	own := cs.lease
	cs.mu.Unlock()

	if alive, err := own.Alive(ctx); err == nil && !alive {
		for _, pc := range calls {
			pc.end(holdover.New(holdover.CodeAskAborted, "the agent was cut off from NATS longer than the release bound; its waits were ended"))
		}
		l, err := leases.Hold(ctx, cs.nc, cs.js, roleCaller, "", leases.Bound(cs.cfg.ReleaseBound))
		if err != nil {
			cs.log.Error("hold caller lease again", "err", err)
			return
		}
		own.Drop()
		cs.mu.Lock()
		cs.lease = l
		cs.mu.Unlock()
		return
	}
	cs.owners.Recheck(ctx)
	for _, pc := range calls {
		pc.mu.Lock()
		owner, id := pc.owner, pc.requestID
		pc.mu.Unlock()
		if owner == "" {
			continue
		}
		reply, err := cs.nc.RequestWithContext(ctx, ownerSubject(owner, verbStatus), []byte(id))
		switch {
		case errors.Is(err, nats.ErrNoResponders), err == nil && string(reply.Data) == "gone":
			pc.end(errOwnerLost)
		case err != nil:
			cs.log.Warn("check call after reconnect", "owner", owner, "request", id, "err", err)
		}
	}
}
