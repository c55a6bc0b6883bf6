package liveroot

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
)

// watchRetry is how long the Cache waits before it watches the bucket again
// after a watch could not be started or stopped on its own while connected.
const watchRetry = time.Second

// Cache lets the foreground path (M9) skip the registry read before it
// sends a question out, in the common case: a copy of the live records of
// the registry, kept current by a watch of the bucket.
//
// It only predicts. Holds says whether the last record the watch delivered
// names a ref as the live root; it never refuses and never decides. A
// caller that trusts it must still confirm with Registry.Check before
// anything reaches the agent (userquestions does, while the question is on
// its way to the Clients), and must send everything Holds does not vouch
// for (a miss, a newer or older epoch, a released Session, a child)
// through Registry.Check first. So a freshly registered instance is never
// refused, and every refusal is as of the bucket at the time of the check.
//
// The window of staleness is the delivery of a write: after a takeover or
// a release, Holds still vouches for the old ref until the watch delivers
// the new record. The server sends a write to the watch as it stores it,
// about when the writer's acknowledgement leaves, so the window is
// normally a fraction of a millisecond on one server. It grows only while
// the watch lags: a watch message lost on the connection is noticed by the
// ordered consumer's heartbeat (seconds) and then re-read. After a
// reconnect no cached record is used until the watch has started again
// from the bucket's current state, so what changed while the connection
// was down is never vouched for.
//
// It holds one small record per live root, never released ones, so its
// size follows the Sessions running now, not every Session ever seen.
type Cache struct {
	reg *Registry
	nc  *nats.Conn
	log *slog.Logger

	mu   sync.RWMutex
	live map[string]Record // Session id → its live record, as delivered
	gen  uint64            // the reconnect count the current watch began at

	stop func()
}

// NewCache returns a cache of reg watched over nc, the connection reg's
// bucket handle uses. It vouches for nothing until Start.
func NewCache(reg *Registry, nc *nats.Conn, log *slog.Logger) *Cache {
	if log == nil {
		log = slog.Default()
	}
	return &Cache{reg: reg, nc: nc, log: log.With("part", "liveroot-cache"), live: map[string]Record{}, stop: func() {}}
}

// Holds reports whether the last record the watch delivered for sid names
// exactly ref as its live root, not a child: Registry.Check would then
// most likely pass it.
func (c *Cache) Holds(sid string, ref holdover.AgentRef) bool {
	if ref.Owner != "" {
		return false
	}
	rec, ok := c.lookup(sid)
	return ok && rec.Owner == "" && rec.Instance == ref.Instance && rec.Epoch == ref.Epoch
}

// lookup returns the cached live record of sid, if the watch that
// delivered it runs on the connection as it is now.
func (c *Cache) lookup(sid string) (Record, bool) {
	reconnects := c.nc.Stats().Reconnects
	c.mu.RLock()
	defer c.mu.RUnlock()
	rec, ok := c.live[sid]
	return rec, ok && c.gen == reconnects
}

// Start watches the bucket until Stop. The first watch is in place when it
// returns, unless JetStream did not answer (a cluster without a quorum):
// then it is tried again every watchRetry, and every check reads the
// registry meanwhile. Records arrive as the server delivers them, and
// until then Holds vouches for nothing.
func (c *Cache) Start(ctx context.Context) error {
	status := c.nc.StatusChanged(nats.CONNECTED)
	w, err := c.watch(ctx)
	if err != nil {
		c.log.Warn("watch the live-root registry; every check reads it meanwhile", "err", err, "retry", watchRetry)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(ctx, w, status)
	}()
	c.stop = func() {
		cancel()
		c.nc.RemoveStatusListener(status)
		<-done
	}
	return nil
}

// Stop ends the watch and forgets every record.
func (c *Cache) Stop() {
	c.stop()
	c.mu.Lock()
	clear(c.live)
	c.mu.Unlock()
}

// run applies the watch's records and watches again from the bucket's
// current state after every reconnect, or when a watch ends on its own.
func (c *Cache) run(ctx context.Context, w jetstream.KeyWatcher, status <-chan nats.Status) {
	var retry <-chan time.Time
	if w == nil { // the first watch failed
		retry = time.After(watchRetry)
	}
	defer func() { stopWatch(w) }()
	for {
		var updates <-chan jetstream.KeyValueEntry
		if w != nil {
			updates = w.Updates()
		}
		select {
		case <-ctx.Done():
			return
		case e, ok := <-updates:
			if ok {
				c.apply(e)
			} else { // ended on its own: watch again shortly
				w, retry = nil, time.After(watchRetry)
			}
			continue
		case _, ok := <-status:
			if !ok { // the connection is closed for good
				return
			}
			// Reconnected: what changed meanwhile may be unseen.
		case <-retry:
		}
		retry = nil
		stopWatch(w)
		var err error
		if w, err = c.watch(ctx); err != nil {
			c.log.Warn("watch the live-root registry; every check reads it meanwhile", "err", err, "retry", watchRetry)
			retry = time.After(watchRetry)
		}
	}
}

func stopWatch(w jetstream.KeyWatcher) {
	if w != nil {
		_ = w.Stop()
	}
}

// watch clears the cache and starts a watch of every key from its current
// value, under the connection's reconnect count as it was before the watch
// began: a reconnect during the start makes its records unused.
func (c *Cache) watch(ctx context.Context) (jetstream.KeyWatcher, error) {
	gen := c.nc.Stats().Reconnects
	c.mu.Lock()
	clear(c.live)
	c.gen = gen
	c.mu.Unlock()
	w, err := c.reg.kv.WatchAll(ctx)
	if err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "watch the live-root registry")
	}
	return w, nil
}

// apply records one delivered entry: a live record is cached, anything else
// (a release, a deletion, a value that is no record) leaves the cache, so
// the next check of that Session reads the registry.
func (c *Cache) apply(e jetstream.KeyValueEntry) {
	if e == nil {
		return // the initial values are all delivered
	}
	var rec Record
	ok := e.Operation() == jetstream.KeyValuePut && json.Unmarshal(e.Value(), &rec) == nil && rec.Live()
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok {
		c.live[e.Key()] = rec
	} else {
		delete(c.live, e.Key())
	}
}
