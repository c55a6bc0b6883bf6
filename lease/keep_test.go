package lease_test

import (
	"context"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/streams"
)

// lookups counts the lease lookups the server has been asked for on nc:
// each is a consumer info request on the claims stream. nc's flush returns
// once the server has routed what nc sent before it, to the spy too, and
// the spy's flush then brings all that in.
func lookups(t *testing.T, env *embeddedtest.Env, nc *nats.Conn) func() int {
	t.Helper()
	spy, _ := embeddedtest.Connect(t, env.Server.ClientURL())
	sub, err := spy.SubscribeSync("$JS.API.CONSUMER.INFO." + streams.ClaimsStream + ".>")
	require.NoError(t, err)
	require.NoError(t, sub.SetPendingLimits(-1, -1))
	require.NoError(t, spy.Flush())
	return func() int {
		require.NoError(t, nc.Flush())
		require.NoError(t, spy.Flush())
		n, _, err := sub.Pending()
		require.NoError(t, err)
		return n
	}
}

// kept is a worker's lease watched once with KeepWatching and left with
// no user.
type kept struct {
	w     *lease.Watcher
	l     *lease.Lease
	lost  <-chan struct{} // its watch
	asked func() int      // lookups so far
	subs  int             // nc's subscriptions while it is kept
}

func keepOne(t *testing.T, env *embeddedtest.Env, nc *nats.Conn, js jetstream.JetStream) kept {
	t.Helper()
	ctx := context.Background()
	asked := lookups(t, env, nc)
	w := lease.NewWatcher(nc, js, slog.New(slog.DiscardHandler), lease.KeepWatching)
	t.Cleanup(w.Close)
	l, err := lease.Hold(ctx, env.Conn, env.JS, "worker", "", bound)
	require.NoError(t, err)
	lost, unwatch := w.Watch(ctx, l.Name())
	unwatch()
	require.Equal(t, 1, asked(), "the first watch looks the lease up")
	return kept{w: w, l: l, lost: lost, asked: asked, subs: nc.NumSubscriptions()}
}

// M9: a caller watches the lease of the worker that owns each of its
// waits. With KeepWatching, a lease known alive stays watched after its
// last user leaves, so the next call to that worker costs no lookup; once
// the lease ends it is forgotten, and watching the name again looks again.
func TestAKeptLeaseIsWatchedAgainWithoutALookup(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{})
	ctx := context.Background()
	nc, js := embeddedtest.Connect(t, env.Server.ClientURL())
	k := keepOne(t, env, nc, js)
	w, l, asked, subs := k.w, k.l, k.asked, k.subs

	again, unwatchAgain := w.Watch(ctx, l.Name())
	defer unwatchAgain()
	require.Equal(t, 1, asked(), "watching the kept lease again looks nothing up")
	require.Equal(t, k.lost, again, "the kept watch is the same one")
	require.Equal(t, subs, nc.NumSubscriptions(), "still one subscription to the lease's advisory")

	unwatchAgain()
	require.NoError(t, l.End(ctx))
	requireLost(t, again, "the kept lease, ended")
	require.Eventually(t, func() bool { return nc.NumSubscriptions() == subs-1 }, patience, time.Millisecond,
		"a kept lease that ends is forgotten")

	gone, unwatchGone := w.Watch(ctx, l.Name())
	defer unwatchGone()
	require.Equal(t, 2, asked(), "watching the ended lease's name again looks it up")
	requireLost(t, gone, "the ended lease, watched again")
}

// M9: an advisory published while the watcher was cut off never arrives,
// so Recheck after the reconnect looks the kept leases up too, and forgets
// one it finds gone.
func TestRecheckFindsAKeptLeaseThatEndedWhileCutOff(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{})
	ctx := context.Background()
	gate := make(chan struct{})
	var dialed atomic.Bool
	dial := dialFunc(func(network, address string) (net.Conn, error) {
		if dialed.Swap(true) {
			<-gate // only the first dial goes through before the gate opens
		}
		return net.Dial(network, address)
	})
	disconnected := make(chan struct{}, 1)
	reconnected := make(chan struct{}, 1)
	nc, js := embeddedtest.Connect(t, env.Server.ClientURL(),
		nats.MaxReconnects(-1), nats.ReconnectWait(10*time.Millisecond), nats.SetCustomDialer(dial),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { disconnected <- struct{}{} }),
		nats.ReconnectHandler(func(*nats.Conn) { reconnected <- struct{}{} }))
	var opened atomic.Bool
	openGate := func() {
		if !opened.Swap(true) {
			close(gate)
		}
	}
	t.Cleanup(openGate) // a test that fails while cut off must not hang its cleanup
	k := keepOne(t, env, nc, js)
	w, l, lost, asked, subs := k.w, k.l, k.lost, k.asked, k.subs

	cid, err := nc.GetClientID()
	require.NoError(t, err)
	require.NoError(t, env.Server.DisconnectClientByID(cid))
	await(t, disconnected, "the watcher's connection noticed it was cut off")
	require.NoError(t, l.End(ctx)) // its advisory goes nowhere
	openGate()
	await(t, reconnected, "the watcher's connection reconnected")
	select {
	case <-lost:
		t.Fatal("the advisory published while cut off cannot have arrived")
	default:
	}

	w.Recheck(ctx)
	require.Equal(t, 2, asked(), "Recheck looks the kept lease up")
	requireLost(t, lost, "the kept lease Recheck found gone")
	require.Equal(t, subs-1, nc.NumSubscriptions(), "the lease Recheck found gone is forgotten")
}

type dialFunc func(network, address string) (net.Conn, error)

func (d dialFunc) Dial(network, address string) (net.Conn, error) { return d(network, address) }

// await fails the test unless c is closed or signalled within patience.
func await(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(patience):
		t.Fatalf("never: %s", what)
	}
}
