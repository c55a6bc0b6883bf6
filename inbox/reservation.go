package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// State is how far a reserved reply has come on its way into the agent.
type State string

const (
	// StateQueued: the reply is in the inbox; the agent has not read it.
	StateQueued State = "queued"
	// StateSpliced: the agent spliced the reply into its pending inbox.
	StateSpliced State = "spliced"
	// StateClaimed: the agent claimed the reply for its next step.
	StateClaimed State = "claimed"
)

// Reservation is the replyReservations value of one (Session, call): the
// one reply of that call that awaits admission (D8). Operators read it
// with `nats kv get replyReservations <session>.<call token>`.
type Reservation struct {
	CallID    string `json:"callId"`
	MessageID string `json:"messageId"`
	State     State  `json:"state"`
	// Seq is the Session seq the reservation is current as of: every event
	// of its reply comes after it, and Apply moves it on.
	Seq   uint64    `json:"seq"`
	Since time.Time `json:"since"`
}

// Apply moves r on by one event of its Session (D8) and reports whether
// the event changed r and whether it released it. Admission of the reply
// as a user/message releases it (the projection settles the call); so
// does a discard, and a Turn that ends after the reply entered the agent's
// inbox without admitting it. A reply still only queued outlives a Turn
// end: it has not entered any Turn yet. Events at or before r.Seq change
// nothing, so a redelivered event is harmless.
func (r *Reservation) Apply(e events.Event) (changed, released bool) {
	if e.Seq <= r.Seq {
		return false, false
	}
	switch b := e.Body.(type) {
	case *events.InboxSpliced:
		if b.Message.ID == r.MessageID && r.State == StateQueued {
			r.State, changed = StateSpliced, true
		}
	case *events.InboxClaimed:
		if b.MessageID == r.MessageID && r.State != StateClaimed {
			r.State, changed = StateClaimed, true
		}
	case *events.UserMessage:
		src := b.Message.Source
		released = b.Message.ID == r.MessageID || (src.IsQuestionReply() && src.CallID == r.CallID)
	case *events.InboxDiscarded:
		released = b.MessageID == r.MessageID
	case *events.TurnEnd:
		released = r.State != StateQueued
	}
	if changed || released {
		r.Seq = e.Seq
	}
	return changed || released, released
}

// maxCASRetries bounds how often a reservation write retries after losing
// a compare-and-set to a concurrent writer of the same key.
const maxCASRetries = 32

// Reservations is the replyReservations bucket, read against the Session
// log: a reservation holds only while the log's events after it do not
// release it, whether or not a Tracker has written that yet.
type Reservations struct {
	kv  jetstream.KeyValue
	log *sessionlog.Log
	now func() time.Time
}

// NewReservations returns the reservations in kv (normally
// Topology.Reservations), checked against the Session logs in log.
func NewReservations(kv jetstream.KeyValue, log *sessionlog.Log) *Reservations {
	return &Reservations{kv: kv, log: log, now: func() time.Time { return time.Now().UTC() }}
}

// Held returns the reservation of (sid, callID) if one holds. The stored
// value is moved on by every later event of the Session log first, so a
// release recorded a moment ago counts even before the Tracker has seen
// it; a stored reservation the log has released is deleted.
func (rs *Reservations) Held(ctx context.Context, sid, callID string) (Reservation, bool, error) {
	key, err := streams.ReservationKey(sid, callID)
	if err != nil {
		return Reservation{}, false, err
	}
	for range maxCASRetries {
		r, rev, found, err := rs.get(ctx, key)
		if err != nil || !found {
			return Reservation{}, false, err
		}
		released, err := rs.catchUp(ctx, sid, &r)
		if err != nil {
			return Reservation{}, false, err
		}
		if !released {
			return r, true, nil
		}
		err = rs.kv.Delete(ctx, key, jetstream.LastRevision(rev))
		switch {
		case err == nil:
			return Reservation{}, false, nil
		case !streams.IsConflict(err):
			return Reservation{}, false, holdover.Newf(holdover.CodeInternal, "release reservation %s: %v", key, err)
		}
		// The Tracker moved it meanwhile: read it again.
	}
	return Reservation{}, false, casExhausted(key)
}

// Reserve creates the reservation of a new reply messageID to (sid,
// callID), made when the Session's last event was at seq. It is atomic:
// of concurrent reservations of one call exactly one succeeds, the others
// get REPLY_QUEUED, as does any while an earlier reply still holds. It
// returns the revision Cancel needs.
func (rs *Reservations) Reserve(ctx context.Context, sid, callID, messageID string, at uint64) (uint64, error) {
	key, err := streams.ReservationKey(sid, callID)
	if err != nil {
		return 0, err
	}
	data, err := encodeReservation(Reservation{CallID: callID, MessageID: messageID, State: StateQueued, Seq: at, Since: rs.now()})
	if err != nil {
		return 0, err
	}
	for range maxCASRetries {
		rev, err := rs.kv.Create(ctx, key, data)
		switch {
		case err == nil:
			return rev, nil
		case !streams.IsConflict(err):
			return 0, holdover.Newf(holdover.CodeInternal, "create reservation %s: %v", key, err)
		}
		held, ok, err := rs.Held(ctx, sid, callID)
		switch {
		case err != nil:
			return 0, err
		case ok:
			return 0, ReplyQueued(callID, held)
		}
		// The stored reservation was released and is gone: try again.
	}
	return 0, casExhausted(key)
}

