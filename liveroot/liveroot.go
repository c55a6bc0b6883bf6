// Package liveroot owns the live-root registry: which runtime instance is
// the live root of each Session, under which epoch, and whether it is a
// child owned by another agent (M9); the root lease each runtime instance
// holds, which says whether the root a record names still runs; and the
// resume request that asks the runtime pool to bring a Session with no
// live root back (D7).
//
// The registry is the KV bucket streams.RootsBucket, one key per Session id,
// written only with compare-and-set, so two instances taking over a Session
// at once each get their own epoch and exactly one of them is live. It
// decides who may talk to the human; it never decides anything about the
// questions themselves.
package liveroot

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/streams"
)

// Record is the registry value of one Session. Operators read it with
// `nats kv get liveRoots <session>`.
type Record struct {
	// Instance is the live root's runtime instance id; empty once released.
	Instance string `json:"instance"`
	// Epoch grows with every registration of the Session, including after a
	// release, so a ref from an earlier registration never matches again.
	Epoch uint64 `json:"epoch"`
	// Owner names the agent that owns this Session's runtime when it runs as
	// a child; a root has none.
	Owner string `json:"owner,omitempty"`
	// Since is when this registration (or release) was written.
	Since time.Time `json:"since"`
}

// Live reports whether the record names a live root.
func (r Record) Live() bool { return r.Instance != "" }

// Ref is the AgentRef that names this registration.
func (r Record) Ref() holdover.AgentRef {
	return holdover.AgentRef{Instance: r.Instance, Epoch: r.Epoch, Owner: r.Owner}
}

// Registry is the live-root registry in one KV bucket.
type Registry struct {
	kv  jetstream.KeyValue
	now func() time.Time
}

// New returns the registry kept in kv (normally Topology.Roots).
func New(kv jetstream.KeyValue) *Registry {
	return &Registry{kv: kv, now: func() time.Time { return time.Now().UTC() }}
}

// maxCASRetries bounds how often a registration retries after losing a
// compare-and-set to a concurrent writer of the same Session.
const maxCASRetries = 32

// Register makes instance the live root of sid and returns its new epoch.
// It takes over from any earlier root, live or not: the earlier instance's
// refs stop passing Check. A Session with lineage (a resumed child, say)
// registers the same way and becomes a root that may ask (M9).
func (r *Registry) Register(ctx context.Context, sid, instance string) (uint64, error) {
	return r.register(ctx, sid, instance, "")
}

// RegisterAlone makes instance the live root of sid, like Register, unless
// another instance is the Session's root and still holds its root lease
// (exists says): then it is CONFLICT with a message naming that instance,
// because two runtimes serving one Session would each fence the other out
// of its log. A root whose lease is gone is taken over, as a resume does.
// A host bridge, which a person starts by hand for a Session, registers this
// way: a second host on the same Session is refused instead of silently
// taking it over from the first.
func (r *Registry) RegisterAlone(ctx context.Context, sid, instance string, exists LeaseExists) (uint64, error) {
	if err := checkName("instance", instance); err != nil {
		return 0, err
	}
	var (
		epoch  uint64
		served error
	)
	err := r.update(ctx, sid, func(old Record, _ bool) (Record, bool) {
		served = nil
		if old.Live() && old.Instance != instance {
			alive, err := exists(ctx, LeaseName(old.Instance))
			switch {
			case err != nil:
				served = err
				return Record{}, false
			case alive:
				served = holdover.Newf(holdover.CodeConflict,
					"session %s is already served by runtime instance %q (epoch %d), whose root lease is alive: "+
						"two runtimes may not serve one Session; stop that one, or give this one a Session of its own", sid, old.Instance, old.Epoch)
				return Record{}, false
			}
		}
		epoch = old.Epoch + 1
		return Record{Instance: instance, Epoch: epoch, Since: r.now()}, true
	})
	if err == nil {
		err = served
	}
	return epoch, err
}

// RegisterChild registers instance as the runtime of sid running as a child
// owned by the agent owner. A child may not talk to the human: Check
// answers DELEGATED_CALLER until the Session is registered as a root.
func (r *Registry) RegisterChild(ctx context.Context, sid, instance, owner string) (uint64, error) {
	if err := checkName("owner", owner); err != nil {
		return 0, err
	}
	return r.register(ctx, sid, instance, owner)
}

func (r *Registry) register(ctx context.Context, sid, instance, owner string) (uint64, error) {
	if err := checkName("instance", instance); err != nil {
		return 0, err
	}
	var epoch uint64
	err := r.update(ctx, sid, func(old Record, _ bool) (Record, bool) {
		epoch = old.Epoch + 1
		return Record{Instance: instance, Epoch: epoch, Owner: owner, Since: r.now()}, true
	})
	return epoch, err
}

