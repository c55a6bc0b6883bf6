package worker

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/waiter"
)

// deafen cuts the worker off from claim advisories, as a disconnect would:
// what happens next is only found by reconciliation.
func deafen(t *testing.T, fg *foregroundHalf) {
	t.Helper()
	require.NoError(t, fg.adv.Unsubscribe())
	require.NoError(t, fg.nc.Flush())
}

// A claim whose CREATED advisory was missed is found by the listing and
// gets its one frame; one whose DELETED advisory was missed is released,
// and the overdue wait expires at once (W2, W3).
func TestReconcileFindsClaimsWhoseAdvisoriesWereMissed(t *testing.T) {
	f := newFGTest(t)
	fg := f.svc.foreground()
	rec := f.watch("s1")
	done := f.askTimed(f.agent, "s1", "call-1", 5000)
	d := rec.next(t)
	deafen(t, fg)

	claim, err := d.AttachWait(context.Background())
	require.NoError(t, err)
	fg.reconcileClaims(context.Background())
	assert.Equal(t, 5*time.Second, frame(t, claim))
	fg.reconcileClaims(context.Background())
	assert.Equal(t, 1, heldClaims(fg, "s1", "call-1"), "a second listing claims nothing twice")

	f.clock.Advance(time.Minute)
	require.NoError(t, claim.Release(context.Background()))
	select {
	case err := <-done:
		t.Fatalf("the wait ended without the worker hearing of the release: %v", err)
	default:
	}
	fg.reconcileClaims(context.Background())
	require.NoError(t, ended(t, done), "pending")
}

func heldClaims(fg *foregroundHalf, sid, call string) int {
	w, ok := fg.reg.Get(waiter.Key{Session: sid, CallID: call})
	if !ok {
		return 0
	}
	return len(w.ClaimsBefore(math.MaxUint64))
}

// A reconnect reconciles at once.
func TestReconnectReconciles(t *testing.T) {
	f := newFGTest(t)
	fg := f.svc.foreground()
	rec := f.watch("s1")
	f.askTimed(f.agent, "s1", "call-1", 5000)
	d := rec.next(t)
	deafen(t, fg)
	claim, err := d.AttachWait(context.Background())
	require.NoError(t, err)

	require.NoError(t, f.env.Conn.ForceReconnect())
	assert.Equal(t, 5*time.Second, frame(t, claim))
}

// A caller whose lease vanished while the worker was not listening leaves
// no wait behind once the worker reconciles (ASK_ABORTED).
func TestReconcileEndsTheWaitsOfAGoneCaller(t *testing.T) {
	f := newFGTest(t)
	fg := f.svc.foreground()
	rec := f.watch("s1")
	nc, _ := embeddedtest.Connect(t, f.env.Server.ClientURL())
	agent, err := caller.New(context.Background(), nc, caller.Config{ReleaseBound: time.Second})
	require.NoError(t, err)
	f.askTimed(agent, "s1", "call-1", 5000)
	rec.next(t)
	deafen(t, fg)

	lease := agent.Lease()
	nc.Close()
	require.Eventually(t, func() bool {
		alive, err := leases.Exists(context.Background(), fg.js, lease)
		return err == nil && !alive
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, f.svc.LiveWaits(), "nobody told the worker")
	fg.reconcileClaims(context.Background())
	require.Eventually(t, func() bool { return f.svc.LiveWaits() == 0 }, 10*time.Second, time.Millisecond)
}

// A worker whose own lease is gone has been given up by its callers: it
// ends its waits, and holds its lease again for the next ones.
func TestReconcileHoldsALostWorkerLeaseAgain(t *testing.T) {
	f := newFGTest(t)
	fg := f.svc.foreground()
	rec := f.watch("s1")
	done := f.askTimed(f.agent, "s1", "call-1", 5000)
	rec.next(t)
	deafen(t, fg)

	require.NoError(t, f.env.JS.DeleteConsumer(context.Background(), "CLAIMS", fg.leaseName))
	require.NoError(t, ended(t, done), "the caller saw the lease go: pending")
	fg.reconcileClaims(context.Background())
	assert.Equal(t, 0, f.svc.LiveWaits())
	alive, err := leases.Exists(context.Background(), fg.js, fg.leaseName)
	require.NoError(t, err)
	assert.True(t, alive)
}