// Cancel deletes the reservation Reserve created at rev, when its reply
// could not be queued. A reservation that has moved on since is left alone.
func (rs *Reservations) Cancel(ctx context.Context, sid, callID string, rev uint64) error {
	key, err := streams.ReservationKey(sid, callID)
	if err != nil {
		return err
	}
	if err := rs.kv.Delete(ctx, key, jetstream.LastRevision(rev)); err != nil && !streams.IsConflict(err) {
		return holdover.Newf(holdover.CodeInternal, "cancel reservation %s: %v", key, err)
	}
	return nil
}

// restore re-creates the reservation of a reply the agent claimed after a
// restart (D8) unless one is stored, and reports whether it created it.
func (rs *Reservations) restore(ctx context.Context, sid string, r Reservation) (bool, error) {
	key, err := streams.ReservationKey(sid, r.CallID)
	if err != nil {
		return false, err
	}
	r.Since = rs.now()
	data, err := encodeReservation(r)
	if err != nil {
		return false, err
	}
	_, err = rs.kv.Create(ctx, key, data)
	switch {
	case err == nil:
		return true, nil
	case streams.IsConflict(err):
		return false, nil
	}
	return false, holdover.Newf(holdover.CodeInternal, "restore reservation %s: %v", key, err)
}

// advance applies e to the stored reservation of (sid, callID), if any,
// and writes the result: moved on, deleted when released, untouched when
// e says nothing about it. It reports whether one was stored and matched.
func (rs *Reservations) advance(ctx context.Context, sid, callID string, e events.Event) (bool, error) {
	key, err := streams.ReservationKey(sid, callID)
	if err != nil {
		return false, err
	}
	for range maxCASRetries {
		r, rev, found, err := rs.get(ctx, key)
		if err != nil || !found {
			return false, err
		}
		changed, released := r.Apply(e)
		switch {
		case !changed:
			return false, nil
		case released:
			err = rs.kv.Delete(ctx, key, jetstream.LastRevision(rev))
		default:
			var data []byte
			if data, err = encodeReservation(r); err == nil {
				_, err = rs.kv.Update(ctx, key, data, rev)
			}
		}
		switch {
		case err == nil:
			return true, nil
		case !streams.IsConflict(err):
			return false, holdover.Newf(holdover.CodeInternal, "update reservation %s: %v", key, err)
		}
	}
	return false, casExhausted(key)
}

// session lists the reservations stored for Session sid.
func (rs *Reservations) session(ctx context.Context, sid string) ([]Reservation, error) {
	if err := streams.CheckSession(sid); err != nil {
		return nil, err
	}
	lister, err := rs.kv.ListKeysFiltered(ctx, streams.Key(sid, "*"))
	if err != nil {
		return nil, holdover.Newf(holdover.CodeInternal, "list reservations of session %s: %v", sid, err)
	}
	defer func() { _ = lister.Stop() }()
	var out []Reservation
	for key := range lister.Keys() {
		r, _, found, err := rs.get(ctx, key)
		if err != nil {
			return nil, err
		}
		if found {
			out = append(out, r)
		}
	}
	return out, nil
}

// catchUp folds the Session events after r.Seq into r and reports whether
// they released it.
func (rs *Reservations) catchUp(ctx context.Context, sid string, r *Reservation) (bool, error) {
	evts, _, err := rs.log.Read(ctx, sid, r.Seq)
	if err != nil {
		return false, err
	}
	for _, e := range evts {
		if _, released := r.Apply(e); released {
			return true, nil
		}
	}
	return false, nil
}

func (rs *Reservations) get(ctx context.Context, key string) (r Reservation, rev uint64, found bool, err error) {
	entry, err := rs.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return Reservation{}, 0, false, nil
	case err != nil:
		return Reservation{}, 0, false, holdover.Newf(holdover.CodeInternal, "read reservation %s: %v", key, err)
	}
	if err := json.Unmarshal(entry.Value(), &r); err != nil {
		return Reservation{}, 0, false, holdover.Newf(holdover.CodeInternal,
			"%s/%s revision %d is not a reservation (%v); delete it with the nats CLI to free the call", streams.ReservationsBucket, key, entry.Revision(), err)
	}
	return r, entry.Revision(), true, nil
}

func encodeReservation(r Reservation) ([]byte, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, holdover.Newf(holdover.CodeInternal, "encode reservation of call %s: %v", r.CallID, err)
	}
	return data, nil
}

// ReplyQueued is the REPLY_QUEUED error for callID while r holds.
func ReplyQueued(callID string, r Reservation) error {
	return holdover.Newf(holdover.CodeReplyQueued, "call %s already has a reply (message %s, %s) waiting for the agent to admit it; it can be answered again once that reply is admitted or discarded", callID, r.MessageID, r.State)
}

func casExhausted(key string) error {
	return holdover.Newf(holdover.CodeConflict, "reservation %s kept changing under %d attempts to update it", key, maxCASRetries)
}
