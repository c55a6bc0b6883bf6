package liveroot

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/streams"
)

// cacheWorld is a registry written on one connection and a Cache of it
// watched on another, as a runtime and a question worker are.
type cacheWorld struct {
	t     *testing.T
	env   *embeddedtest.Env
	reg   *Registry // the runtime's side
	cache *Cache    // the worker's side
	nc    *nats.Conn
	dial  *gatedDialer
}

// gatedDialer lets the worker's connection reconnect only once the test
// opens the gate, so a change can be made while it is surely cut off.
type gatedDialer struct {
	net.Dialer
	mu     sync.Mutex
	dialed bool
	gate   chan struct{}
	opened sync.Once
}

// open lets every later dial through.
func (d *gatedDialer) open() { d.opened.Do(func() { close(d.gate) }) }

func (d *gatedDialer) Dial(network, address string) (net.Conn, error) {
	d.mu.Lock()
	again := d.dialed
	d.dialed = true
	d.mu.Unlock()
	if again {
		<-d.gate
	}
	return d.Dialer.Dial(network, address)
}

func newCacheWorld(t *testing.T) *cacheWorld {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	dial := &gatedDialer{gate: make(chan struct{})}
	nc, js := embeddedtest.Connect(t, env.Server.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(10*time.Millisecond), nats.SetCustomDialer(dial))
	kv, err := js.KeyValue(context.Background(), streams.RootsBucket)
	require.NoError(t, err)
	cache := NewCache(New(kv), nc, slog.New(slog.DiscardHandler))
	require.NoError(t, cache.Start(context.Background()))
	t.Cleanup(cache.Stop)
	t.Cleanup(dial.open) // runs first: a test that fails while cut off must not hang its cleanup
	return &cacheWorld{t: t, env: env, reg: New(env.Topology.Roots), cache: cache, nc: nc, dial: dial}
}

// delivered waits until the cache's watch has delivered sid's record at
// epoch, live or (live false) released.
func (w *cacheWorld) delivered(sid string, epoch uint64, live bool) {
	w.t.Helper()
	require.Eventually(w.t, func() bool {
		rec, ok := w.cache.lookup(sid)
		if !live {
			return !ok
		}
		return ok && rec.Epoch == epoch
	}, 10*time.Second, time.Millisecond, "the watch delivers %s epoch %d", sid, epoch)
}

func await(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting until " + what)
	}
}

func ref(instance string, epoch uint64) holdover.AgentRef {
	return holdover.AgentRef{Instance: instance, Epoch: epoch}
}

// M9: the cache vouches for a root once the watch delivers it, for exactly
// that instance and epoch; after a takeover it vouches for the new root
// only, and the registry refuses the old one.
func TestM9CacheFollowsATakeover(t *testing.T) {
	w := newCacheWorld(t)
	ctx := context.Background()
	e1, err := w.reg.Register(ctx, "s1", "runtime-a")
	require.NoError(t, err)
	w.delivered("s1", e1, true)
	require.True(t, w.cache.Holds("s1", ref("runtime-a", e1)))
	require.False(t, w.cache.Holds("s1", ref("runtime-b", e1)), "a forged ref naming the epoch with another instance")
	require.False(t, w.cache.Holds("s1", ref("runtime-a", e1+1)), "an epoch the watch has not delivered")
	require.False(t, w.cache.Holds("s2", ref("runtime-a", e1)), "another Session")

	e2, err := w.reg.Register(ctx, "s1", "runtime-b")
	require.NoError(t, err)
	w.delivered("s1", e2, true)
	require.False(t, w.cache.Holds("s1", ref("runtime-a", e1)))
	require.True(t, w.cache.Holds("s1", ref("runtime-b", e2)))
}

// M9: a released Session leaves the cache.
func TestM9CacheForgetsAReleasedRoot(t *testing.T) {
	w := newCacheWorld(t)
	ctx := context.Background()
	e1, err := w.reg.Register(ctx, "s1", "runtime-a")
	require.NoError(t, err)
	w.delivered("s1", e1, true)
	require.NoError(t, w.reg.Release(ctx, "s1", ref("runtime-a", e1)))
	w.delivered("s1", e1, false)
	require.False(t, w.cache.Holds("s1", ref("runtime-a", e1)))
}

// M9: the cache never vouches for a child, nor for a ref naming an owner,
// so DELEGATED_CALLER always comes from the registry.
func TestM9CacheNeverVouchesForAChild(t *testing.T) {
	w := newCacheWorld(t)
	ctx := context.Background()
	e1, err := w.reg.RegisterChild(ctx, "child", "runtime-a", "parent")
	require.NoError(t, err)
	w.delivered("child", e1, true)
	require.False(t, w.cache.Holds("child", ref("runtime-a", e1)))
	require.False(t, w.cache.Holds("child", holdover.AgentRef{Instance: "runtime-a", Epoch: e1, Owner: "parent"}))

	// Registered again as a root (resumed with lineage), it is vouched for.
	e2, err := w.reg.Register(ctx, "child", "runtime-a")
	require.NoError(t, err)
	w.delivered("child", e2, true)
	require.True(t, w.cache.Holds("child", ref("runtime-a", e2)))
}

// M9: records cached before a reconnect are not used after it, and the
// watch starts again from the bucket's current state, so a takeover while
// the worker was cut off is never hidden behind the old record.
func TestM9CacheWatchesAgainAfterAReconnect(t *testing.T) {
	w := newCacheWorld(t)
	ctx := context.Background()
	e1, err := w.reg.Register(ctx, "s1", "runtime-a")
	require.NoError(t, err)
	w.delivered("s1", e1, true)

	disconnected := make(chan struct{}, 1)
	reconnected := make(chan struct{}, 1)
	w.nc.SetDisconnectErrHandler(func(*nats.Conn, error) { disconnected <- struct{}{} })
	w.nc.SetReconnectHandler(func(*nats.Conn) { reconnected <- struct{}{} })
	cid, err := w.nc.GetClientID()
	require.NoError(t, err)
	require.NoError(t, w.env.Server.DisconnectClientByID(cid))
	await(t, disconnected, "the worker's connection noticed it was cut off")
	// The gate holds the reconnect, so the takeover happens while the
	// worker is surely cut off.
	e2, err := w.reg.Register(ctx, "s1", "runtime-b")
	require.NoError(t, err)
	w.dial.open()
	await(t, reconnected, "the worker's connection reconnected")
	// Whether or not the watch has started again, the old record is unused.
	require.False(t, w.cache.Holds("s1", ref("runtime-a", e1)))
	w.delivered("s1", e2, true)
	require.True(t, w.cache.Holds("s1", ref("runtime-b", e2)))
	require.False(t, w.cache.Holds("s1", ref("runtime-a", e1)))
}

// Stop forgets every record.
func TestM9CacheStoppedVouchesForNothing(t *testing.T) {
	w := newCacheWorld(t)
	e1, err := w.reg.Register(context.Background(), "s1", "runtime-a")
	require.NoError(t, err)
	w.delivered("s1", e1, true)
	w.cache.Stop()
	require.False(t, w.cache.Holds("s1", ref("runtime-a", e1)))
}
