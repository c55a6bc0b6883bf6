package waiter

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/waiter/waitertest"
)

func TestW1DuplicateWaitUntilTheFirstSettles(t *testing.T) {
	_, r := newTest(t)
	first := start(t, r, callA, 5*time.Second)

	_, err := r.Start(context.Background(), Request{Key: callA, Timeout: 5 * time.Second})
	assertCode(t, holdover.CodeDuplicateWait, err)
	_, err = r.Start(context.Background(), Request{Key: callA, Timeout: 0})
	assertCode(t, holdover.CodeDuplicateWait, err, "a blocking keyed ask shares the key space")
	live(t, first)

	other := start(t, r, Key{Session: "s2", CallID: callA.CallID}, 5*time.Second)
	sibling := start(t, r, callB, 5*time.Second)
	assert.Equal(t, 3, r.Len())

	require.True(t, first.Answer(batch))
	second := start(t, r, callA, 5*time.Second) // the key is free again
	got, found := r.Get(callA)
	assert.True(t, found)
	assert.Same(t, second, got)

	for _, w := range []*Wait{second, other, sibling} {
		w.Answer(nil)
	}
	assert.Equal(t, 0, r.Len())
}

func TestW1ConcurrentStartsOneWins(t *testing.T) {
	_, r := newTest(t)
	const n = 16
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		waits []*Wait
		dups  int
	)
	for range n {
		wg.Go(func() {
			w, err := r.Start(context.Background(), Request{Key: callA, Timeout: 5 * time.Second})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				assertCode(t, holdover.CodeDuplicateWait, err)
				dups++
				return
			}
			waits = append(waits, w)
		})
	}
	wg.Wait()
	require.Len(t, waits, 1)
	assert.Equal(t, n-1, dups)
	waits[0].Answer(nil)
}

func TestUnkeyedWaitsAreCountedNotFound(t *testing.T) {
	_, r := newTest(t)
	a := start(t, r, Key{Session: "s1"}, 0)
	b := start(t, r, Key{Session: "s1"}, 0) // legacy asks never collide
	assert.Equal(t, 2, r.Len())
	_, found := r.Get(Key{Session: "s1"})
	assert.False(t, found)
	assert.Empty(t, r.Waits())

	a.Answer(batch)
	b.Reject(holdover.New(holdover.CodeAskCancelled, "closed"))
	assert.Equal(t, 0, r.Len())
}

func TestEndAllEndsEveryLiveWait(t *testing.T) {
	clock, r := newTest(t)
	var ws []*Wait
	var claims []held
	for i := range 3 {
		w := start(t, r, Key{Session: fmt.Sprintf("s%d", i), CallID: "c"}, 5*time.Second)
		c, _ := claim(t, w, "client")
		ws, claims = append(ws, w), append(claims, c)
	}
	ws = append(ws, start(t, r, Key{Session: "s9"}, 0))
	done := start(t, r, Key{Session: "s0", CallID: "answered"}, 5*time.Second)
	done.Answer(batch)

	shutdown := holdover.New(holdover.CodeAskTimedOut, "the worker is shutting down")
	var asked []*Wait
	end := func(w *Wait) error { asked = append(asked, w); return shutdown }
	assert.Equal(t, 4, r.EndAll(end))
	assert.ElementsMatch(t, ws, asked, "end is asked for every live wait, and only those")
	for _, w := range ws {
		settledNow(t, w)
		outcome, err := TimedOutcome(w.Result(context.Background()))
		require.NoError(t, err)
		assert.True(t, outcome.Pending, "a shutdown leaves the question answerable")
	}
	for _, c := range claims {
		<-c.Closed()
	}
	assert.Equal(t, 0, r.Len())
	assert.Equal(t, 0, waitertest.Timers(clock))
	assert.Equal(t, 0, r.EndAll(end))
}

// W5, W7: a caller known to be gone has its waits ended, keyed or not,
// and nobody else's; they leave every index.
func TestEndCallerEndsOnlyThatCallersWaits(t *testing.T) {
	_, r := newTest(t)
	startFor := func(key Key, timeout time.Duration, caller string) *Wait {
		w, err := r.Start(context.Background(), Request{Key: key, Timeout: timeout, Caller: caller, ID: key.Session + "/" + key.CallID + "/" + caller})
		require.NoError(t, err)
		return w
	}
	a := startFor(callA, 5*time.Second, "agent-1")
	b := startFor(callB, 0, "agent-1")
	u := startFor(Key{Session: "s2"}, 0, "agent-1")
	other := startFor(Key{Session: "s1", CallID: "call-c"}, 5*time.Second, "agent-2")

	gone := holdover.New(holdover.CodeAskAborted, "the agent is gone")
	assert.Equal(t, 3, r.EndCaller("agent-1", func(*Wait) error { return gone }))
	for _, w := range []*Wait{a, b, u} {
		settledNow(t, w)
		_, err := w.Result(context.Background())
		assert.Same(t, gone, err)
		_, found := r.ByRequest(w.ID())
		assert.False(t, found)
	}
	live(t, other)
	assert.Equal(t, []*Wait{other}, r.Waits())
	assert.Equal(t, []*Wait{other}, r.Session("s1"))
	assert.Empty(t, r.Session("s2"))
	assert.Equal(t, []string{"agent-2"}, r.CallersBefore(r.Mark()))
	assert.Equal(t, 0, r.EndCaller("agent-1", func(*Wait) error { return gone }))
	other.Answer(nil)
	assert.Empty(t, r.CallersBefore(r.Mark()))
}

