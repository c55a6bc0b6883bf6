package lease

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover/ops"
)

// Watcher tells its users when leases held by other processes end. Each
// lease is watched with one subscription to its deletion advisory however
// many users share it, and looked up once after subscribing and again on
// every [Watcher.Recheck], so neither a lease that ended before the watch
// nor an advisory missed during a disconnect goes unnoticed.
type Watcher struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	log *slog.Logger

	mu      sync.Mutex
	keep    bool // see KeepWatching
	watched map[string]*watched
}

// A WatcherOption changes how a [Watcher] treats its leases.
type WatcherOption func(*Watcher)

// KeepWatching keeps a lease known alive watched after its last user
// leaves, until it ends or the watcher is closed, so a later Watch of it
// costs no lookup. It suits leases that are few and watched again and
// again, as a caller watches the lease of the worker that owns each of its
// waits: the lookup would otherwise delay every call. A kept lease that
// ends is forgotten, so what is kept follows the leases alive.
func KeepWatching(w *Watcher) { w.keep = true }

type watched struct {
	refs  int
	sub   *nats.Subscription
	alive bool // a lookup found it; only such a lease is kept
	lost  chan struct{}
	once  sync.Once
}

func (w *watched) end() { w.once.Do(func() { close(w.lost) }) }

func (w *watched) ended() bool {
	select {
	case <-w.lost:
		return true
	default:
		return false
	}
}

// NewWatcher returns a watcher of leases on nc. Run its Recheck after every
// reconnect ([OnReconnect]), and Close it when done.
func NewWatcher(nc *nats.Conn, js jetstream.JetStream, log *slog.Logger, opts ...WatcherOption) *Watcher {
	w := &Watcher{nc: nc, js: js, log: log, watched: make(map[string]*watched)}
	for _, opt := range opts {
		opt(w)
	}
	return w
}

// Watch returns a channel that is closed once the lease named name is
// gone, and the function that ends this use of the watch.
func (w *Watcher) Watch(ctx context.Context, name string) (<-chan struct{}, func()) {
	w.mu.Lock()
	// A lease already seen lost may have been held again under its name
	// (a worker back from a long disconnect): that is a new watch.
	if wl, ok := w.watched[name]; ok && !wl.ended() {
		wl.refs++
		w.mu.Unlock()
		return wl.lost, w.unwatch(name, wl)
	}
	wl := &watched{refs: 1, lost: make(chan struct{})}
	w.watched[name] = wl
	w.mu.Unlock()

	sub, err := w.nc.Subscribe(DeletedSubject(name), func(*nats.Msg) { w.lose(name, wl) })
	if err != nil {
		w.log.Warn("watch lease", "lease", name, ops.Err(err))
	}
	w.mu.Lock()
	wl.sub = sub
	w.mu.Unlock()
	// The subscription is in place before this lookup on the same
	// connection, so a deletion is either seen here or advised there.
	w.check(ctx, name, wl)
	return wl.lost, w.unwatch(name, wl)
}

func (w *Watcher) unwatch(name string, wl *watched) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if wl.refs--; wl.refs > 0 {
				return
			}
			if w.keep && wl.alive && wl.sub != nil && !wl.ended() {
				return // kept for the next Watch; lose forgets it
			}
			w.forget(name, wl)
		})
	}
}

// lose ends wl and forgets it once nobody uses it: a kept lease that ends
// is dropped here, one still in use when its last user leaves.
func (w *Watcher) lose(name string, wl *watched) {
	wl.end()
	w.mu.Lock()
	defer w.mu.Unlock()
	if wl.refs == 0 {
		w.forget(name, wl)
	}
}

// forget stops watching wl; w.mu is held. Forgetting twice is harmless.
func (w *Watcher) forget(name string, wl *watched) {
	if w.watched[name] == wl {
		delete(w.watched, name)
	}
	if wl.sub != nil {
		_ = wl.sub.Unsubscribe()
	}
}

func (w *Watcher) check(ctx context.Context, name string, wl *watched) {
	alive, err := Exists(ctx, w.js, name)
	switch {
	case err != nil:
		// Undecided: the next reconnect or periodic check decides.
		w.log.Warn("check lease", "lease", name, ops.Err(err))
	case !alive:
		w.lose(name, wl)
	default:
		w.mu.Lock()
		wl.alive = true
		w.mu.Unlock()
	}
}

// Alive reports whether the lease named name is watched, was found to
// exist and has not ended since: what a lookup would say, without one.
// False means not known, not gone.
func (w *Watcher) Alive(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	wl, ok := w.watched[name]
	return ok && wl.alive && !wl.ended()
}

// Close stops keeping leases: those nobody uses are forgotten now, the
// rest as their last user leaves.
func (w *Watcher) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keep = false
	for name, wl := range w.watched {
		if wl.refs == 0 {
			w.forget(name, wl)
		}
	}
}

// Recheck looks every watched lease up again, kept ones too. Run it after
// a reconnect: advisories published while this process was cut off never
// arrive.
func (w *Watcher) Recheck(ctx context.Context) {
	w.mu.Lock()
	all := make(map[string]*watched, len(w.watched))
	for name, wl := range w.watched {
		all[name] = wl
	}
	w.mu.Unlock()
	for name, wl := range all {
		w.check(ctx, name, wl)
	}
}

// OnReconnect calls fn after every reconnect of nc, and every interval
// (when positive) as a slow safety net, until the returned stop is called
// or nc is closed. fn gets a context that stop cancels.
func OnReconnect(nc *nats.Conn, interval time.Duration, fn func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	status := nc.StatusChanged(nats.CONNECTED, nats.CLOSED)
	if nc.IsClosed() {
		cancel() // closed before it could hear so
	}
	var tick <-chan time.Time
	var ticker *time.Ticker
	if interval > 0 {
		ticker = time.NewTicker(interval)
		tick = ticker.C
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case s, ok := <-status:
				if !ok || s == nats.CLOSED { // the connection is closed for good
					return
				}
			case <-tick:
			case <-ctx.Done():
				return
			}
			fn(ctx)
		}
	}()
	return func() {
		cancel()
		nc.RemoveStatusListener(status)
		<-done
		if ticker != nil {
			ticker.Stop()
		}
	}
}
