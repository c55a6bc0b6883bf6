package worker

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
	"github.com/holdover-dev/holdover/waiter"
)

// The worker's side of claims: it hears every claims-stream consumer
// advisory, claims and releases its own waits (W2), sends each claim its
// one remainingMs frame (W3), closes the claims of a settled wait (W4), and
// reconciles against a listing of the stream after a reconnect, so a missed
// advisory never leaves a wait paused forever.

// defaultFrameTimeout bounds one JetStream operation on a claim or the
// worker's lease: a frame publish, a look-up, a deletion, holding the
// lease again.
const defaultFrameTimeout = 5 * time.Second

// onAdvisory handles $JS.EVENT.ADVISORY.CONSUMER.<ACTION>.CLAIMS.<name>
// on the advisory subscription's one goroutine: it reads the advisory and
// hands what needs JetStream to the consumer's lane (lanes), so that one
// slow publish or look-up holds up no other claim's advisories, while
// each consumer's advisories are still handled in order (a claim's
// deletion after its creation). Claims on other workers' waits, and on
// waits that have ended, get nothing (W3); a caller's lease that is
// deleted ends its waits here, in memory.
func (f *foregroundHalf) onAdvisory(m *nats.Msg) {
	rest := strings.TrimPrefix(m.Subject, leases.AdvisoryPrefix)
	action, rest, _ := strings.Cut(rest, ".")
	_, name, _ := strings.Cut(rest, ".")
	if action != "CREATED" && action != "DELETED" {
		return
	}
	created := action == "CREATED"
	key, claim := userquestions.ParseClaim(name)
	switch {
	case claim:
		w, ok := f.reg.Get(key)
		if !ok {
			return
		}
		f.lanes.do(name, func(ctx context.Context) {
			if created {
				f.addClaim(ctx, w, name)
			} else {
				f.releaseClaim(key, name)
			}
		})
	case created:
	case name == f.leaseName:
		f.lanes.do(name, f.leaseLost)
	default:
		f.callerGone(name)
	}
}

// genuine reports whether the consumer name on the claims stream is a
// claim as a Client holds one (lease.HoldConsumer): a push consumer on the
// claim's own frame subject, not durable, that NATS deletes once its
// holder's interest is gone. Only a role that may create consumers on
// frame subjects (the gateway) can make one; anything else named like a
// claim (a durable pull consumer an agent made through its lease right,
// issue 24) would pause the wait with no holder to probe and no end, so
// it never claims: it is deleted, counted and logged. A claim that is
// gone already is not genuine either; its advisory follows.
func (f *foregroundHalf) genuine(ctx context.Context, name string) bool {
	ctx, cancel := context.WithTimeout(ctx, f.frameTimeout)
	defer cancel()
	c, err := f.js.PushConsumer(ctx, streams.ClaimsStream, name)
	var cfg jetstream.ConsumerConfig
	switch {
	case errors.Is(err, jetstream.ErrNotPushConsumer):
		// a pull consumer: no holder to probe, nothing NATS ends
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return false
	case err != nil:
		f.log.Warn("look a claim up", "claim", name, ops.Err(err))
		return false
	default:
		cfg = c.CachedInfo().Config
		frames, _ := userquestions.FrameSubject(name)
		if cfg.Durable == "" && cfg.InactiveThreshold > 0 && cfg.FilterSubject == frames && len(cfg.FilterSubjects) == 0 {
			return true
		}
	}
	f.forged.WithLabelValues().Inc()
	f.log.Warn("a consumer named like a claim is not one a Client holds; deleted, it claims nothing",
		"claim", name, "durable", cfg.Durable, "deliver", cfg.DeliverSubject, "filter", cfg.FilterSubject, "inactive", cfg.InactiveThreshold, ops.Err(err))
	if err := leases.Delete(ctx, f.js, name); err != nil {
		f.log.Warn("delete a forged claim", "claim", name, ops.Err(err))
	}
	return false
}

// addClaim claims w under the consumer name and sends the claim's one
// frame. It reports false, sending nothing, when the waiter refuses the
// claim: the wait ended, the name already holds it, or this attach expired
// an overdue wait. Each JetStream operation is bounded by frameTimeout
// within ctx.
func (f *foregroundHalf) addClaim(ctx context.Context, w *waiter.Wait, name string) bool {
	if !f.genuine(ctx, name) {
		return false
	}
	remaining, ok := w.Claim(name)
	if !ok {
		return false
	}
	f.sendFrame(ctx, name, userquestions.RemainingFrame(remaining))
	if !w.Framed(name) {
		// The wait settled while the frame went out: its settlement left
		// this claim to be closed here, after its frame.
		f.closeClaim(ctx, name)
	}
	return true
}

