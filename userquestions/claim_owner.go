package userquestions

import (
	"context"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/holdover-dev/holdover"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/waiter"
)

// The worker's side of claims: it hears every claims-stream consumer
// advisory, claims and releases its own waits (W2), sends each claim its
// one remainingMs frame (W3), closes the claims of a settled wait (W4), and
// reconciles against a listing of the stream after a reconnect, so a missed
// advisory never leaves a wait paused forever.

// frameTimeout bounds one frame publish or consumer deletion.
const frameTimeout = 5 * time.Second

// onAdvisory handles $JS.EVENT.ADVISORY.CONSUMER.<ACTION>.CLAIMS.<name>.
func (fg *foreground) onAdvisory(m *nats.Msg) {
	rest := strings.TrimPrefix(m.Subject, leases.AdvisoryPrefix)
	action, rest, _ := strings.Cut(rest, ".")
	_, name, _ := strings.Cut(rest, ".")
	switch action {
	case "CREATED":
		fg.claimed(name)
	case "DELETED":
		fg.deleted(name)
	}
}

// claimed handles a new claim consumer. Claims on other workers' waits,
// and on waits that have ended, get no frame (W3).
func (fg *foreground) claimed(name string) {
	key, ok := parseClaim(name)
	if !ok {
		return
	}
	if lw := fg.keyed(key); lw != nil {
		fg.addClaim(lw, name)
	}
}

// deleted handles a vanished claim or lease.
func (fg *foreground) deleted(name string) {
	if key, ok := parseClaim(name); ok {
		fg.releaseClaim(key, name)
		return
	}
	if name == fg.leaseName {
		fg.ownerLost(context.Background())
		return
	}
	fg.callerGone(name)
}

func (fg *foreground) keyed(key waiter.Key) *liveWait {
	fg.mu.Lock()
	defer fg.mu.Unlock()
	return fg.byKey[key]
}

// addClaim claims lw's wait under the consumer name and sends the claim's
// one frame. It reports false, sending nothing, when the waiter refuses the
// claim: the wait ended, the name already holds it, or this attach expired
// an overdue wait.
func (fg *foreground) addClaim(lw *liveWait, name string) bool {
	_, remaining, ok := lw.w.Claim(name)
	if !ok {
		return false
	}
	fg.mu.Lock()
	fg.seq++
	seq := fg.seq
	fg.mu.Unlock()

	lw.mu.Lock()
	if lw.ended {
		// The wait settled after the claim: finish has already closed the
		// others, so this one is closed here.
		lw.mu.Unlock()
		fg.closeClaim(name)
		return true
	}
	// The frame goes out under lw.mu, so it always precedes the closing
	// frame finish sends.
	fg.sendFrame(name, remainingFrame(remaining))
	lw.claims = append(lw.claims, heldClaim{name: name, seq: seq})
	lw.mu.Unlock()
	return true
}

// releaseClaim ends the claim under name: its Client released it, died, or
// lost its gateway. Losing the last claim restores the original deadline.
func (fg *foreground) releaseClaim(key waiter.Key, name string) {
	lw := fg.keyed(key)
	if lw == nil {
		return
	}
	lw.mu.Lock()
	for i, c := range lw.claims {
		if c.name == name {
			lw.claims = append(lw.claims[:i], lw.claims[i+1:]...)
			break
		}
	}
	lw.mu.Unlock()
	if c, ok := lw.w.Claimed(name); ok {
		c.Release()
	}
}

// sendFrame stores a frame for the claim's consumer to deliver and returns
// its stream sequence, or 0 if it could not be sent.
func (fg *foreground) sendFrame(name string, data []byte) uint64 {
	subject, ok := frameSubject(name)
	if !ok {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), frameTimeout)
	defer cancel()
	ack, err := fg.js.Publish(ctx, subject, data)
	if err != nil {
		fg.log.Warn("send claim frame", "claim", name, "err", err)
		return 0
	}
	return ack.Sequence
}

// closeClaim sends the closing frame, which a push consumer's holder needs
// since it is not told of the deletion, and deletes the consumer once the
// frame has left: deleted earlier, the frame would never be pushed.
func (fg *foreground) closeClaim(name string) {
	seq := fg.sendFrame(name, closingFrame)
	ctx, cancel := context.WithTimeout(context.Background(), fg.bound+frameTimeout)
	defer cancel()
	if seq > 0 {
		fg.awaitPushed(ctx, name, seq)
	}
	if err := leases.Delete(ctx, fg.js, name); err != nil {
		fg.log.Warn("delete claim", "claim", name, "err", err)
	}
}

