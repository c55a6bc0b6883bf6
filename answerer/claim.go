package answerer

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/userquestions"
	"github.com/holdover-dev/holdover/waiter"
)

// Claim is a Client's hold on one keyed or timed wait (W2–W4), opened with
// [Delivery.AttachWait]. While it is open the wait's deadline does not run.
// It stays open until the worker closes it when the request settles
// ([Claim.Closed]), or until the Client releases it by delegating or
// tearing down ([Claim.Release]). A Client that dies simply stops holding
// it; NATS ends it within the release bound. A gateway holds one for each
// claim stream (attachWait) a web or terminal Client opens through it;
// termclient.ClaimStream is the terminal Client's end of that stream.
type Claim struct {
	name string
	js   jetstream.JetStream
	sub  *nats.Subscription

	first     chan time.Duration
	closed    chan struct{}
	closeOnce sync.Once
	release   sync.Once
}

// attachWait opens a claim on the wait of (sid, callID).
func attachWait(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, sid, callID string, bound time.Duration) (*Claim, error) {
	name, subject, err := userquestions.NewClaimName(sid, callID)
	if err != nil {
		return nil, err
	}
	c := &Claim{name: name, js: js, first: make(chan time.Duration, 1), closed: make(chan struct{})}
	meta := map[string]string{"session": sid, "callId": callID}
	c.sub, err = leases.HoldConsumer(ctx, nc, js, name, subject, bound, meta, c.onFrame)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Claim) onFrame(m *nats.Msg) {
	if userquestions.IsProbe(m) {
		_ = m.Respond(nil) // alive: the worker keeps the claim past the deadline
		return
	}
	var f userquestions.ClaimFrame
	if json.Unmarshal(m.Data, &f) != nil {
		return
	}
	switch {
	case f.Closed:
		c.closeOnce.Do(func() { close(c.closed) })
	case f.RemainingMs != nil:
		d := waiter.NoDeadline
		if *f.RemainingMs >= 0 {
			d = time.Duration(*f.RemainingMs) * time.Millisecond
		}
		select {
		case c.first <- d:
		default: // the worker sends one; a second could only be a replay
		}
	}
}

// Name is the claim's consumer name, as `nats consumer ls CLAIMS` shows it.
func (c *Claim) Name() string { return c.name }

// Remaining waits for the claim's one frame (W3) and returns the time
// left to the wait's deadline, as the worker computed it, or [waiter.NoDeadline] for a wait
// without one. The Client's countdown starts from it. A wait that has
// already ended sends no frame: Remaining then returns when ctx ends, or
// NOT_FOUND if the worker closes the claim first.
func (c *Claim) Remaining(ctx context.Context) (time.Duration, error) {
	select {
	case d := <-c.first:
		c.first <- d // later calls see it too
		return d, nil
	case <-c.closed:
		return 0, holdover.New(holdover.CodeNotFound, "the wait ended before the claim got its frame")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Closed is closed when the worker closes the claim: the request settled.
// The worker has deleted the consumer; Release then drops the subscription.
func (c *Claim) Closed() <-chan struct{} { return c.closed }

// Release gives the claim up: the wait's deadline runs again, from what is
// left of the original deadline (W2). Delegation and Client teardown
// release before passing the request on (W4). Releasing twice, or after
// the worker closed the claim, does nothing.
func (c *Claim) Release(ctx context.Context) error {
	var err error
	c.release.Do(func() {
		// Deleting first makes the release immediate; unsubscribing alone
		// would hold the wait for the release bound.
		err = leases.Delete(ctx, c.js, c.name)
		if uerr := c.sub.Unsubscribe(); uerr != nil && !errors.Is(uerr, nats.ErrConnectionClosed) && err == nil {
			err = holdover.Wrapf(uerr, holdover.CodeInternal, "unsubscribe %s", c.name)
		}
	})
	return err
}