// releaseClaim ends the claim under name: its Client released it, died, or
// lost its gateway. Losing the last claim restores the original deadline.
func (f *foregroundHalf) releaseClaim(key waiter.Key, name string) {
	if w, ok := f.reg.Get(key); ok {
		w.Release(name)
	}
}

// sendFrame stores a frame for the claim's consumer to deliver and returns
// its stream sequence, or 0 if it could not be sent.
func (f *foregroundHalf) sendFrame(ctx context.Context, name string, data []byte) uint64 {
	subject, ok := userquestions.FrameSubject(name)
	if !ok {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, f.frameTimeout)
	defer cancel()
	ack, err := f.js.Publish(ctx, subject, data)
	if err != nil {
		f.log.Warn("send claim frame", "claim", name, ops.Err(err))
		return 0
	}
	return ack.Sequence
}

// closeClaim sends the closing frame, which a push consumer's holder needs
// since it is not told of the deletion, and deletes the consumer once the
// frame has left: deleted earlier, the frame would never be pushed. It
// takes up to the release bound and a frameTimeout within ctx: a holder
// that is gone has the frame pushed to nobody.
func (f *foregroundHalf) closeClaim(ctx context.Context, name string) {
	seq := f.sendFrame(ctx, name, userquestions.ClosingFrame)
	ctx, cancel := context.WithTimeout(ctx, f.bound+f.frameTimeout)
	defer cancel()
	if seq > 0 {
		f.awaitPushed(ctx, name, seq)
	}
	if err := leases.Delete(ctx, f.js, name); err != nil {
		f.log.Warn("delete claim", "claim", name, ops.Err(err))
	}
}

// awaitPushed waits until the claim consumer has pushed the message at
// stream sequence seq, or has nobody to push it to, or is gone. The
// consumer pushes within microseconds of the store, so this is normally one
// look-up.
func (f *foregroundHalf) awaitPushed(ctx context.Context, name string, seq uint64) {
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		c, err := f.js.PushConsumer(ctx, streams.ClaimsStream, name)
		if err != nil {
			return // gone, or unknowable now: delete as planned
		}
		if info := c.CachedInfo(); info.Delivered.Stream >= seq || !info.PushBound {
			return
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return
		}
	}
}

// checkClaims asks the holder of each claim on w whether it is alive:
// the wait is past its deadline and held only by those claims, and its
// caller has asked whether it is live, as it does every half release
// bound past the deadline. A holder that freezes (SIGSTOP, a long pause)
// keeps its NATS connection, and so its claim consumer, until the
// server's pings close it, seconds later; one that does not answer within
// probePatience loses its claim instead, so a frozen Client holds a wait
// less than a release bound past its deadline (W2, issue 8).
func (f *foregroundHalf) checkClaims(w *waiter.Wait, names []string) {
	for _, name := range names {
		f.probes.Go(func() { f.checkClaim(w, name) })
	}
}

// checkClaim asks the holder of the claim name on w whether it is alive
// (probeClaim) and releases and deletes the claim of one that does not
// answer in time.
func (f *foregroundHalf) checkClaim(w *waiter.Wait, name string) {
	// The holder's patience runs on the clock of the deadline it holds the
	// wait past; frameTimeout only bounds the look-up and the probe.
	ctx, cancel := context.WithTimeout(context.Background(), f.frameTimeout)
	defer cancel()
	patience := f.clock.AfterFunc(f.probePatience(), cancel)
	defer patience.Stop()
	result, err := f.probeClaim(ctx, name)
	f.probed.WithLabelValues(result).Inc()
	if result != probeReleased {
		if err != nil {
			f.log.Warn("ask a claim holder whether it is alive", "claim", name, ops.Err(err))
		}
		return
	}
	key := w.Key()
	f.log.Warn("a claim holder did not answer past the wait's deadline; its claim is released",
		"claim", name, "session", key.Session, "call", key.CallID, "patience", f.probePatience(), ops.Err(err))
	w.Release(name)
	// Closed like the claims of a settled wait: a holder that thaws reads
	// the closing frame and knows it holds nothing (W4); the consumer is
	// deleted, so a reconcile does not claim it again, and NATS keeps
	// nothing for a holder that may never thaw. The claim's one frame went
	// out long before: it follows the claim by a publish, the probe came a
	// quarter bound after the caller's status.
	f.closeClaim(context.Background(), name)
}

// probePatience is how long a claim's holder has to answer a probe: a
// quarter of the release bound, so that a probe the caller's status
// request started has ended before the caller asks again, half a bound
// later.
func (f *foregroundHalf) probePatience() time.Duration { return f.bound / 4 }

