package liveroot_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/liveroot"
)

// D7, M9: a root is alive while its record names it and its instance holds
// the root lease. A SIGKILLed instance leaves the record, but its lease
// ends the release bound after its connection is gone: the root is lost.
func TestD7RootIsLostOnceItsInstanceLeaseEnds(t *testing.T) {
	reg, env := registry(t)
	ctx := context.Background()
	leases := liveroot.Leases(env.JS)

	_, state, err := reg.Root(ctx, "s1", leases)
	require.NoError(t, err)
	require.Equal(t, liveroot.NoRoot, state, "a Session never registered has no root")

	holder, holderJS := embeddedtest.Connect(t, env.Server.ClientURL())
	l, err := liveroot.HoldLease(ctx, holder, holderJS, "runtime-a", lease.MinReleaseBound)
	require.NoError(t, err)
	require.Equal(t, "lease~root~runtime-a", l.Name())
	epoch, err := reg.Register(ctx, "s1", "runtime-a")
	require.NoError(t, err)
	rec, state, err := reg.Root(ctx, "s1", leases)
	require.NoError(t, err)
	require.Equal(t, liveroot.Alive, state)
	require.Equal(t, "runtime-a", rec.Instance)

	holder.Close() // as a SIGKILL does: nothing is released
	gone := time.Now()
	require.Eventually(t, func() bool {
		_, state, err := reg.Root(ctx, "s1", leases)
		return err == nil && state == liveroot.RootLost
	}, 10*time.Second, 10*time.Millisecond)
	t.Logf("root lost %v after its connection closed", time.Since(gone))
	rec, _, err = reg.Root(ctx, "s1", leases)
	require.NoError(t, err)
	require.Equal(t, epoch, rec.Epoch, "the record still names the dead instance")
	require.True(t, rec.Live())

	// The instance that takes the Session over fences the dead one.
	b, err := liveroot.HoldLease(ctx, env.Conn, env.JS, "runtime-b", lease.MinReleaseBound)
	require.NoError(t, err)
	next, err := reg.Register(ctx, "s1", "runtime-b")
	require.NoError(t, err)
	_, state, err = reg.Root(ctx, "s1", leases)
	require.NoError(t, err)
	require.Equal(t, liveroot.Alive, state)

	require.NoError(t, reg.Release(ctx, "s1", ref("runtime-b", next)))
	_, state, err = reg.Root(ctx, "s1", leases)
	require.NoError(t, err)
	require.Equal(t, liveroot.NoRoot, state, "a released Session has no root, whatever its instance holds")
	require.NoError(t, b.End(ctx))
}

// A record naming an instance that never held a root lease (written by an
// older build, or by hand) is a lost root, so an answer still resumes it.
func TestD7RootWithoutALeaseIsLost(t *testing.T) {
	reg, env := registry(t)
	ctx := context.Background()
	_, err := reg.Register(ctx, "s1", "runtime-old")
	require.NoError(t, err)
	_, state, err := reg.Root(ctx, "s1", liveroot.Leases(env.JS))
	require.NoError(t, err)
	require.Equal(t, liveroot.RootLost, state)
}
