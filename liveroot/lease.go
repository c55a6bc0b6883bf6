package liveroot

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/streams"
)

// A record names the instance that is a Session's live root; whether that
// instance still runs is its root lease's to say. Every runtime instance
// holds one root lease (package lease), named for its instance id, from
// before it registers any Session until it stops. A SIGKILLed instance
// leaves its records behind, but NATS ends its root lease the release
// bound after its connection is gone, so a root whose lease is gone is
// known dead without any heartbeat (D7, M9). Check is about the record
// alone: a dead instance asks nothing.

// LeaseRole is the role of a runtime instance's root lease, which
// `nats consumer ls CLAIMS` shows as lease~root~<instance>.
const LeaseRole = streams.LeaseRoot

// LeaseName is the consumer name of instance's root lease.
func LeaseName(instance string) string { return lease.Name(LeaseRole, instance) }

// HoldLease holds instance's root lease on nc, ended bound after nc's
// interest is gone (see lease.Bound).
func HoldLease(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, instance string, bound time.Duration) (*lease.Lease, error) {
	return lease.Hold(ctx, nc, js, LeaseRole, instance, lease.Bound(bound))
}

// LeaseExists looks a lease up by its consumer name.
type LeaseExists func(ctx context.Context, name string) (bool, error)

// Leases looks leases up on the claims stream through js.
func Leases(js jetstream.JetStream) LeaseExists {
	return func(ctx context.Context, name string) (bool, error) { return lease.Exists(ctx, js, name) }
}

// State is what the registry and the root leases say of a Session's root.
type State string

const (
	// Alive: the record names a root, and that instance holds its lease.
	Alive State = "alive"
	// NoRoot: no root was registered, or the last one released the Session.
	NoRoot State = "no_root"
	// RootLost: the record names a root whose lease is gone. The instance
	// died, or was cut off from NATS for longer than the release bound,
	// without releasing the Session.
	RootLost State = "root_lost"
)

// Root returns sid's record and the state of its root, looking the root
// lease of the instance the record names up with exists.
func (r *Registry) Root(ctx context.Context, sid string, exists LeaseExists) (Record, State, error) {
	rec, live, err := r.Lookup(ctx, sid)
	if err != nil || !live {
		return rec, NoRoot, err
	}
	alive, err := exists(ctx, LeaseName(rec.Instance))
	switch {
	case err != nil:
		return rec, "", err
	case !alive:
		return rec, RootLost, nil
	}
	return rec, Alive, nil
}
