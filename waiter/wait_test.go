package waiter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/waiter/waitertest"
)

var (
	callA = Key{Session: "s1", CallID: "call-a"}
	callB = Key{Session: "s1", CallID: "call-b"}
	batch = []holdover.Answer{{ID: "q1", Selected: []string{"yes"}}}
)

// newTest returns a fake clock and a registry reading it.
func newTest(t *testing.T) (*clockwork.FakeClock, *Registry) {
	t.Helper()
	clock := clockwork.NewFakeClock()
	return clock, NewRegistry(clock)
}

// settled waits for w to settle. The fake clock runs a due timer's callback
// in its own goroutine, so expiry lands just after Advance returns; the
// bound only turns a hang into a failure.
func settled(t *testing.T, w *Wait) {
	t.Helper()
	select {
	case <-w.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("wait did not settle")
	}
}

// settledNow asserts that w has already settled, for outcomes that settle
// inside the call that caused them.
func settledNow(t *testing.T, w *Wait) {
	t.Helper()
	select {
	case <-w.Done():
	default:
		t.Fatal("wait is still live")
	}
}

// live asserts that w has not settled.
func live(t *testing.T, w *Wait) {
	t.Helper()
	select {
	case <-w.Done():
		_, err := w.Result(context.Background())
		t.Fatalf("wait settled early: %v", err)
	default:
	}
}

func result(t *testing.T, w *Wait) ([]holdover.Answer, error) {
	t.Helper()
	settled(t, w)
	return w.Result(context.Background())
}

func assertCode(t *testing.T, code holdover.Code, err error, why ...any) {
	t.Helper()
	assert.Equal(t, code, holdover.CodeOf(err), "error: %v %s", err, fmt.Sprint(why...))
}

func start(t *testing.T, r *Registry, key Key, timeout time.Duration) *Wait {
	t.Helper()
	w, err := r.Start(context.Background(), Request{Key: key, Timeout: timeout})
	require.NoError(t, err)
	return w
}

// startUnder starts a wait whose parent is a Turn context the test can
// cancel; the parent ends with the test at the latest.
func startUnder(t *testing.T, r *Registry, key Key, timeout time.Duration) (*Wait, context.Context, context.CancelCauseFunc) {
	t.Helper()
	parent, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	w, err := r.Start(parent, Request{Key: key, Timeout: timeout})
	require.NoError(t, err)
	return w, parent, cancel
}

// answered asserts that w settled with batch.
func answered(t *testing.T, w *Wait) {
	t.Helper()
	got, err := w.Result(context.Background())
	require.NoError(t, err)
	assert.Equal(t, batch, got)
}

// claimIDs returns the ids of the claims w holds now.
func claimIDs(w *Wait) []string { return w.ClaimsBefore(math.MaxUint64) }

// held is a test's handle on the claim id of w.
type held struct {
	w  *Wait
	id string
}

func (h held) Release()                { h.w.Release(h.id) }
func (h held) Closed() <-chan struct{} { return h.w.Done() }
func (h held) ID() string              { return h.id }

func claim(t *testing.T, w *Wait, id string) (held, time.Duration) {
	t.Helper()
	remaining, ok := w.Claim(id)
	require.True(t, ok, "claim %s", id)
	return held{w, id}, remaining
}

type ctxKey struct{}

func TestW1PrivateCancellationKeepsParentValuesNotItsFate(t *testing.T) {
	clock, r := newTest(t)
	parent := context.WithValue(context.Background(), ctxKey{}, "turn-7")
	w, err := r.Start(parent, Request{Key: callA, Timeout: 5 * time.Second})
	require.NoError(t, err)

	assert.Equal(t, "turn-7", w.Context().Value(ctxKey{}), "values flow from the Turn")
	assert.Equal(t, callA, w.Key())
	clock.Advance(5 * time.Second)
	settled(t, w)
	<-w.Context().Done()
	assertCode(t, holdover.CodeAskTimedOut, context.Cause(w.Context()))
	assert.NoError(t, parent.Err())
}

