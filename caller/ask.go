package caller

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/holdover-dev/holdover"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/userquestions"
)

// The foreground calls. A Client holds one liveness lease for all its
// calls, so the worker ends the waits of an agent that dies (ASK_ABORTED),
// and watches the lease of each call's worker, so a worker that dies
// leaves no call hanging: a timed call turns pending, and a blocking ask,
// which has no deadline to lose, is asked again of another worker. After a
// reconnect it asks each worker whether its calls are still live, since a
// reply sent while it was cut off is lost.

// pendingCall is one call waiting for its reply.
type pendingCall struct {
	token  string
	frames chan *nats.Msg // the accepted frame, then the reply
	ended  chan struct{}  // closed with err set when the call cannot get a reply
	// expiry forgets an abandoned call whose worker is not known yet
	// once the release bound has passed; guarded by Client.mu.
	expiry *time.Timer

	mu        sync.Mutex
	worker    string
	requestID string
	abandoned bool // the caller stopped waiting before it knew the worker
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

// errWorkerLost ends a call whose owning worker is gone or no longer has
// it. It never leaves this file: a timed call turns pending, a blocking
// one is asked again.
var errWorkerLost = errors.New("the worker owning the wait is gone")

// errRefused ends a call that a stopping worker refused before any wait
// existed. It never leaves this file: the call is asked again.
var errRefused = errors.New("a stopping worker refused the call")

// retryDelay spaces out asking again after the n-th refusal in a row, so
// a Client does not spin against a worker that is still stopping.
func retryDelay(n int) time.Duration {
	return min(10*time.Millisecond<<min(n, 6), 500*time.Millisecond)
}

// AskTimed waits at most req.TimeoutMs for an answer batch (W1, W5):
// answers, or pending when the wait ended unanswered (the deadline, a
// Client countdown, or its worker's death). A cancelled ctx is ASK_ABORTED;
// every other failure keeps the code the service sent.
func (c *Client) AskTimed(ctx context.Context, req holdover.AskTimedRequest) (holdover.Outcome, error) {
	deadline := timedDeadline(req)
	msg, err := c.waitCall(ctx, userquestions.OpAskTimed, req, deadline)
	for refused := 0; errors.Is(err, errRefused); refused++ {
		if sleepCtx(ctx, retryDelay(refused)) != nil {
			return holdover.Outcome{}, aborted(ctx)
		}
		msg, err = c.waitCall(ctx, userquestions.OpAskTimed, req, deadline)
	}
	if errors.Is(err, errWorkerLost) {
		return holdover.Outcome{Pending: true}, nil
	}
	if err != nil {
		return holdover.Outcome{}, err
	}
	var out holdover.Outcome
	if err := userquestions.Decode(msg.Data, &out); err != nil {
		return holdover.Outcome{}, holdover.Wrapf(err, holdover.CodeInternal, "%s reply", userquestions.OpAskTimed)
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
		msg, err := c.waitCall(ctx, userquestions.OpAsk, req, time.Time{})
		switch {
		case errors.Is(err, errWorkerLost):
			retried = true
			continue
		case errors.Is(err, errRefused), retried && holdover.HasCode(err, holdover.CodeDuplicateWait):
			// A stopping worker, or a lost worker that was only cut off and
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
		if err := userquestions.Decode(msg.Data, &out); err != nil {
			return nil, holdover.Wrapf(err, holdover.CodeInternal, "%s reply", userquestions.OpAsk)
		}
		return out.Answers, nil
	}
}

// waitCall sends one ask or askTimed and waits for its reply, following
// the worker's lease once the accepted frame names it, and, for a call due
// at deadline (zero for none), asking the worker after it (backstop.go).
func (c *Client) waitCall(ctx context.Context, op string, in any, deadline time.Time) (*nats.Msg, error) {
	if ctx.Err() != nil {
		return nil, aborted(ctx)
	}
	data, err := userquestions.Encode(in)
	if err != nil {
		return nil, err
	}
	pc, lease := c.open()
	if pc == nil {
		return nil, holdover.New(holdover.CodeBadRequest, "the client is closed")
	}
	msg := nats.NewMsg(userquestions.Subject(op))
	msg.Reply = c.prefix + pc.token
	msg.Header.Set(userquestions.HeaderCallerLease, lease)
	msg.Data = data
	if err := c.nc.PublishMsg(msg); err != nil {
		c.forget(pc)
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "call %s", userquestions.Subject(op))
	}

	var lost <-chan struct{}
	unwatch := func() {}
	defer func() { unwatch() }()
	overdue, disarm := c.backstopFor(pc, deadline)
	defer disarm()
	for {
		select {
		case m := <-pc.frames:
			if acc, ok := acceptedFrame(m); ok {
				if pc.accept(acc) {
					// Abandoned while this frame was on its way here.
					c.forget(pc)
					c.abort(acc.Owner, acc.RequestID)
					continue
				}
				lost, unwatch = c.workers.Watch(ctx, acc.Owner)
				continue
			}
			c.forget(pc)
			return reply(ctx, op, m)
		case <-lost:
			c.forget(pc)
			// A reply that arrived as the worker was judged lost still wins.
			if m, ok := pendingReply(pc); ok {
				return reply(ctx, op, m)
			}
			return nil, errWorkerLost
		case <-overdue:
			if m, ok := pendingReply(pc); ok {
				c.forget(pc)
				return reply(ctx, op, m)
			}
			c.abandon(pc) // its worker aborts the wait when it wakes
			return nil, errWorkerLost
		case <-pc.ended:
			pc.mu.Lock()
			abandoned := pc.abandoned
			pc.mu.Unlock()
			if !abandoned { // else it stays for its accepted frame (abandon)
				c.forget(pc)
			}
			if m, ok := pendingReply(pc); ok {
				return reply(ctx, op, m)
			}
			pc.mu.Lock()
			defer pc.mu.Unlock()
			return nil, pc.err
		case <-ctx.Done():
			c.abandon(pc)
			return nil, aborted(ctx)
		}
	}
}

// pendingAccepted takes an accepted frame already queued for pc, if there
// is one, dropping anything else queued: its caller has stopped waiting.
func pendingAccepted(pc *pendingCall) (userquestions.Accepted, bool) {
	for {
		select {
		case m := <-pc.frames:
			if acc, ok := acceptedFrame(m); ok {
				return acc, true
			}
		default:
			return userquestions.Accepted{}, false
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

// acceptedFrame reads the accepted frame that names a call's worker.
func acceptedFrame(m *nats.Msg) (userquestions.Accepted, bool) {
	var acc userquestions.Accepted
	if m.Header.Get(userquestions.HeaderFrame) != userquestions.FrameAccepted || json.Unmarshal(m.Data, &acc) != nil || acc.Owner == "" {
		return userquestions.Accepted{}, false
	}
	return acc, true
}

// reply reads a call's final message: the result, the service's error, no
// worker at all, or the reply of a worker that stopped, which either ended
// the call's wait or refused the call before any wait existed.
func reply(ctx context.Context, op string, m *nats.Msg) (*nats.Msg, error) {
	if userquestions.IsNoResponders(m) {
		return nil, userquestions.TransportError(ctx, op, nats.ErrNoResponders)
	}
	switch m.Header.Get(userquestions.HeaderOwnerStopped) {
	case "":
	case userquestions.StoppedEndedWait:
		return nil, errWorkerLost
	default:
		return nil, errRefused
	}
	if err := userquestions.ReplyError(m); err != nil {
		return nil, err
	}
	return m, nil
}

// aborted is the result of a call whose caller stopped waiting (W5).
func aborted(ctx context.Context) error {
	return holdover.Wrap(context.Cause(ctx), holdover.CodeAskAborted, "the question was aborted because its call was cancelled")
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
func (c *Client) open() (*pendingCall, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ""
	}
	pc := &pendingCall{token: userquestions.NewRequestID(), frames: make(chan *nats.Msg, 2), ended: make(chan struct{})}
	c.calls[pc.token] = pc
	return pc, c.lease.Name()
}

// forget unregisters pc: its reply, if it still comes, goes to nobody.
func (c *Client) forget(pc *pendingCall) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls[pc.token] != pc {
		return
	}
	delete(c.calls, pc.token)
	if pc.expiry != nil {
		pc.expiry.Stop()
	}
	c.leaveIfEmpty()
}

// accept records the worker and request an accepted frame names, and
// reports whether the call was abandoned meanwhile: then its caller sends
// the abort that abandon could not.
func (pc *pendingCall) accept(acc userquestions.Accepted) (abandoned bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.worker, pc.requestID = acc.Owner, acc.RequestID
	return pc.abandoned
}

// abandon ends a call whose caller stopped waiting: its worker is told to
// abort the wait (ASK_ABORTED) at once when it is known. If the worker is
// not known yet, the call stays registered until its accepted frame names
// one (onReply, or the waiting call when the frame was already on its way
// to it), or its reply or the release bound shows there is nothing to
// abort.
func (c *Client) abandon(pc *pendingCall) {
	pc.mu.Lock()
	worker, id := pc.worker, pc.requestID
	if worker == "" {
		if acc, ok := pendingAccepted(pc); ok {
			worker, id = acc.Owner, acc.RequestID
		} else {
			pc.abandoned = true // onReply sends the abort when the frame comes
		}
	}
	pc.mu.Unlock()
	if worker == "" {
		c.mu.Lock()
		if c.calls[pc.token] == pc {
			pc.expiry = time.AfterFunc(c.cfg.ReleaseBound, func() { c.forget(pc) })
		}
		c.mu.Unlock()
		return
	}
	c.forget(pc)
	c.abort(worker, id)
}

// abort tells worker to abort request id on a goroutine of its own, which
// Close waits for.
func (c *Client) abort(worker, id string) {
	c.goBackground(func() { c.sendAbort(worker, id) })
}

// sendAbort tells worker to abort request id, retrying while the worker is
// reachable but slow, so an abort is not lost to a brief disconnect.
func (c *Client) sendAbort(worker, id string) {
	for attempt := 0; attempt < 3; attempt++ {
		_, err := c.nc.Request(userquestions.WorkerSubject(worker, userquestions.VerbAbort), []byte(id), time.Second)
		if err == nil || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrConnectionClosed) {
			return
		}
	}
	c.log.Warn("abort not acknowledged; the wait ends with its deadline or its worker", "worker", worker, "request", id)
}

// onReply routes a frame or reply to its call.
func (c *Client) onReply(m *nats.Msg) {
	token := m.Subject[len(c.prefix):]
	c.mu.Lock()
	pc := c.calls[token]
	c.mu.Unlock()
	if pc == nil {
		return // the call ended; a late reply has nobody to go to
	}
	// Under pc.mu, so that abandon either sees this frame queued or has
	// marked the call abandoned before it is queued.
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.abandoned {
		c.forget(pc)
		if acc, ok := acceptedFrame(m); ok {
			c.abort(acc.Owner, acc.RequestID)
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
// aborted its waits; if a call's worker is gone or no longer has the call,
// its reply was lost or will never come.
func (c *Client) resync(ctx context.Context) {
	c.mu.Lock()
	calls := make([]*pendingCall, 0, len(c.calls))
	for _, pc := range c.calls {
		calls = append(calls, pc)
	}
	own := c.lease
	c.mu.Unlock()

	if alive, err := own.Alive(ctx); err == nil && !alive {
		for _, pc := range calls {
			pc.end(holdover.New(holdover.CodeAskAborted, "the agent was cut off from NATS longer than the release bound; its waits were ended"))
		}
		l, err := leases.Hold(ctx, c.nc, c.js, userquestions.RoleCaller, "", c.cfg.ReleaseBound)
		if err != nil {
			c.log.Error("hold caller lease again", "err", err)
			return
		}
		own.Drop()
		c.mu.Lock()
		c.lease = l
		c.mu.Unlock()
		return
	}
	c.workers.Recheck(ctx)
	for _, pc := range calls {
		pc.mu.Lock()
		worker, id := pc.worker, pc.requestID
		pc.mu.Unlock()
		if worker == "" {
			continue
		}
		reply, err := c.nc.RequestWithContext(ctx, userquestions.WorkerSubject(worker, userquestions.VerbStatus), []byte(id))
		switch {
		case errors.Is(err, nats.ErrNoResponders), err == nil && string(reply.Data) == "gone":
			pc.end(errWorkerLost)
		case err != nil:
			c.log.Warn("check call after reconnect", "worker", worker, "request", id, "err", err)
		}
	}
}
