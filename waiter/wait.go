package waiter

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/holdover-dev/holdover"
)

// NoDeadline is the remaining time [Wait.Claim] reports for a wait without
// a deadline. A transport sends it as remainingMs -1: no countdown.
const NoDeadline time.Duration = -1

// Wait is the foreground wait of one call: its private cancellation, its
// original deadline and its Client claims (W1), with the request it was
// started with. It settles exactly once, with answers or an error, and then
// lets go of its timer, its claims and its registry entries (W7). All
// methods are safe for concurrent use.
type Wait struct {
	reg       *Registry
	key       Key
	id        string
	caller    string
	questions []holdover.Question
	intent    *holdover.Intent
	onSettle  func(w *Wait, claims []string)
	timeout   time.Duration
	deadline  time.Time // the original deadline; zero without one
	seq       uint64    // registration order; set by the registry under its lock

	ctx        context.Context
	cancel     context.CancelCauseFunc
	stopParent func() bool
	done       chan struct{}

	mu       sync.Mutex
	claims   []*hold
	unframed []*hold         // claims held at settlement whose frame had not gone out
	timer    clockwork.Timer // armed only while there is a deadline and no claim
	settled  bool
	answers  []holdover.Answer // the outcome; read freely once done is closed
	err      error
}

func newWait(parent context.Context, r *Registry, req Request) *Wait {
	w := &Wait{
		reg: r, key: req.Key, id: req.ID, caller: req.Caller,
		questions: req.Questions, intent: req.Intent, onSettle: req.Settled,
		timeout: req.Timeout, done: make(chan struct{}),
	}
	if req.Timeout > 0 {
		w.deadline = r.clock.Now().Add(req.Timeout)
	}
	// The parent's values but not its cancellation (W1): expiry must
	// not end the Turn, and the Turn's end reaches the wait through the watch
	// Start installs.
	w.ctx, w.cancel = context.WithCancelCause(context.WithoutCancel(parent))
	return w
}

// Deadline returns the original Host deadline, and false for a wait that
// has none. Claims stop the timer but never move it (W2).
func (w *Wait) Deadline() (time.Time, bool) { return w.deadline, !w.deadline.IsZero() }

// Key returns the call the wait belongs to.
func (w *Wait) Key() Key { return w.key }

// ID returns the request id it was started with.
func (w *Wait) ID() string { return w.id }

// Questions returns what it asks; the slice is shared, not to be changed.
func (w *Wait) Questions() []holdover.Question { return w.questions }

// Intent returns the intent it asks with, if any.
func (w *Wait) Intent() *holdover.Intent { return w.intent }

// Timed reports whether it has a deadline: an askTimed wait.
func (w *Wait) Timed() bool { return !w.deadline.IsZero() }

// Context is the wait's private cancellation. It is cancelled when the wait
// settles, whatever the outcome; its cause is the settling error
// (ASK_TIMED_OUT after expiry), or [context.Canceled] after an answer.
// A transport stops delivering the waterfall request when it is done.
func (w *Wait) Context() context.Context { return w.ctx }

// Done is closed once the wait has settled and left the registry. An
// outcome call that lost the race can return before Done closes, while the
// winner is still releasing the wait: wait on Done, not on that call.
func (w *Wait) Done() <-chan struct{} { return w.done }

// Claim records that an answer UI holds the wait, under the transport's id
// for it (the claim consumer's name), and stops the deadline timer (W2).
//
// ok reports whether the transport sends the claim's one remainingMs frame
// (W3): remaining is the time left to the original deadline, never below
// 0, or [NoDeadline]. Once the frame has gone out the transport calls
// [Wait.Framed]. ok is false, and no frame is due, when the wait has
// ended, when id already holds a claim (its frame was computed at its
// first attach), or when the wait had no claim and its deadline has
// passed: then this attach expires it.
func (w *Wait) Claim(id string) (remaining time.Duration, ok bool) {
	w.mu.Lock()
	if w.settled || w.heldLocked(id) != nil {
		w.mu.Unlock()
		return 0, false
	}
	now := w.reg.clock.Now()
	if len(w.claims) == 0 && w.overdue(now) {
		framed := w.recordLocked(nil, w.expired())
		w.mu.Unlock()
		w.release(framed)
		return 0, false
	}
	if len(w.claims) == 0 && w.timer != nil {
		w.timer.Stop()
	}
	w.claims = append(w.claims, &hold{id: id, seq: w.reg.nextSeq()})
	w.mu.Unlock()

	if w.deadline.IsZero() {
		return NoDeadline, true
	}
	return max(0, w.deadline.Sub(now)), true
}

