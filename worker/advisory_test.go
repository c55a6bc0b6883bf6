package worker

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/userquestions"
)

// Issue 25: the advisory subscription only reads advisories. A claim whose
// frame is slow to be stored (its publish kept back on the way to the
// server, with no timeout to end it) holds up no other claim: another
// wait's claim gets its frame, and its release restores that wait's
// deadline, at once. Stopping the service ends the stalled publish, and
// closes the claim.
func TestASlowClaimHoldsUpNoOtherClaimsAdvisories(t *testing.T) {
	var proxy *embeddedtest.Proxy
	f := newFGTestOn(t, func(env *embeddedtest.Env) (*nats.Conn, jetstream.JetStream) {
		proxy = embeddedtest.NewProxy(t, env.Server.ClientURL())
		return embeddedtest.Connect(t, proxy.URL())
	}, func(w *Worker) {
		w.foreground.frameTimeout = time.Hour // only the stop ends a stalled publish
	})
	recA, recB := f.watch("s1"), f.watch("s2")
	doneA := f.askTimed(f.agent, "s1", "call-1", 60_000)
	doneB := f.askTimed(f.agent, "s2", "call-2", 60_000)
	dA, dB := recA.next(t), recB.next(t)

	_, subjectA, err := userquestions.NewClaimName("s1", "call-1")
	require.NoError(t, err)
	framesA := subjectA[:strings.LastIndex(subjectA, ".")+1] // every claim's of s1/call-1
	stalled, release := stallFirst(proxy, framesA)
	defer release()
	_, err = dA.AttachWait(context.Background())
	require.NoError(t, err)
	select {
	case <-stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("the frame of s1's claim was not published")
	}

	claimB, err := dB.AttachWait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, time.Minute, frame(t, claimB), "s2's claim has its frame while s1's is stalled")
	f.clock.Advance(2 * time.Minute) // both waits are claimed: neither expires
	require.NoError(t, claimB.Release(context.Background()))
	require.NoError(t, ended(t, doneB), "s2's released wait is overdue: pending at once")
	select {
	case err := <-doneA:
		t.Fatalf("s1's claimed wait ended: %v", err)
	default:
	}

	stopped := make(chan struct{})
	go func() {
		assert.NoError(t, f.running.Stop())
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the stop did not end the stalled publish")
	}
	require.NoError(t, ended(t, doneA), "a stopping worker's timed wait goes pending")
}

// stallFirst keeps back, at proxy, the first publish on a subject that
// starts with prefix, until release.
func stallFirst(proxy *embeddedtest.Proxy, prefix string) (stalled <-chan struct{}, release func()) {
	var first atomic.Bool
	return proxy.Stall(func(subject string, _ nats.Header) bool {
		return strings.HasPrefix(subject, prefix) && first.CompareAndSwap(false, true)
	})
}