func TestW1ParentAlreadyEndedStartsNothing(t *testing.T) {
	_, r := newTest(t)
	parent, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.Start(parent, Request{Key: callA, Timeout: 5 * time.Second})
	assertCode(t, holdover.CodeAskAborted, err)
	assert.ErrorIs(t, err, context.Canceled, "the abort keeps why the parent ended")
	assert.Equal(t, 0, r.Len())
}

func TestW1StartChecksTimeoutAndKey(t *testing.T) {
	_, r := newTest(t)
	for _, d := range []time.Duration{-time.Millisecond, holdover.MaxTimeout + time.Millisecond} {
		_, err := r.Start(context.Background(), Request{Key: callA, Timeout: d})
		assertCode(t, holdover.CodeBadTimeout, err)
	}
	_, err := r.Start(context.Background(), Request{Key: Key{Session: "s1"}, Timeout: time.Second})
	assertCode(t, holdover.CodeBadRequest, err)
	assert.Equal(t, 0, r.Len())

	w := start(t, r, callA, holdover.MaxTimeout)
	assert.True(t, w.Answer(batch))
}

func TestW2UnclaimedWaitExpiresAtDeadline(t *testing.T) {
	clock, r := newTest(t)
	w := start(t, r, callA, 5*time.Second)
	assert.Equal(t, 1, waitertest.Timers(clock))

	clock.Advance(5*time.Second - time.Millisecond)
	live(t, w)
	clock.Advance(time.Millisecond)
	_, err := result(t, w)
	assertCode(t, holdover.CodeAskTimedOut, err)
	assert.Equal(t, 0, waitertest.Timers(clock))
	assert.Equal(t, 0, r.Len())
}

func TestW2LeavingRestoresTheOriginalDeadline(t *testing.T) {
	clock, r := newTest(t)
	w := start(t, r, callA, 5*time.Second)

	clock.Advance(time.Second)
	c, remaining := claim(t, w, "client-1")
	assert.Equal(t, 4000*time.Millisecond, remaining)
	assert.Equal(t, 0, waitertest.Timers(clock), "no deadline timer while claimed")

	clock.Advance(2 * time.Second) // +3 s
	live(t, w)
	c.Release()
	assert.Equal(t, 1, waitertest.Timers(clock))

	clock.Advance(2*time.Second - time.Millisecond) // +4.999 s
	live(t, w)
	clock.Advance(time.Millisecond) // +5 s: the original deadline, not +3+4
	_, err := result(t, w)
	assertCode(t, holdover.CodeAskTimedOut, err)
}

func TestW2TwoClaimsHoldPastDeadlineUntilTheLastLeaves(t *testing.T) {
	clock, r := newTest(t)
	w := start(t, r, callA, 5*time.Second)
	a, _ := claim(t, w, "client-a")
	b, _ := claim(t, w, "client-b")

	clock.Advance(15 * time.Second) // 10 s past the deadline
	live(t, w)
	assert.Equal(t, 0, waitertest.Timers(clock))

	a.Release()
	live(t, w)
	assert.Equal(t, []string{"client-b"}, claimIDs(w))
	assert.Equal(t, 0, waitertest.Timers(clock), "one claim still holds the wait")

	b.Release() // the deadline has passed: expire at once
	settledNow(t, w)
	_, err := w.Result(context.Background())
	assertCode(t, holdover.CodeAskTimedOut, err)
}

func TestW2ReclaimStopsTheTimerAgain(t *testing.T) {
	clock, r := newTest(t)
	w := start(t, r, callA, 5*time.Second)
	c, _ := claim(t, w, "client-1")
	clock.Advance(time.Second)
	c.Release()
	assert.Equal(t, 1, waitertest.Timers(clock))

	clock.Advance(time.Second) // +2 s, unclaimed: the timer runs
	c, remaining := claim(t, w, "client-1")
	assert.Equal(t, 3000*time.Millisecond, remaining)
	assert.Equal(t, 0, waitertest.Timers(clock))

	clock.Advance(time.Hour)
	live(t, w)
	assert.True(t, w.Answer(batch))
	c.Release()
}