// Framed records that the claim under id has had its remainingMs frame,
// and reports whether its closing is left to the settlement: the claim is
// among those [Request.Settled] gets, or was released and needs nothing.
// It is false when the wait settled while the frame went out: the
// transport closes that claim itself, after its frame, so a Client never
// sees the closing frame first (W3, W4).
func (w *Wait) Framed(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c := w.heldLocked(id); c != nil {
		c.framed = true
		return true
	}
	i := slices.IndexFunc(w.unframed, func(c *hold) bool { return c.id == id })
	if i < 0 {
		return true
	}
	w.unframed = slices.Delete(w.unframed, i, i+1)
	return false
}

// ClaimsBefore returns the ids of the claims held now that were registered
// at or before mark ([Registry.Mark]).
func (w *Wait) ClaimsBefore(mark uint64) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []string
	for _, c := range w.claims {
		if c.seq <= mark {
			ids = append(ids, c.id)
		}
	}
	return ids
}

// Answer settles the wait with a Client's answer batch. The wait keeps the
// slice. It returns false, dropping the batch, if another outcome came
// first (W8). Checking the batch against the questions is the caller's job.
func (w *Wait) Answer(answers []holdover.Answer) bool { return w.settle(answers, nil) }

// Reject settles the wait with err: a Client countdown's ASK_TIMED_OUT
// (W5), a closed panel's ASK_CANCELLED, or any other failure, which the ask
// result carries unchanged. It returns false, dropping err, if another
// outcome came first (W8). A nil err is taken as an internal failure.
func (w *Wait) Reject(err error) bool {
	if err == nil {
		err = holdover.New(holdover.CodeInternal, "the question was rejected without a reason")
	}
	return w.settle(nil, err)
}

// NoProvider tells the wait that no Client took the request. A wait with a
// deadline keeps running to it, still claimable by a Client that joins
// later (W6). A wait without one (a blocking ask) ends at once with
// NO_PROVIDER. NoProvider reports whether it ended the wait.
func (w *Wait) NoProvider() bool {
	if !w.deadline.IsZero() {
		return false
	}
	return w.settle(nil, holdover.New(holdover.CodeNoProvider, "no Client is connected to answer the question"))
}

// Result waits for the outcome: the answer batch, or the settling error.
//
// ctx is the caller's interest in the outcome. If it ends first, the
// caller is gone and nobody could receive an answer: the wait ends with
// ASK_ABORTED, unless another outcome won that race, and Result returns
// whichever outcome won.
func (w *Wait) Result(ctx context.Context) ([]holdover.Answer, error) {
	select {
	case <-w.done:
	case <-ctx.Done():
		w.settle(nil, aborted(ctx, w.key))
		<-w.done
	}
	return w.answers, w.err
}

// settle records the first outcome and reports whether it was first.
func (w *Wait) settle(answers []holdover.Answer, err error) bool {
	w.mu.Lock()
	if w.settled {
		w.mu.Unlock()
		return false
	}
	framed := w.recordLocked(answers, err)
	w.mu.Unlock()
	w.release(framed)
	return true
}

// recordLocked records the outcome of a live wait, stops the timer and
// drops the claims, and returns the ids of the claims whose frame went out
// (the others stay in unframed, for Framed). The caller holds w.mu and,
// once it has unlocked it, calls release with the ids.
func (w *Wait) recordLocked(answers []holdover.Answer, err error) (framed []string) {
	w.settled = true
	w.answers, w.err = answers, err
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	for _, c := range w.claims {
		if c.framed {
			framed = append(framed, c.id)
		} else {
			w.unframed = append(w.unframed, c)
		}
	}
	w.claims = nil
	return framed
}

