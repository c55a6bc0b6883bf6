package userquestions

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/holdover-dev/holdover"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/waiter"
)

// A claim (W2–W4) is an ephemeral push consumer on the claims stream that
// an answer UI holds while it shows a keyed or timed request. The Host
// never hears from it directly: the worker owning the wait sees the
// consumer appear and disappear through JetStream's consumer advisories,
// and NATS itself removes the consumer InactiveThreshold after its
// subscriber's interest is gone, whether the Client closed it, crashed or
// lost its gateway. No heartbeat travels over a claim; the only messages
// in it are the Host's frames: exactly one remainingMs frame after the
// attach, and a closing frame when the request settles.
//
// A consumer name carries everything a worker needs to act on an advisory,
// which names only stream and consumer:
//
//	claim~<session>~<call token>~<claim id>   a Client's claim on one wait
//	lease~<role>~<id>                         a process's liveness lease (package lease)
//
// Session ids and call tokens never hold '~' (streams.CheckSession,
// streams.Token), so the split is unambiguous.
const (
	nameSep    = leases.Sep
	claimKind  = "claim"
	claimTopic = streams.ClaimFramePrefix + "." // + <session>.<call token>.<claim id>: the claim's frames
	maxNameLen = 255                            // JetStream's limit on consumer names
)

// DefaultReleaseBound is how long NATS keeps a claim or lease after its
// holder's interest is gone: the bound on noticing a dead Client, gateway,
// agent or worker.
const DefaultReleaseBound = leases.DefaultReleaseBound

// MinReleaseBound is the shortest release bound accepted (see
// lease.MinReleaseBound).
const MinReleaseBound = leases.MinReleaseBound

// newClaimName returns the consumer name and the frame subject of a new
// claim on the wait of (sid, callID).
func newClaimName(sid, callID string) (name, subject string, err error) {
	if err := streams.CheckSession(sid); err != nil {
		return "", "", err
	}
	tok, err := streams.Token(callID)
	if err != nil {
		return "", "", holdover.Newf(holdover.CodeBadRequest, "call id: %v", err)
	}
	id := nuid.Next()
	name = strings.Join([]string{claimKind, sid, tok, id}, nameSep)
	if len(name) > maxNameLen {
		return "", "", holdover.Newf(holdover.CodeBadRequest,
			"Session %q and call %q are too long together to name a claim (%d of %d bytes)", sid, callID, len(name), maxNameLen)
	}
	return name, claimTopic + sid + "." + tok + "." + id, nil
}

// frameSubject is the subject whose messages the claim consumer delivers.
func frameSubject(name string) (string, bool) {
	if _, ok := parseClaim(name); !ok {
		return "", false
	}
	parts := strings.Split(name, nameSep)
	return claimTopic + parts[1] + "." + parts[2] + "." + parts[3], true
}

// parseClaim reads the wait a claim consumer name claims; ok is false for
// leases and for any name newClaimName would not have made.
func parseClaim(name string) (waiter.Key, bool) {
	parts := strings.Split(name, nameSep)
	// The Session id and the claim id (a nuid) are both plain tokens.
	if len(parts) != 4 || parts[0] != claimKind || streams.CheckSession(parts[1]) != nil || streams.CheckSession(parts[3]) != nil {
		return waiter.Key{}, false
	}
	call, err := streams.FromToken(parts[2])
	if err != nil {
		return waiter.Key{}, false
	}
	if tok, err := streams.Token(call); err != nil || tok != parts[2] {
		return waiter.Key{}, false // not the one spelling Token gives: a subject could differ
	}
	return waiter.Key{Session: parts[1], CallID: call}, true
}

// ClaimFrame is one message the Host sends into a claim: the one
// Host-computed remaining time (W3), or the closing frame (W4).
// RemainingMs is -1 for a wait without a Host deadline. It is stored in
// the claims stream until delivered, so its shape is in the persistence
// catalog (D10).
type ClaimFrame struct {
	RemainingMs *int64 `json:"remainingMs,omitempty"`
	Closed      bool   `json:"closed,omitempty"`
}

func remainingFrame(d time.Duration) []byte {
	ms := int64(-1)
	if d != waiter.NoDeadline {
		ms = d.Milliseconds()
	}
	data, _ := json.Marshal(ClaimFrame{RemainingMs: &ms}) // a pointer to an int always encodes
	return data
}

var closingFrame = []byte(`{"closed":true}`)

// Claim is a Client's hold on one keyed or timed wait (W2–W4), opened with
// [Delivery.AttachWait]. While it is open the Host deadline does not run.
// It stays open until the Host closes it when the request settles
// ([Claim.Closed]), or until the Client releases it by delegating or
// tearing down ([Claim.Release]). A Client that dies simply stops holding
// it; NATS ends it within the release bound.
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
	name, subject, err := newClaimName(sid, callID)
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
	var f ClaimFrame
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
		default: // the Host sends one; a second could only be a replay
		}
	}
}

// Name is the claim's consumer name, as `nats consumer ls CLAIMS` shows it.
func (c *Claim) Name() string { return c.name }

// Remaining waits for the claim's one Host-computed frame (W3) and returns
// the time left to the Host deadline, or [waiter.NoDeadline] for a wait
// without one. The Client's countdown starts from it. A wait that has
// already ended sends no frame: Remaining then returns when ctx ends, or
// NOT_FOUND if the Host closes the claim first.
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

// Closed is closed when the Host closes the claim: the request settled.
// The Host has deleted the consumer; Release then drops the subscription.
func (c *Claim) Closed() <-chan struct{} { return c.closed }

// Release gives the claim up: the Host deadline runs again, from what is
// left of the original deadline (W2). Delegation and Client teardown
// release before passing the request on (W4). Releasing twice, or after
// the Host closed the claim, does nothing.
func (c *Claim) Release(ctx context.Context) error {
	var err error
	c.release.Do(func() {
		// Deleting first makes the release immediate; unsubscribing alone
		// would hold the wait for the release bound.
		err = leases.Delete(ctx, c.js, c.name)
		if uerr := c.sub.Unsubscribe(); uerr != nil && !errors.Is(uerr, nats.ErrConnectionClosed) && err == nil {
			err = holdover.Newf(holdover.CodeInternal, "unsubscribe %s: %v", c.name, uerr)
		}
	})
	return err
}