// awaitPushed waits until the claim consumer has pushed the message at
// stream sequence seq, or has nobody to push it to, or is gone. The
// consumer pushes within microseconds of the store, so this is normally one
// look-up.
func (fg *foreground) awaitPushed(ctx context.Context, name string, seq uint64) {
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		c, err := fg.js.PushConsumer(ctx, streams.ClaimsStream, name)
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

// ownerLost handles the loss of the worker's own lease: NATS thought the
// worker gone for longer than the release bound, so its callers have
// already turned their calls pending (or asked again) and Clients have
// dropped its requests. Its waits have nobody left and end; then the lease
// is held again under the same name for the waits to come.
func (fg *foreground) ownerLost(ctx context.Context) {
	fg.leaseMu.Lock()
	defer fg.leaseMu.Unlock()
	fg.mu.Lock()
	if fg.stopping {
		fg.mu.Unlock()
		return
	}
	waits := make([]*liveWait, 0, len(fg.byRequest))
	for _, lw := range fg.byRequest {
		waits = append(waits, lw)
	}
	old := fg.lease
	fg.mu.Unlock()

	fg.log.Warn("worker lease lost; its callers have given its waits up", "lease", fg.leaseName, "waits", len(waits))
	abandon(waits)
	if alive, err := old.Alive(ctx); err == nil && alive {
		return // re-held by a concurrent call
	}
	old.Drop()
	l, err := leases.Hold(ctx, fg.nc, fg.js, roleWorker, fg.leaseID, fg.bound)
	if err != nil {
		fg.log.Error("hold worker lease again", "lease", fg.leaseName, "err", err)
		return
	}
	fg.mu.Lock()
	fg.lease = l
	fg.mu.Unlock()
}

// reconcileClaims compares what this worker holds with a listing of the
// claims stream: its own lease, the claims on its waits and the leases of
// its callers. Anything registered after the listing began is left for
// its own advisory, which the listing may not reflect yet.
func (fg *foreground) reconcileClaims(ctx context.Context) {
	fg.mu.Lock()
	if fg.stopping {
		fg.mu.Unlock()
		return
	}
	mark := fg.seq
	own := fg.lease
	fg.mu.Unlock()

	alive, err := own.Alive(ctx)
	if err != nil {
		fg.log.Warn("reconcile: check worker lease", "err", err)
		return
	}
	if !alive {
		fg.ownerLost(ctx)
	}
	names, err := fg.consumerNames(ctx)
	if err != nil {
		fg.log.Warn("reconcile: list claims", "err", err)
		return
	}
	claimsOf := make(map[waiter.Key][]string)
	for name := range names {
		if key, ok := parseClaim(name); ok {
			claimsOf[key] = append(claimsOf[key], name)
		}
	}

	fg.mu.Lock()
	waits := make([]*liveWait, 0, len(fg.byKey))
	for _, lw := range fg.byKey {
		waits = append(waits, lw)
	}
	var callers []string
	for caller, set := range fg.byCaller {
		for _, lw := range set {
			if lw.seq <= mark {
				callers = append(callers, caller)
				break
			}
		}
	}
	fg.mu.Unlock()

	for _, lw := range waits {
		key := lw.w.Key()
		// New claims first, so a replaced claim never lets the deadline
		// fire in between. A listed claim may have gone since: claim it,
		// then look again, and its deletion is either seen there or
		// advised after the claim, where it releases.
		for _, name := range claimsOf[key] {
			if fg.addClaim(lw, name) {
				if exists, err := leases.Exists(ctx, fg.js, name); err == nil && !exists {
					fg.releaseClaim(key, name)
				}
			}
		}
		lw.mu.Lock()
		var vanished []string
		for _, c := range lw.claims {
			if c.seq <= mark && !names[c.name] {
				vanished = append(vanished, c.name)
			}
		}
		lw.mu.Unlock()
		for _, name := range vanished {
			fg.releaseClaim(key, name)
		}
	}
	for _, caller := range callers {
		if !names[caller] {
			fg.callerGone(caller)
		}
	}
}

// consumerNames lists the claims stream's consumers: claims and leases.
func (fg *foreground) consumerNames(ctx context.Context) (map[string]bool, error) {
	lister := fg.s.top.Claims.ConsumerNames(ctx)
	names := make(map[string]bool)
	for name := range lister.Name() {
		names[name] = true
	}
	if err := lister.Err(); err != nil {
		return nil, holdover.Newf(holdover.CodeInternal, "list claims: %v", err)
	}
	return names, nil
}