// The results of a claim probe, as holdover_claim_probes_total counts them.
const (
	probeAlive    = "alive"
	probeReleased = "released"
	probeUnbound  = "unbound"
	probeFailed   = "failed"
)

// probeClaim sends the holder of the claim name a probe on the claim's
// deliver subject, where its frames arrive (userquestions.ProbeClaim),
// and waits for the answer until ctx ends. A claim with no subscriber is
// left to NATS, which ends it within the release bound: its holder may be
// reconnecting.
func (f *foregroundHalf) probeClaim(ctx context.Context, name string) (string, error) {
	c, err := f.js.PushConsumer(ctx, streams.ClaimsStream, name)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return probeUnbound, nil // gone: its advisory releases it
	case err != nil:
		return probeFailed, holdover.Wrapf(err, holdover.CodeInternal, "look up claim %s", name)
	}
	info := c.CachedInfo()
	if !info.PushBound {
		return probeUnbound, nil
	}
	answered, err := userquestions.ProbeClaim(ctx, f.nc, info.Config.DeliverSubject)
	switch {
	case answered:
		return probeAlive, nil
	case holdover.HasCode(err, holdover.CodeNotFound):
		return probeUnbound, nil // unsubscribed since the look-up
	case err != nil && ctx.Err() == nil:
		return probeFailed, err
	}
	return probeReleased, err
}

// leaseLost handles the loss of the worker's own lease: NATS thought the
// worker gone for longer than the release bound, so its callers have
// already turned their calls pending (or asked again) and Clients have
// dropped its requests. Its waits have nobody left and end; then the lease
// is held again under the same name for the waits to come, within a
// frameTimeout of ctx.
func (f *foregroundHalf) leaseLost(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, f.frameTimeout)
	defer cancel()
	f.leaseMu.Lock()
	defer f.leaseMu.Unlock()
	f.mu.Lock()
	if f.stopping {
		f.mu.Unlock()
		return
	}
	old := f.lease
	f.mu.Unlock()

	n := f.abandon()
	f.log.Warn("worker lease lost; its callers have given its waits up", "lease", f.leaseName, "waits", n)
	if alive, err := old.Alive(ctx); err == nil && alive {
		return // re-held by a concurrent call
	}
	old.Drop()
	l, err := leases.Hold(ctx, f.nc, f.js, userquestions.RoleWorker, f.leaseID, f.bound)
	if err != nil {
		f.log.Error("hold worker lease again", "lease", f.leaseName, ops.Err(err))
		return
	}
	f.mu.Lock()
	f.lease = l
	f.mu.Unlock()
}

// reconcileClaims compares what this worker holds with a listing of the
// claims stream: its own lease, the claims on its waits and the leases of
// its callers. Anything registered after the listing began is left for
// its own advisory, which the listing may not reflect yet.
func (f *foregroundHalf) reconcileClaims(ctx context.Context) {
	f.mu.Lock()
	stopping, own := f.stopping, f.lease
	f.mu.Unlock()
	if stopping {
		return
	}
	mark := f.reg.Mark()

	alive, err := own.Alive(ctx)
	if err != nil {
		f.log.Warn("reconcile: check worker lease", ops.Err(err))
		return
	}
	if !alive {
		f.leaseLost(ctx)
	}
	names, err := f.consumerNames(ctx)
	if err != nil {
		f.log.Warn("reconcile: list claims", ops.Err(err))
		return
	}
	claimsOf := make(map[waiter.Key][]string)
	for name := range names {
		if key, ok := userquestions.ParseClaim(name); ok {
			claimsOf[key] = append(claimsOf[key], name)
		}
	}

	for _, w := range f.reg.Waits() {
		key := w.Key()
		// New claims first, so a replaced claim never lets the deadline
		// fire in between. A listed claim may have gone since: claim it,
		// then look again, and its deletion is either seen there or
		// advised after the claim, where it releases.
		for _, name := range claimsOf[key] {
			if f.addClaim(ctx, w, name) {
				if exists, err := leases.Exists(ctx, f.js, name); err == nil && !exists {
					f.releaseClaim(key, name)
				}
			}
		}
		for _, name := range w.ClaimsBefore(mark) {
			if !names[name] {
				f.releaseClaim(key, name)
			}
		}
	}
	for _, caller := range f.reg.CallersBefore(mark) {
		if !names[caller] {
			f.callerGone(caller)
		}
	}
}

// consumerNames lists the claims stream's consumers: claims and leases.
func (f *foregroundHalf) consumerNames(ctx context.Context) (map[string]bool, error) {
	lister := f.claims.ConsumerNames(ctx)
	names := make(map[string]bool)
	for name := range lister.Name() {
		names[name] = true
	}
	if err := lister.Err(); err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "list claims")
	}
	return names, nil
}