func TestW3OneRemainingFramePerClaim(t *testing.T) {
	clock, r := newTest(t)
	w := start(t, r, callA, 5*time.Second)
	c, remaining := claim(t, w, "client-1")
	assert.Equal(t, 5000*time.Millisecond, remaining)

	clock.Advance(time.Second)
	again, ok := w.Claim("client-1") // a repeated advisory or a reconcile listing
	assert.False(t, ok, "a held claim gets no second frame")
	assert.Zero(t, again)
	assert.True(t, slices.Contains(claimIDs(w), "client-1"))
	assert.Equal(t, []string{"client-1"}, claimIDs(w))

	clock.Advance(10 * time.Second) // past the deadline, still held
	d, remaining := claim(t, w, "client-2")
	assert.Equal(t, time.Duration(0), remaining, "remaining never goes below 0")
	c.Release()
	d.Release()
	settledNow(t, w)
}

func TestW3AttachToEndedWaitYieldsNoFrame(t *testing.T) {
	_, r := newTest(t)
	w := start(t, r, callA, 5*time.Second)
	require.True(t, w.Answer(batch))
	remaining, ok := w.Claim("client-1")
	assert.False(t, ok)
	assert.Zero(t, remaining)
	assert.False(t, slices.Contains(claimIDs(w), "client-1"))
}

// lateClock is a fake clock whose timer callbacks wait at gate: a deadline
// timer that is due but has not run yet, the window in which an attach must
// expire the wait itself (W3).
type lateClock struct {
	*clockwork.FakeClock
	gate chan struct{}
}

func (c lateClock) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	return c.FakeClock.AfterFunc(d, func() { <-c.gate; f() })
}

func TestW3UnclaimedPastDeadlineAttachExpiresTheWait(t *testing.T) {
	clock := lateClock{clockwork.NewFakeClock(), make(chan struct{})}
	r := NewRegistry(clock)
	w := start(t, r, callA, 5*time.Second)

	clock.Advance(5 * time.Second)
	live(t, w) // the timer is due, its callback held at the gate
	_, ok := w.Claim("client-1")
	assert.False(t, ok, "no frame for an expired wait")
	assert.False(t, slices.Contains(claimIDs(w), "client-1"))
	settledNow(t, w)
	_, err := w.Result(context.Background())
	assertCode(t, holdover.CodeAskTimedOut, err)
	assert.Equal(t, 0, r.Len())

	close(clock.gate) // the late callback finds the wait settled
	assert.False(t, w.Answer(batch))
}

func TestW4EveryClaimClosesWhenTheWaitSettles(t *testing.T) {
	clock, r := newTest(t)
	w := start(t, r, callA, 5*time.Second)
	a, _ := claim(t, w, "client-a")
	b, _ := claim(t, w, "client-b")
	c, _ := claim(t, w, "client-c")
	c.Release()
	select {
	case <-c.Closed():
		t.Fatal("Release alone does not close the claim stream")
	default:
	}

	require.True(t, w.Answer(batch))
	for _, cl := range []held{a, b, c} {
		select {
		case <-cl.Closed():
		default:
			t.Fatalf("claim %s still open after settlement", cl.ID())
		}
	}
	assert.Empty(t, claimIDs(w))

	// The Clients let go after settlement: harmless, no timer comes back.
	a.Release()
	b.Release()
	b.Release()
	assert.Equal(t, 0, waitertest.Timers(clock))
	answered(t, w)
}

func TestW5ExpiryAbortsOnlyTheWait(t *testing.T) {
	clock, r := newTest(t)
	w, parent, _ := startUnder(t, r, callA, 2*time.Second)
	c, _ := claim(t, w, "client-1")
	c.Release() // claim loss never cancels the parent

	clock.Advance(2 * time.Second)
	outcome, err := TimedOutcome(w.Result(parent))
	require.NoError(t, err)
	assert.Equal(t, holdover.Outcome{Pending: true}, outcome)
	assertCode(t, holdover.CodeAskTimedOut, context.Cause(w.Context()))
	assert.NoError(t, parent.Err(), "expiry never cancels the Turn (W7)")
}

