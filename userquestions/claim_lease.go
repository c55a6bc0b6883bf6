package userquestions

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/streams"
)

// Liveness without heartbeats (DESIGN.md). Every process that others must
// not wait on forever holds a lease: an ephemeral push consumer on the
// claims stream with no messages, which NATS deletes the release bound
// after the process's connection (and so its interest) is gone. A worker
// holds one for the waits it owns, so callers and Clients notice its death;
// an agent's Client holds one for the calls it waits on, so the worker
// notices the caller's death. Watchers hear the deletion advisory and
// check the lease exists once after subscribing and after every reconnect,
// so neither a lease that died before the watch nor an advisory missed
// during a disconnect goes unnoticed.

// The roles a lease name carries, for operators reading `nats consumer ls`.
const (
	roleWorker = "worker"
	roleCaller = "caller"
)

// lease is a liveness lease this process holds.
type lease struct {
	name string
	sub  *nats.Subscription
	js   jetstream.JetStream
}

func leaseName(role, id string) string { return strings.Join([]string{leaseKind, role, id}, nameSep) }

// holdLease creates the lease of role and id (a fresh one when id is
// empty) that lives as long as nc's interest.
func holdLease(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, role, id string, bound time.Duration) (*lease, error) {
	if id == "" {
		id = nuid.Next()
	}
	l := &lease{name: leaseName(role, id), js: js}
	sub, err := holdConsumer(ctx, nc, js, l.name, leaseTopic+id, bound, map[string]string{"role": role}, func(*nats.Msg) {})
	if err != nil {
		return nil, err
	}
	l.sub = sub
	return l, nil
}

// alive reports whether the lease still exists. One that NATS deleted
// while this process was cut off stays deleted: its holders have already
// been given up by everyone watching it.
func (l *lease) alive(ctx context.Context) (bool, error) { return consumerExists(ctx, l.js, l.name) }

// end deletes the lease at once, so watchers need not wait out the bound.
func (l *lease) end(ctx context.Context) error {
	err := deleteConsumer(ctx, l.js, l.name)
	if uerr := l.sub.Unsubscribe(); uerr != nil && !errors.Is(uerr, nats.ErrConnectionClosed) && err == nil {
		err = holdover.Newf(holdover.CodeInternal, "unsubscribe %s: %v", l.name, uerr)
	}
	return err
}

// consumerExists looks a claim or lease up by name.
func consumerExists(ctx context.Context, js jetstream.JetStream, name string) (bool, error) {
	_, err := js.PushConsumer(ctx, streams.ClaimsStream, name)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return false, nil
	}
	return false, holdover.Newf(holdover.CodeInternal, "look up %s: %v", name, err)
}

// deletedSubject is the advisory JetStream publishes when the claim or
// lease named name is deleted, by its holder, by the Host or by NATS.
func deletedSubject(name string) string {
	return advisoryPfx + "DELETED." + streams.ClaimsStream + "." + name
}

// leaseWatcher tells its users when leases held by other processes end.
// Each lease is watched with one subscription however many users share it.
type leaseWatcher struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	log *slog.Logger

	mu      sync.Mutex
	watched map[string]*watchedLease
}

type watchedLease struct {
	refs int
	sub  *nats.Subscription
	lost chan struct{}
	once sync.Once
}

func (w *watchedLease) end() { w.once.Do(func() { close(w.lost) }) }

func (w *watchedLease) ended() bool {
	select {
	case <-w.lost:
		return true
	default:
		return false
	}
}

func newLeaseWatcher(nc *nats.Conn, js jetstream.JetStream, log *slog.Logger) *leaseWatcher {
	return &leaseWatcher{nc: nc, js: js, log: log, watched: make(map[string]*watchedLease)}
}

// watch returns a channel that is closed once the lease named name is
// gone, and the function that ends this use of the watch.
func (w *leaseWatcher) watch(ctx context.Context, name string) (<-chan struct{}, func()) {
	w.mu.Lock()
	// A lease already seen lost may have been held again under its name
	// (a worker back from a long disconnect): that is a new watch.
	if wl, ok := w.watched[name]; ok && !wl.ended() {
		wl.refs++
		w.mu.Unlock()
		return wl.lost, w.unwatch(name, wl)
	}
	wl := &watchedLease{refs: 1, lost: make(chan struct{})}
	w.watched[name] = wl
	w.mu.Unlock()

	sub, err := w.nc.Subscribe(deletedSubject(name), func(*nats.Msg) { wl.end() })
	if err != nil {
		w.log.Warn("watch lease", "lease", name, "err", err)
	}
	w.mu.Lock()
	wl.sub = sub
	w.mu.Unlock()
	// The subscription is in place before this lookup on the same
	// connection, so a deletion is either seen here or advised there.
	w.check(ctx, name, wl)
	return wl.lost, w.unwatch(name, wl)
}

func (w *leaseWatcher) unwatch(name string, wl *watchedLease) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if wl.refs--; wl.refs > 0 {
				return
			}
			if w.watched[name] == wl {
				delete(w.watched, name)
			}
			if wl.sub != nil {
				_ = wl.sub.Unsubscribe()
			}
		})
	}
}

func (w *leaseWatcher) check(ctx context.Context, name string, wl *watchedLease) {
	alive, err := consumerExists(ctx, w.js, name)
	switch {
	case err != nil:
		// Undecided: the next reconnect or periodic check decides.
		w.log.Warn("check lease", "lease", name, "err", err)
	case !alive:
		wl.end()
	}
}

// recheck looks every watched lease up again. Run it after a reconnect:
// advisories published while this process was cut off never arrive.
func (w *leaseWatcher) recheck(ctx context.Context) {
	w.mu.Lock()
	all := make(map[string]*watchedLease, len(w.watched))
	for name, wl := range w.watched {
		all[name] = wl
	}
	w.mu.Unlock()
	for name, wl := range all {
		w.check(ctx, name, wl)
	}
}

// onReconnect calls fn after every reconnect of nc, and every interval
// (when positive) as a slow safety net, until the returned stop is called.
// fn gets a context that stop cancels.
func onReconnect(nc *nats.Conn, interval time.Duration, fn func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	status := nc.StatusChanged(nats.CONNECTED)
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
			case _, ok := <-status:
				if !ok { // the connection is closed for good
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

// flush waits until the server has processed everything sent on nc, so
// subscriptions are in place before what depends on them. ctx without a
// deadline gets DefaultCallTimeout.
func flush(ctx context.Context, nc *nats.Conn) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCallTimeout)
		defer cancel()
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		return holdover.Newf(holdover.CodeInternal, "flush subscriptions: %v", err)
	}
	return nil
}
