package lease_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/streams"
)

// bound is the release bound of the tests' leases: the shortest accepted.
const bound = lease.MinReleaseBound

// patience only turns a hang into a failure.
const patience = 10 * time.Second

// An operator reads whose lease a consumer is from `nats consumer ls
// CLAIMS`: lease~<role>~<id>, with the role and id in its metadata too.
func TestHoldNamesTheLeaseForOperators(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{})
	ctx := context.Background()
	l, err := lease.Hold(ctx, env.Conn, env.JS, "root", "runtime-1", bound)
	require.NoError(t, err)
	require.Equal(t, "lease~root~runtime-1", l.Name())

	info, err := env.JS.PushConsumer(ctx, streams.ClaimsStream, l.Name())
	require.NoError(t, err)
	cfg := info.CachedInfo().Config
	assert.Equal(t, bound, cfg.InactiveThreshold)
	assert.Equal(t, "root", cfg.Metadata["role"])
	assert.Equal(t, "runtime-1", cfg.Metadata["id"])
	alive, err := l.Alive(ctx)
	require.NoError(t, err)
	require.True(t, alive)

	require.NoError(t, l.End(ctx))
	alive, err = lease.Exists(ctx, env.JS, l.Name())
	require.NoError(t, err)
	require.False(t, alive, "End deletes the lease at once")
	require.NoError(t, l.End(ctx), "ending it again is nothing to do")
}

func TestHoldRefusesNamesThatAreNotPlainWords(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{})
	for _, tc := range []struct{ role, id string }{
		{"", "a"}, {"ro~le", "a"}, {"ro.le", "a"}, {"root", "a.b"}, {"root", "a~b"}, {"root", "a b"}, {"root", string(make([]byte, 200))},
	} {
		_, err := lease.Hold(context.Background(), env.Conn, env.JS, tc.role, tc.id, bound)
		assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "role %q id %q", tc.role, tc.id)
	}
}

// DESIGN.md, liveness without heartbeats: a lease whose holder's
// connection is gone ends the release bound later, and a watcher hears it.
func TestLeaseEndsTheReleaseBoundAfterItsHolderIsGone(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{})
	ctx := context.Background()
	holder, holderJS := embeddedtest.Connect(t, env.Server.ClientURL())
	l, err := lease.Hold(ctx, holder, holderJS, "worker", "", bound)
	require.NoError(t, err)

	w := lease.NewWatcher(env.Conn, env.JS, slog.New(slog.DiscardHandler))
	lost, unwatch := w.Watch(ctx, l.Name())
	defer unwatch()
	again, unwatchAgain := w.Watch(ctx, l.Name()) // a second user shares the watch
	defer unwatchAgain()

	// The server can only start the bound once the holder's connection
	// closes, so a bound measured from before Close is a true lower
	// bound; one measured after Close returns is short by however long
	// Close took to return.
	gone := time.Now()
	holder.Close()
	requireLost(t, lost, "the lease of a closed connection")
	took := time.Since(gone)
	requireLost(t, again, "the shared watch")
	require.GreaterOrEqual(t, took, bound, "NATS keeps the lease for the release bound")
	t.Logf("lease ended %v after its holder's connection closed (bound %v)", took, bound)
	alive, err := lease.Exists(ctx, env.JS, l.Name())
	require.NoError(t, err)
	require.False(t, alive)
	require.NoError(t, l.End(ctx), "a holder whose connection closed has nothing left to end")
}

// A lease that ended before anyone watched it is seen at once, and so is
// one that Recheck finds gone.
func TestWatchSeesALeaseThatIsAlreadyGone(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{})
	ctx := context.Background()
	w := lease.NewWatcher(env.Conn, env.JS, slog.New(slog.DiscardHandler))
	lost, unwatch := w.Watch(ctx, lease.Name("caller", "never-held"))
	defer unwatch()
	select {
	case <-lost:
	default:
		t.Fatal("a lease that does not exist is lost as soon as it is watched")
	}
	w.Recheck(ctx) // nothing left undecided: no panic on a closed watch

	l, err := lease.Hold(ctx, env.Conn, env.JS, "caller", "", bound)
	require.NoError(t, err)
	require.False(t, w.Alive(l.Name()), "not watched: not known")
	lost, unwatch = w.Watch(ctx, l.Name())
	defer unwatch()
	require.True(t, w.Alive(l.Name()), "watched and found")
	require.False(t, w.Alive(lease.Name("caller", "never-held")), "watched and found gone")
	require.NoError(t, l.End(ctx))
	requireLost(t, lost, "an ended lease")
	require.False(t, w.Alive(l.Name()), "ended")
}

// A holder back from a disconnect longer than the bound finds its lease
// gone and holds it again under the same name; a new watch follows the
// new lease, not the ended one.
func TestALeaseIsHeldAgainUnderItsName(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{})
	ctx := context.Background()
	l, err := lease.Hold(ctx, env.Conn, env.JS, "root", "r1", bound)
	require.NoError(t, err)
	w := lease.NewWatcher(env.Conn, env.JS, slog.New(slog.DiscardHandler))
	first, unwatch := w.Watch(ctx, l.Name())
	defer unwatch()

	require.NoError(t, lease.Delete(ctx, env.JS, l.Name())) // as NATS does after the bound
	requireLost(t, first, "the deleted lease")
	l.Drop()
	again, err := lease.Hold(ctx, env.Conn, env.JS, "root", "r1", bound)
	require.NoError(t, err)
	second, unwatchSecond := w.Watch(ctx, again.Name())
	defer unwatchSecond()
	select {
	case <-second:
		t.Fatal("the lease held again is alive")
	default:
	}
	w.Recheck(ctx)
	select {
	case <-second:
		t.Fatal("Recheck finds the lease held again alive")
	default:
	}
	require.NoError(t, again.End(ctx))
	requireLost(t, second, "the lease held again, once ended")
}

func requireLost(t *testing.T, lost <-chan struct{}, what string) {
	t.Helper()
	await(t, lost, what+" seen gone")
}

func TestBoundHasADefaultAndAFloor(t *testing.T) {
	assert.Equal(t, lease.DefaultReleaseBound, lease.Bound(0))
	assert.Equal(t, lease.MinReleaseBound, lease.Bound(100*time.Millisecond))
	assert.Equal(t, 3*time.Second, lease.Bound(3*time.Second))
}
