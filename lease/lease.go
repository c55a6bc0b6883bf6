// Package lease owns liveness leases (DESIGN.md, "Liveness without
// heartbeats"): holding one, looking one up, and watching for its end.
//
// A lease is an ephemeral push consumer on the claims stream that carries
// no message. NATS deletes it the release bound (its InactiveThreshold)
// after its holder's connection, and so its interest, is gone: whether the
// holder ended it, crashed or was cut off. Nothing travels to keep it
// alive. The claims of answer UIs are consumers of the same kind that also
// carry frames, so they are held the same way ([HoldConsumer]).
//
// The package never decides what a lost lease means: a worker, a caller
// or a runtime instance that watches one decides that for itself.
package lease

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/streams"
)

// A lease is named lease~<role>~<id>, so `nats consumer ls CLAIMS` tells an
// operator whose lease it is. The role says what holds it (a question
// worker, a waiting agent, a runtime that is a Session's live root) and id
// which one. A claim's name starts with another kind; '~' never occurs in
// a token (streams.Token), so the parts split unambiguously.
const (
	// Kind starts every lease name.
	Kind = "lease"
	// Sep separates the parts of a claims-stream consumer name.
	Sep = "~"
	// AdvisoryPrefix starts the subjects of JetStream's consumer advisories:
	// <prefix><ACTION>.<stream>.<consumer>.
	AdvisoryPrefix = "$JS.EVENT.ADVISORY.CONSUMER."
)

// DefaultReleaseBound is how long NATS keeps a lease or claim after its
// holder's interest is gone: the bound on noticing a dead holder.
const DefaultReleaseBound = 2 * time.Second

// MinReleaseBound is the shortest release bound accepted. Shorter
// thresholds let a loaded server delete consumers whose holder is alive,
// and lose leases on a reconnect blip (DESIGN.md, measured facts).
const MinReleaseBound = time.Second

// Bound applies the default and the floor to a configured release bound.
func Bound(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultReleaseBound
	}
	return max(d, MinReleaseBound)
}

// Subject is the subject the lease of role and id filters on. It never
// carries a message; the role is a token of its own so that NATS
// permissions can say which roles may hold which leases (package auth).
func Subject(role, id string) string { return streams.LeasePrefix + "." + role + "." + id }

// Name is the consumer name of the lease of role and id. Both are plain
// words (letters, digits, '-' and '_'), which Hold checks.
func Name(role, id string) string { return Kind + Sep + role + Sep + id }

func checkWord(what, v string) error {
	if tok, err := streams.Token(v); err != nil || tok != v {
		return holdover.Newf(holdover.CodeBadRequest, "lease %s %q must be 1 to %d letters, digits, '-' or '_'", what, v, streams.MaxIDLength)
	}
	return nil
}

// Lease is a liveness lease this process holds.
type Lease struct {
	name string
	sub  *nats.Subscription
	js   jetstream.JetStream
}

// Hold creates the lease of role and id (a fresh id when empty) that lives
// as long as nc's interest, and bound after it.
func Hold(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, role, id string, bound time.Duration) (*Lease, error) {
	if id == "" {
		id = nuid.Next()
	}
	if err := checkWord("role", role); err != nil {
		return nil, err
	}
	if err := checkWord("id", id); err != nil {
		return nil, err
	}
	name := Name(role, id)
	sub, err := HoldConsumer(ctx, nc, js, name, Subject(role, id), bound, map[string]string{"role": role, "id": id}, func(*nats.Msg) {})
	if err != nil {
		return nil, err
	}
	return &Lease{name: name, sub: sub, js: js}, nil
}

// Name is the lease's consumer name, as `nats consumer ls CLAIMS` shows it.
func (l *Lease) Name() string { return l.name }

// Alive reports whether the lease still exists. One that NATS deleted
// while this process was cut off stays deleted: everyone watching it has
// already given its holder up, so the holder must hold a new one.
func (l *Lease) Alive(ctx context.Context) (bool, error) { return Exists(ctx, l.js, l.name) }

// End deletes the lease at once, so watchers need not wait out the bound.
// On a closed connection there is nothing left to end: NATS deletes the
// lease within the bound.
func (l *Lease) End(ctx context.Context) error {
	defer l.Drop()
	if l.js.Conn().IsClosed() {
		return nil
	}
	return Delete(ctx, l.js, l.name)
}

// Drop stops holding the lease without deleting it, as when NATS has
// deleted it already and the holder takes a new one under the same name.
func (l *Lease) Drop() { _ = l.sub.Unsubscribe() } // a closed connection has nothing left to drop

// Exists looks a lease or claim up by its consumer name.
func Exists(ctx context.Context, js jetstream.JetStream, name string) (bool, error) {
	_, err := js.PushConsumer(ctx, streams.ClaimsStream, name)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return false, nil
	}
	return false, holdover.Wrapf(err, holdover.CodeInternal, "look up %s", name)
}

// Delete removes a lease or claim; one that is already gone is not an
// error.
func Delete(ctx context.Context, js jetstream.JetStream, name string) error {
	err := js.DeleteConsumer(ctx, streams.ClaimsStream, name)
	if err == nil || errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil
	}
	return holdover.Wrapf(err, holdover.CodeInternal, "delete %s", name)
}

// DeletedSubject is the advisory JetStream publishes when the lease or
// claim named name is deleted, by its holder, by another process or by
// NATS.
func DeletedSubject(name string) string {
	return AdvisoryPrefix + "DELETED." + streams.ClaimsStream + "." + name
}

// HoldConsumer subscribes to a fresh deliver subject with onMsg and then
// creates the consumer name on the claims stream that delivers the
// messages of subject there, deleted bound after the subscription's
// interest ends. The order matters: a push consumer created before its
// subscriber can be judged inactive and deleted before it is bound.
func HoldConsumer(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, name, subject string, bound time.Duration, meta map[string]string, onMsg nats.MsgHandler) (*nats.Subscription, error) {
	deliver := nc.NewInbox()
	sub, err := nc.Subscribe(deliver, onMsg)
	if err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "subscribe for %s", name)
	}
	// Memory storage and one replica: a lease holds no state worth keeping.
	cfg := jetstream.ConsumerConfig{
		Name:              name,
		DeliverSubject:    deliver,
		FilterSubject:     subject,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: bound,
		MemoryStorage:     true,
		Replicas:          1,
		Metadata:          meta,
	}
	if _, err := js.CreatePushConsumer(ctx, streams.ClaimsStream, cfg); err != nil {
		_ = sub.Unsubscribe()
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "create %s", name)
	}
	return sub, nil
}