func TestW5ClientCountdownRejectionIsPending(t *testing.T) {
	_, r := newTest(t)
	w := start(t, r, callA, 5*time.Second)
	c, _ := claim(t, w, "client-1")
	require.True(t, w.Reject(holdover.New(holdover.CodeAskTimedOut, "the Client countdown ran out")))
	<-c.Closed()
	outcome, err := TimedOutcome(w.Result(context.Background()))
	require.NoError(t, err)
	assert.True(t, outcome.Pending)
	assert.Empty(t, outcome.Answers)
}

func TestW5ParentCancellationAbortsAndClosesClaims(t *testing.T) {
	clock, r := newTest(t)
	w, _, cancel := startUnder(t, r, callA, 5*time.Second)
	c, _ := claim(t, w, "client-1")

	turnEnded := errors.New("the turn ended")
	cancel(turnEnded)
	settled(t, w)
	<-c.Closed()
	outcome, err := TimedOutcome(w.Result(context.Background()))
	assertCode(t, holdover.CodeAskAborted, err)
	assert.ErrorIs(t, err, turnEnded, "the abort keeps the parent's cancel cause")
	assert.Equal(t, holdover.Outcome{}, outcome)
	assert.Equal(t, 0, waitertest.Timers(clock))
	assert.Equal(t, 0, r.Len())
}