// release finishes a settlement recordLocked recorded, without w.mu: it
// releases everything else, closes done (W7) and tells the transport,
// which closes the framed claims.
func (w *Wait) release(framed []string) {
	w.stopParent()
	w.cancel(w.err)
	w.reg.remove(w)
	close(w.done)
	if w.onSettle != nil {
		w.onSettle(w, framed)
	}
}

// expired is the outcome of an unclaimed wait whose deadline has passed (W5).
func (w *Wait) expired() error {
	return holdover.Newf(holdover.CodeAskTimedOut,
		"no answer arrived within the %v foreground wait of call %q", w.timeout, w.key.CallID)
}

// arm starts the deadline timer for d, reusing the wait's one timer. Callers
// hold w.mu.
func (w *Wait) arm(d time.Duration) {
	if w.timer == nil {
		w.timer = w.reg.clock.AfterFunc(d, w.onTimer)
		return
	}
	w.timer.Reset(d)
}

// onTimer runs when the deadline timer fires, which is only ever at the
// original deadline. A firing that lost the race to an answer, or to an
// attach that expired the wait itself, finds nothing to do; a claimed wait
// never expires by the timer.
func (w *Wait) onTimer() {
	w.mu.Lock()
	if w.settled || len(w.claims) > 0 {
		w.mu.Unlock()
		return
	}
	framed := w.recordLocked(nil, w.expired())
	w.mu.Unlock()
	w.release(framed)
}

// ClaimsPastDeadline returns the ids of the claims that hold the wait
// past its deadline: none before the deadline, for a wait without one, or
// for an unclaimed one. A transport checks that their holders are still
// alive (W2): a holder that froze keeps its claim until its connection is
// closed, and the deadline timer does not run while it is held.
func (w *Wait) ClaimsPastDeadline() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.settled || !w.overdue(w.reg.clock.Now()) {
		return nil
	}
	ids := make([]string, 0, len(w.claims))
	for _, c := range w.claims {
		ids = append(ids, c.id)
	}
	return ids
}

// overdue reports whether the wait has a deadline and it has passed.
func (w *Wait) overdue(now time.Time) bool {
	return !w.deadline.IsZero() && !now.Before(w.deadline)
}

func (w *Wait) heldLocked(id string) *hold {
	i := slices.IndexFunc(w.claims, func(c *hold) bool { return c.id == id })
	if i < 0 {
		return nil
	}
	return w.claims[i]
}

// Release ends the claim under id: its Client delegated, tore down or
// disconnected. Losing the last claim restores the original deadline: the
// timer runs for what is left of it, or the wait expires at once if it has
// passed (W2). Releasing twice, a claim never held, or after the wait
// settled, does nothing. Release does not close the claim's stream; the
// wait's settlement does ([Wait.Done], [Request.Settled]).
func (w *Wait) Release(id string) {
	w.mu.Lock()
	i := slices.IndexFunc(w.claims, func(c *hold) bool { return c.id == id })
	if i < 0 {
		w.mu.Unlock()
		return
	}
	w.claims = slices.Delete(w.claims, i, i+1)
	if len(w.claims) > 0 || w.deadline.IsZero() {
		w.mu.Unlock()
		return
	}
	now := w.reg.clock.Now()
	if !w.overdue(now) {
		w.arm(w.deadline.Sub(now))
		w.mu.Unlock()
		return
	}
	framed := w.recordLocked(nil, w.expired())
	w.mu.Unlock()
	w.release(framed)
}

// hold is one claim: an answer UI's hold on a wait (W2, W4), under the
// transport's id for it. Guarded by its wait's mu.
type hold struct {
	id     string
	seq    uint64 // registration order, for ClaimsBefore
	framed bool   // its remainingMs frame has gone out
}

// aborted is the outcome of a wait whose caller went away (W5).
func aborted(ctx context.Context, key Key) error {
	return holdover.Wrapf(context.Cause(ctx), holdover.CodeAskAborted, "the caller stopped waiting before call %q was answered", key.CallID)
}