// Release ends ref's registration of sid: the Session then has no live
// root until the next Register. Releasing a registration that is no longer
// current changes nothing, so a stale instance cannot release its
// successor.
func (r *Registry) Release(ctx context.Context, sid string, ref holdover.AgentRef) error {
	return r.update(ctx, sid, func(old Record, found bool) (Record, bool) {
		if !found || !old.Live() || old.Instance != ref.Instance || old.Epoch != ref.Epoch {
			return Record{}, false
		}
		return Record{Epoch: old.Epoch, Since: r.now()}, true
	})
}

// Lookup returns sid's record and whether it names a live root.
func (r *Registry) Lookup(ctx context.Context, sid string) (Record, bool, error) {
	rec, _, found, err := r.get(ctx, sid)
	if err != nil || !found {
		return Record{}, false, err
	}
	return rec, rec.Live(), nil
}

// Check reports whether ref is the exact live root of sid (M9). A ref or a
// registration with an owner is a child: DELEGATED_CALLER, with a message
// that tells the child what to do instead. Any other mismatch, and a
// Session with no live root, is CALLER_NOT_LIVE.
func (r *Registry) Check(ctx context.Context, sid string, ref holdover.AgentRef) error {
	if ref.Owner != "" {
		return delegated(sid, ref.Owner)
	}
	rec, live, err := r.Lookup(ctx, sid)
	if err != nil {
		return err
	}
	switch {
	case !live:
		return holdover.Newf(holdover.CodeCallerNotLive, "session %s has no live runtime root; instance %q (epoch %d) may not ask the user", sid, ref.Instance, ref.Epoch)
	case rec.Instance != ref.Instance || rec.Epoch != ref.Epoch:
		return holdover.Newf(holdover.CodeCallerNotLive, "instance %q (epoch %d) is not the live runtime root of session %s, which is now %q (epoch %d)", ref.Instance, ref.Epoch, sid, rec.Instance, rec.Epoch)
	case rec.Owner != "":
		return delegated(sid, rec.Owner)
	}
	return nil
}

func delegated(sid, owner string) error {
	return holdover.Newf(holdover.CodeDelegatedCaller, "session %s runs as a child owned by agent %q, so it cannot ask the user directly; put the open question in your final result for %q to ask", sid, owner, owner)
}

// update applies change to sid's record with compare-and-set, retrying when
// a concurrent writer got there first. change returns false to write
// nothing.
func (r *Registry) update(ctx context.Context, sid string, change func(old Record, found bool) (Record, bool)) error {
	if err := streams.CheckSession(sid); err != nil {
		return err
	}
	for range maxCASRetries {
		old, rev, found, err := r.get(ctx, sid)
		if err != nil {
			return err
		}
		rec, write := change(old, found)
		if !write {
			return nil
		}
		data, err := json.Marshal(rec)
		if err != nil {
			return holdover.Wrapf(err, holdover.CodeInternal, "encode live root of %s", sid)
		}
		if found {
			_, err = r.kv.Update(ctx, sid, data, rev)
		} else {
			_, err = r.kv.Create(ctx, sid, data)
		}
		switch {
		case err == nil:
			return nil
		case streams.IsConflict(err):
			continue // another writer won; read its record and try again
		default:
			return holdover.Wrapf(err, holdover.CodeInternal, "write live root of %s", sid)
		}
	}
	return holdover.Newf(holdover.CodeConflict, "live root of %s kept changing under %d attempts to update it", sid, maxCASRetries)
}

func (r *Registry) get(ctx context.Context, sid string) (rec Record, rev uint64, found bool, err error) {
	if err := streams.CheckSession(sid); err != nil {
		return Record{}, 0, false, err
	}
	entry, err := r.kv.Get(ctx, sid)
	// A read cut off by a reconnect says nothing of the record: it is asked
	// again, and waits in the connection's buffer until it is back.
	for errors.Is(err, nats.ErrDisconnected) && ctx.Err() == nil {
		entry, err = r.kv.Get(ctx, sid)
	}
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return Record{}, 0, false, nil
	case err != nil:
		return Record{}, 0, false, holdover.Wrapf(err, holdover.CodeInternal, "read live root of %s", sid)
	}
	if err := json.Unmarshal(entry.Value(), &rec); err != nil {
		return Record{}, 0, false, holdover.Wrapf(err, holdover.CodeInternal, "live root of %s is not a registry record", sid)
	}
	return rec, entry.Revision(), true, nil
}

func checkName(what, v string) error {
	switch {
	case v == "":
		return holdover.Newf(holdover.CodeBadRequest, "%s is empty", what)
	case len(v) > streams.MaxIDLength:
		return holdover.Newf(holdover.CodeBadRequest, "%s is %d bytes, over the %d byte limit", what, len(v), streams.MaxIDLength)
	}
	return nil
}