func TestW5CallerGoneFromResultAborts(t *testing.T) {
	_, r := newTest(t)
	w := start(t, r, callA, 5*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := w.Result(ctx)
	assertCode(t, holdover.CodeAskAborted, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0, r.Len(), "no orphan wait")
}

func TestW5OtherFailuresPropagateUnchanged(t *testing.T) {
	_, r := newTest(t)
	for _, reject := range []error{
		holdover.New(holdover.CodeAskCancelled, "the panel was closed"),
		holdover.New(holdover.CodeInternal, "the Client broke"),
	} {
		w := start(t, r, callA, 5*time.Second)
		require.True(t, w.Reject(reject))
		_, err := TimedOutcome(w.Result(context.Background()))
		assert.Same(t, reject, err)
	}

	w := start(t, r, callA, 5*time.Second)
	require.True(t, w.Reject(nil))
	_, err := w.Result(context.Background())
	assertCode(t, holdover.CodeInternal, err)
}

func TestW5AnswersPassThrough(t *testing.T) {
	outcome, err := TimedOutcome(batch, nil)
	require.NoError(t, err)
	assert.Equal(t, holdover.Outcome{Answers: batch}, outcome)
}

func TestW6NoProviderWaitsOutTheDeadline(t *testing.T) {
	clock, r := newTest(t)
	w := start(t, r, callA, 5*time.Second)
	assert.False(t, w.NoProvider(), "not final in a timed wait")
	live(t, w)

	clock.Advance(5 * time.Second)
	outcome, err := TimedOutcome(result(t, w))
	require.NoError(t, err)
	assert.True(t, outcome.Pending)
}

func TestW6NoProviderThenALateClientAnswers(t *testing.T) {
	clock, r := newTest(t)
	w := start(t, r, callA, 5*time.Second)
	w.NoProvider()
	clock.Advance(2 * time.Second)
	c, remaining := claim(t, w, "late-client")
	assert.Equal(t, 3000*time.Millisecond, remaining)
	require.True(t, w.Answer(batch))
	<-c.Closed()
	answered(t, w)
}

func TestW6NoProviderThenParentCancelAborts(t *testing.T) {
	_, r := newTest(t)
	w, _, cancel := startUnder(t, r, callA, 5*time.Second)
	w.NoProvider()
	cancel(nil)
	_, err := result(t, w)
	assertCode(t, holdover.CodeAskAborted, err)
}

func TestW6BlockingAskFailsNoProviderAtOnce(t *testing.T) {
	_, r := newTest(t)
	for _, key := range []Key{
		{Session: "s1", CallID: "keyed"}, // timeout -1 in the timed schema (M3)
		{Session: "s1"},                  // legacy, unkeyed (M1)
	} {
		w := start(t, r, key, 0)
		assert.True(t, w.NoProvider())
		settledNow(t, w)
		_, err := w.Result(context.Background())
		assertCode(t, holdover.CodeNoProvider, err)
	}
	assert.Equal(t, 0, r.Len())
}

func TestW7CompletionReleasesEverything(t *testing.T) {
	for name, end := range map[string]func(*Wait){
		"answer": func(w *Wait) { w.Answer(batch) },
		"reject": func(w *Wait) { w.Reject(holdover.New(holdover.CodeAskCancelled, "closed")) },
	} {
		t.Run(name, func(t *testing.T) {
			clock, r := newTest(t)
			w, parent, _ := startUnder(t, r, callA, 5*time.Second)
			c, _ := claim(t, w, "client-1")
			c.Release() // the timer runs again
			require.Equal(t, 1, waitertest.Timers(clock))

			end(w)
			settledNow(t, w)
			assert.Equal(t, 0, waitertest.Timers(clock), "no timer left")
			assert.Equal(t, 0, r.Len(), "no registry entry left")
			_, found := r.Get(callA)
			assert.False(t, found)
			assert.Empty(t, claimIDs(w))
			<-c.Closed()
			<-w.Context().Done()
			assert.NoError(t, parent.Err())

			clock.Advance(time.Hour)
			_, err := w.Result(context.Background())
			assert.NotEqual(t, holdover.CodeAskTimedOut, holdover.CodeOf(err))
		})
	}
}

func TestSiblingWaitsAreIndependent(t *testing.T) {
	clock, r := newTest(t)
	a := start(t, r, callA, 2*time.Second)
	b := start(t, r, callB, 5*time.Second)
	cb, _ := claim(t, b, "client-1")

	clock.Advance(2 * time.Second)
	_, err := result(t, a)
	assertCode(t, holdover.CodeAskTimedOut, err)
	live(t, b)
	assert.Equal(t, []string{"client-1"}, claimIDs(b))
	select {
	case <-cb.Closed():
		t.Fatal("a sibling's expiry closed this claim")
	default:
	}

	clock.Advance(10 * time.Second) // b is claimed: no expiry
	live(t, b)
	require.True(t, b.Answer(batch))
	answered(t, b)
}

func TestNoDeadlineNeverExpires(t *testing.T) {
	clock, r := newTest(t)
	w := start(t, r, Key{Session: "s1", CallID: "blocking"}, 0)
	assert.Equal(t, 0, waitertest.Timers(clock), "no timer without a deadline")

	c, remaining := claim(t, w, "client-1")
	assert.Equal(t, NoDeadline, remaining)
	c.Release()
	assert.Equal(t, 0, waitertest.Timers(clock), "losing the last claim arms nothing")

	clock.Advance(1000 * time.Hour)
	live(t, w)
	require.True(t, w.Answer(batch))
	answered(t, w)
}

// W2, issue 8: the claims holding a wait past its deadline are what a
// transport checks; before the deadline, unclaimed, or settled, none.
func TestW2ClaimsPastDeadline(t *testing.T) {
	clock, r := newTest(t)
	w := start(t, r, callA, 5*time.Second)
	a, _ := claim(t, w, "client-a")
	claim(t, w, "client-b")
	assert.Empty(t, w.ClaimsPastDeadline(), "before the deadline")
	clock.Advance(5 * time.Second)
	assert.Equal(t, []string{"client-a", "client-b"}, w.ClaimsPastDeadline())
	a.Release()
	assert.Equal(t, []string{"client-b"}, w.ClaimsPastDeadline())
	assert.True(t, w.Answer(batch))
	assert.Empty(t, w.ClaimsPastDeadline(), "settled")

	blocking := start(t, r, callB, 0)
	claim(t, blocking, "client-c")
	clock.Advance(time.Hour)
	assert.Empty(t, blocking.ClaimsPastDeadline(), "no deadline to be past")
}
