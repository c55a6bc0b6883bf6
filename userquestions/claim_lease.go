package userquestions

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	leases "github.com/holdover-dev/holdover/lease"
)

// Liveness without heartbeats (DESIGN.md), with the leases of package
// lease. A worker holds one for the waits it owns, so callers and Clients
// notice its death; an agent's Client holds one for the calls it waits on,
// so the worker notices the caller's death. What a lost lease means here
// is this package's to decide: a lost worker lease abandons its waits, a
// lost caller lease aborts them (W5, W7).

// The roles a lease name carries, for operators reading `nats consumer ls`.
const (
	roleWorker = "worker"
	roleCaller = "caller"
)

// advisoryPfx starts the consumer advisories the worker follows.
const advisoryPfx = leases.AdvisoryPrefix

// lease is the worker's or a Client's own lease, under its consumer name.
type lease struct {
	*leases.Lease
	name string
}

// holdLease holds the lease of role and id, a fresh id when empty.
func holdLease(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, role, id string, bound time.Duration) (*lease, error) {
	l, err := leases.Hold(ctx, nc, js, role, id, bound)
	if err != nil {
		return nil, err
	}
	return &lease{Lease: l, name: l.Name()}, nil
}

func (l *lease) alive(ctx context.Context) (bool, error) { return l.Alive(ctx) }

func (l *lease) end(ctx context.Context) error { return l.End(ctx) }

func leaseName(role, id string) string { return leases.Name(role, id) }

// releaseBound applies the default and the floor to a configured bound.
func releaseBound(d time.Duration) time.Duration { return leases.Bound(d) }

// consumerExists looks a claim or lease up by name.
func consumerExists(ctx context.Context, js jetstream.JetStream, name string) (bool, error) {
	return leases.Exists(ctx, js, name)
}

// onReconnect calls fn after every reconnect of nc (see lease.OnReconnect).
func onReconnect(nc *nats.Conn, interval time.Duration, fn func(context.Context)) (stop func()) {
	return leases.OnReconnect(nc, interval, fn)
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