// A wait is found by its request id and listed with its Session's waits,
// keyed or not, with what it was asked; both let go of it once it settles.
func TestWaitsAreFoundByRequestAndSession(t *testing.T) {
	_, r := newTest(t)
	qs := []holdover.Question{{ID: "q1", Question: "Ship it?"}}
	intent := &holdover.Intent{Kind: holdover.IntentPlanReview, Approve: "yes"}
	timed, err := r.Start(context.Background(), Request{Key: callA, ID: "req-1", Caller: "agent-1", Timeout: time.Second, Questions: qs})
	require.NoError(t, err)
	legacy, err := r.Start(context.Background(), Request{Key: Key{Session: "s1"}, ID: "req-2", Questions: qs, Intent: intent})
	require.NoError(t, err)
	_, err = r.Start(context.Background(), Request{Key: callB, ID: "req-1"})
	assertCode(t, holdover.CodeInternal, err, "a request id names one live wait")

	got, found := r.ByRequest("req-1")
	require.True(t, found)
	assert.Same(t, timed, got)
	assert.Equal(t, "req-1", timed.ID())
	assert.Equal(t, []string{"agent-1"}, r.CallersBefore(r.Mark()))
	assert.Equal(t, qs, timed.Questions())
	assert.True(t, timed.Timed())
	assert.False(t, legacy.Timed())
	assert.Same(t, intent, legacy.Intent())
	assert.ElementsMatch(t, []*Wait{timed, legacy}, r.Session("s1"))

	timed.Answer(batch)
	legacy.Answer(batch)
	_, found = r.ByRequest("req-1")
	assert.False(t, found)
	assert.Empty(t, r.Session("s1"))
	_, err = r.Start(context.Background(), Request{Key: callB, ID: "req-1"})
	assert.NoError(t, err, "the id is free once its wait settled")
}

// W4, W8: the settle hook runs once, whichever outcome wins, after the
// wait left the registry, with the claims whose frames went out; a claim
// whose frame was still going out is left to Framed, which says so.
func TestSettledRunsOnceWithTheFramedClaims(t *testing.T) {
	_, r := newTest(t)
	type settlement struct {
		w      *Wait
		claims []string
		live   int
	}
	settled := make(chan settlement, 4)
	w, err := r.Start(context.Background(), Request{Key: callA, Timeout: 5 * time.Second, Settled: func(w *Wait, claims []string) {
		settled <- settlement{w, claims, r.Len()}
	}})
	require.NoError(t, err)
	claim(t, w, "framed")
	assert.True(t, w.Framed("framed"))
	claim(t, w, "framing")
	claim(t, w, "released")
	w.Release("released")
	assert.True(t, w.Framed("released"), "a released claim needs no closing")

	require.True(t, w.Answer(batch))
	w.Reject(holdover.New(holdover.CodeAskCancelled, "too late"))
	w.NoProvider()
	got := <-settled
	assert.Same(t, w, got.w)
	assert.Equal(t, []string{"framed"}, got.claims)
	assert.Equal(t, 0, got.live, "the wait has left the registry")
	assert.Empty(t, settled, "once")

	assert.False(t, w.Framed("framing"), "settled while its frame went out: the transport closes it")
	assert.True(t, w.Framed("framing"), "and only once")
	answered(t, w)
}

// Reconciliation marks: claims and callers registered after a mark are
// not reported before it.
func TestMarksOrderClaimsAndCallers(t *testing.T) {
	_, r := newTest(t)
	w, err := r.Start(context.Background(), Request{Key: callA, Timeout: 5 * time.Second, Caller: "agent-1"})
	require.NoError(t, err)
	claim(t, w, "before")
	mark := r.Mark()
	claim(t, w, "after")
	late, err := r.Start(context.Background(), Request{Key: callB, Caller: "agent-2"})
	require.NoError(t, err)

	assert.Equal(t, []string{"before"}, w.ClaimsBefore(mark))
	assert.ElementsMatch(t, []string{"before", "after"}, w.ClaimsBefore(r.Mark()))
	assert.Equal(t, []string{"agent-1"}, r.CallersBefore(mark))
	assert.ElementsMatch(t, []string{"agent-1", "agent-2"}, r.CallersBefore(r.Mark()))
	w.Answer(batch)
	late.Answer(batch)
}
