package caller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/streams"
)

// Issue 25: nothing a Client starts outlives its Close. A timed call is in
// progress, its backstop asking the frozen owner about it (an ask that
// would wait half the release bound, 2 s), and a second call was
// abandoned, its
// abort sent: Close ends the call, cuts the ask short, waits for the
// abort, and leaves no goroutine of the Client (its reply subscription,
// its resync, its timers) running.
func TestNothingOfAClientOutlivesClose(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	owner := newStuckOwner(t, env.Server.ClientURL(), func() string { return "" })
	nc, _ := embeddedtest.Connect(t, env.Server.ClientURL())
	leaks := embeddedtest.Leaks(t, nc)
	c, err := New(context.Background(), nc, Config{ReleaseBound: 4 * time.Second})
	require.NoError(t, err)

	ctx, abandon := context.WithCancel(context.Background())
	abandoned := make(chan error, 1)
	go func() {
		_, err := c.AskTimed(ctx, holdover.AskTimedRequest{Session: "s1", CallID: "c0", Agent: backstopAsk.Agent, Questions: q1, TimeoutMs: 60_000})
		abandoned <- err
	}()
	require.Eventually(t, func() bool { return c.knowsWorkerOf("c0") }, 10*time.Second, time.Millisecond)
	abandon()
	assert.Equal(t, holdover.CodeAskAborted, holdover.CodeOf(<-abandoned))
	select {
	case <-owner.aborts:
	case <-time.After(10 * time.Second):
		t.Fatal("the owner was not told to abort")
	}

	timed := make(chan error, 1)
	go func() {
		_, err := c.AskTimed(context.Background(), holdover.AskTimedRequest{Session: "s1", CallID: "c1", Agent: backstopAsk.Agent, Questions: q1, TimeoutMs: 1})
		timed <- err
	}()
	select {
	case <-owner.statuses: // the backstop asks, and nobody answers
	case <-time.After(time.Minute):
		t.Fatal("the backstop did not ask the owner")
	}
	require.NoError(t, c.Close())
	assert.Equal(t, holdover.CodeAskAborted, holdover.CodeOf(<-timed))
	goleak.VerifyNone(t, leaks...)
}

// knowsWorkerOf reports whether the call of callID in progress has its
// accepted frame.
func (c *Client) knowsWorkerOf(callID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, pc := range c.calls {
		pc.mu.Lock()
		known := pc.worker != ""
		pc.mu.Unlock()
		if known {
			return true
		}
	}
	return false
}
