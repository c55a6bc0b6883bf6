package caller

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/userquestions"
)

// The caller's backstop for a timed call whose worker froze.
//
// A worker that freezes (SIGSTOP, a long GC or VM pause) keeps its NATS
// connection, and so its lease, until the server's pings close it: its
// timers do not fire, and its callers, watching the lease, hear nothing.
// The caller knows the deadline, though. Half a release bound past it, a
// call still waiting asks its worker whether the wait is live (the status
// request a reconnect uses), giving it another half bound to answer:
//
//   - "live": the worker is running and holds the deadline; a Client's
//     claim may be pausing it (W2). Asked again every half bound.
//   - no answer in time, or nobody subscribed: the worker is frozen or
//     gone. The call ends as a lost worker (pending, the question stays
//     answerable) and the worker is told to abort it when it wakes.
//   - "gone" twice in a row: the worker ended the wait, but its reply did
//     not come (a reply overtaken by the status answer comes between the
//     two asks): lost too.
//
// So a timed call ends at most one release bound after its deadline, with
// no Client claim holding it, whether its worker dies, is cut off or
// freezes. The hook into a call is backstopFor and the overdue channel
// waitCall selects on; this file holds everything else.

// backstop watches one timed call past its deadline.
type backstop struct {
	c     *Client
	pc    *pendingCall
	every time.Duration // half a release bound: between asks, and an ask's patience

	overdue chan struct{} // closed when the worker failed to vouch for the call

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
	misses  int // asks in a row that did not find the wait live
}

// timedDeadline is when a timed call sent now is due: its deadline
// starts when the worker receives it, which is no earlier. A timeout the
// service will refuse gets no deadline.
func timedDeadline(req holdover.AskTimedRequest) time.Time {
	if req.TimeoutMs <= 0 {
		return time.Time{}
	}
	return time.Now().Add(time.Duration(req.TimeoutMs) * time.Millisecond)
}

// backstopFor arms the backstop of a timed call with deadline (the zero
// time for a call without one, which gets none) and returns the channel
// closed once its worker failed to vouch for it, and the function that
// disarms it when the call ends.
func (c *Client) backstopFor(pc *pendingCall, deadline time.Time) (<-chan struct{}, func()) {
	if deadline.IsZero() {
		return nil, func() {}
	}
	b := &backstop{c: c, pc: pc, every: c.cfg.ReleaseBound / 2, overdue: make(chan struct{})}
	b.mu.Lock()
	b.timer = time.AfterFunc(time.Until(deadline)+b.every, b.check)
	b.mu.Unlock()
	return b.overdue, b.stop
}

func (b *backstop) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	b.timer.Stop()
}

// check asks the call's worker about it, on the timer's goroutine, which
// the Client's Close waits for and whose ask it ends.
func (b *backstop) check() {
	if !b.c.track() {
		return // closed: the call has ended
	}
	defer b.c.background.Done()
	b.pc.mu.Lock()
	worker, id := b.pc.worker, b.pc.requestID
	b.pc.mu.Unlock()
	live := false
	lost := false
	switch {
	case worker == "":
		// No accepted frame yet: the worker that took the call is frozen
		// before it could say so, or its frame is on the way.
	default:
		ctx, cancel := context.WithTimeout(b.c.closing, b.every)
		reply, err := b.c.nc.RequestWithContext(ctx, userquestions.WorkerSubject(worker, userquestions.VerbStatus), []byte(id))
		cancel()
		switch {
		case err == nil:
			live = string(reply.Data) == "live"
		case b.c.closing.Err() != nil:
			return // closed: the call has ended
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrNoResponders):
			lost = true
		default:
			// The caller's own connection is in trouble: its reconnect
			// resynchronises the call; ask again later.
			live = true
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	if live {
		b.misses = 0
	} else {
		b.misses++
	}
	if lost || b.misses >= 2 {
		b.stopped = true
		b.c.log.Warn("the worker of a timed call did not vouch for it past its deadline; the call ends pending",
			"worker", worker, "request", id)
		close(b.overdue)
		return
	}
	b.timer.Reset(b.every)
}
