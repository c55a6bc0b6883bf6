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

	_, err := r.Start(context.Background(), callA, 5*time.Second)
	assertCode(t, holdover.CodeDuplicateWait, err)
	_, err = r.Start(context.Background(), callA, 0)
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
			w, err := r.Start(context.Background(), callA, 5*time.Second)
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
	var claims []*Claim
	for i := range 3 {
		w := start(t, r, Key{Session: fmt.Sprintf("s%d", i), CallID: "c"}, 5*time.Second)
		c, _ := claim(t, w, "client")
		ws, claims = append(ws, w), append(claims, c)
	}
	ws = append(ws, start(t, r, Key{Session: "s9"}, 0))
	done := start(t, r, Key{Session: "s0", CallID: "answered"}, 5*time.Second)
	done.Answer(batch)

	shutdown := holdover.New(holdover.CodeAskTimedOut, "the worker is shutting down")
	assert.Equal(t, 4, r.EndAll(shutdown))
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
	assert.Equal(t, 0, r.EndAll(shutdown))
}

func TestEndSessionEndsOnlyThatSession(t *testing.T) {
	_, r := newTest(t)
	a := start(t, r, callA, 5*time.Second)
	b := start(t, r, callB, 0)
	u := start(t, r, Key{Session: "s1"}, 0)
	other := start(t, r, Key{Session: "s2", CallID: "call-a"}, 5*time.Second)

	gone := holdover.New(holdover.CodeAskAborted, "the agent of s1 is gone")
	assert.Equal(t, 3, r.EndSession("s1", gone))
	for _, w := range []*Wait{a, b, u} {
		settledNow(t, w)
		_, err := w.Result(context.Background())
		assert.Same(t, gone, err)
	}
	live(t, other)
	assert.Equal(t, []*Wait{other}, r.Waits())
	other.Answer(nil)
}
