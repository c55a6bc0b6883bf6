package waiter

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
)

var callA = Key{Session: "s1", CallID: "call-a"}

// newTest returns a fake clock and a registry reading it.
func newTest(t *testing.T) (*clockwork.FakeClock, *Registry) {
	t.Helper()
	clock := clockwork.NewFakeClock()
	return clock, NewRegistry(clock)
}

// timers counts the fake clock's pending timers. BlockUntilContext with a
// cancelled context answers at once: nil when at least n are pending.
func timers(clock *clockwork.FakeClock) int {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	for clock.BlockUntilContext(ctx, n+1) == nil {
		n++
	}
	return n
}

// settled waits for w to settle. The fake clock runs timer callbacks in
// their own goroutine, so expiry lands shortly after Advance returns; the
// bound only turns a hang into a failure.
func settled(t *testing.T, w *Wait) {
	t.Helper()
	select {
	case <-w.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("wait did not settle")
	}
}

// live asserts that w has not settled.
func live(t *testing.T, w *Wait) {
	t.Helper()
	select {
	case <-w.Done():
		t.Fatal("wait settled early")
	default:
	}
}

func result(t *testing.T, w *Wait) ([]holdover.Answer, error) {
	t.Helper()
	settled(t, w)
	return w.Result(context.Background())
}

func start(t *testing.T, r *Registry, key Key, timeout time.Duration) *Wait {
	t.Helper()
	w, err := r.Start(context.Background(), key, timeout)
	require.NoError(t, err)
	return w
}

func TestW2UnclaimedWaitExpiresAtDeadline(t *testing.T) {
	clock, r := newTest(t)
	w := start(t, r, callA, 5*time.Second)
	assert.Equal(t, 1, timers(clock))

	clock.Advance(5*time.Second - time.Millisecond)
	live(t, w)
	clock.Advance(time.Millisecond)
	_, err := result(t, w)
	assert.True(t, holdover.HasCode(err, holdover.CodeAskTimedOut), "got %v", err)
	assert.Equal(t, 0, timers(clock))
	assert.Equal(t, 0, r.Len())
}

func TestW2ClaimGetsRemainingAndLeavingRestoresOriginalDeadline(t *testing.T) {
	clock, r := newTest(t)
	w := start(t, r, callA, 5*time.Second)

	clock.Advance(time.Second)
	c, remaining, ok := w.Claim("client-1")
	require.True(t, ok)
	assert.Equal(t, 4000*time.Millisecond, remaining)
	assert.Equal(t, 0, timers(clock), "no Host timer while claimed")

	clock.Advance(2 * time.Second) // +3 s
	live(t, w)
	c.Release()
	assert.Equal(t, 1, timers(clock))

	clock.Advance(2*time.Second - time.Millisecond) // +4.999 s
	live(t, w)
	clock.Advance(time.Millisecond) // +5 s: the original deadline, not +3+4
	_, err := result(t, w)
	assert.True(t, holdover.HasCode(err, holdover.CodeAskTimedOut), "got %v", err)
}

func TestW8FirstAnswerWins(t *testing.T) {
	_, r := newTest(t)
	w := start(t, r, callA, 5*time.Second)
	batch := []holdover.Answer{{ID: "q1", Selected: []string{"yes"}}}
	assert.True(t, w.Answer(batch))
	assert.False(t, w.Reject(holdover.New(holdover.CodeAskTimedOut, "late countdown")))
	assert.False(t, w.Answer(nil))
	got, err := w.Result(context.Background())
	require.NoError(t, err)
	assert.Equal(t, batch, got)
}
