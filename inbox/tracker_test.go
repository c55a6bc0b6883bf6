package inbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/steer/steertest"
	"github.com/holdover-dev/holdover/streams"
)

// rig is the shared late-answer Env (steertest.Start) under the short
// names this package's tests use.
type rig struct {
	env *embeddedtest.Env
	log *sessionlog.Log
	rs  *inbox.Reservations
	// run runs a Tracker until the returned stop is called or the test ends.
	run func(testing.TB) (*inbox.Tracker, func())
}

func newRig(t *testing.T) *rig {
	e := steertest.Start(t)
	return &rig{env: e.Env, log: e.Log, rs: e.Reservations, run: e.RunTracker}
}

// stored reads the raw reservation of (sid, callID) from the bucket.
func (r *rig) stored(t *testing.T, sid, callID string) (inbox.Reservation, bool) {
	t.Helper()
	key, err := streams.ReservationKey(sid, callID)
	require.NoError(t, err)
	e, err := r.env.Topology.Reservations.Get(context.Background(), key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return inbox.Reservation{}, false
	}
	require.NoError(t, err)
	var res inbox.Reservation
	require.NoError(t, json.Unmarshal(e.Value(), &res))
	return res, true
}

// reservedC1 writes Session s1's timed header and reserves call c1 for
// reply m1, as steer does before it queues the reply (D8); it returns the
// Session and the reservation's revision.
func (r *rig) reservedC1(t *testing.T) (*steertest.Session, uint64) {
	t.Helper()
	s := steertest.NewSession(t, r.log, "s1")
	s.Header(true)
	rev, err := r.rs.Reserve(context.Background(), "s1", "c1", "m1", s.Last())
	require.NoError(t, err)
	return s, rev
}

func wait(t *testing.T, tr *inbox.Tracker, seq uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tr.Wait(ctx, seq))
}

// D8: the Tracker moves the stored reservation along the reply's way in
// and deletes it on admission.
func TestD8TrackerFollowsTheReply(t *testing.T) {
	r := newRig(t)
	tr, _ := r.run(t)
	s, _ := r.reservedC1(t)
	m := reply(t, "m1", "c1")

	s.Splice(m, 1)
	wait(t, tr, s.Last())
	got, ok := r.stored(t, "s1", "c1")
	require.True(t, ok)
	require.Equal(t, inbox.StateSpliced, got.State)

	s.Claim("m1")
	wait(t, tr, s.Last())
	got, _ = r.stored(t, "s1", "c1")
	require.Equal(t, inbox.StateClaimed, got.State)
	require.Equal(t, s.Last(), got.Seq)

	s.Admit(m)
	wait(t, tr, s.Last())
	_, ok = r.stored(t, "s1", "c1")
	require.False(t, ok)
}

// D8: a Turn end releases every reservation of its Session whose reply
// entered the inbox, and only those; a discard releases its own.
func TestD8TrackerReleasesOnTurnEndAndDiscard(t *testing.T) {
	r := newRig(t)
	tr, _ := r.run(t)
	ctx := context.Background()
	s := steertest.NewSession(t, r.log, "s1")
	other := steertest.NewSession(t, r.log, "s2")
	s.Header(true)
	other.Header(true)
	for _, c := range []string{"spliced", "queued", "discarded"} {
		_, err := r.rs.Reserve(ctx, "s1", c, "m-"+c, s.Last())
		require.NoError(t, err)
	}
	_, err := r.rs.Reserve(ctx, "s2", "spliced", "m-other", other.Last())
	require.NoError(t, err)
	s.Splice(reply(t, "m-spliced", "spliced"), 1)
	other.Splice(reply(t, "m-other", "spliced"), 2)
	s.Discard("m-discarded")
	s.TurnEnd("t2")
	wait(t, tr, s.Last())

	_, ok := r.stored(t, "s1", "spliced")
	require.False(t, ok, "spliced and not admitted in the Turn")
	_, ok = r.stored(t, "s1", "discarded")
	require.False(t, ok)
	got, ok := r.stored(t, "s1", "queued")
	require.True(t, ok, "never entered the Turn")
	require.Equal(t, inbox.StateQueued, got.State)
	_, ok = r.stored(t, "s2", "spliced")
	require.True(t, ok, "another Session's Turn end releases nothing here")
}

// D8: claiming a restored inbox reply re-creates its reservation, also
// when the Tracker restarted in between and must find the call from the
// Session log.
func TestD8ReclaimedRestoredReplyRecreatesTheReservation(t *testing.T) {
	r := newRig(t)
	tr, stop := r.run(t)
	s, _ := r.reservedC1(t)
	s.Splice(reply(t, "m1", "c1"), 1)
	s.Claim("m1")
	s.TurnEnd("t2")
	wait(t, tr, s.Last())
	_, ok := r.stored(t, "s1", "c1")
	require.False(t, ok)
	stop()

	tr, _ = r.run(t) // a fresh Tracker: nothing cached
	s.Claim("m1")
	wait(t, tr, s.Last())
	got, ok := r.stored(t, "s1", "c1")
	require.True(t, ok)
	require.Equal(t, inbox.Reservation{CallID: "c1", MessageID: "m1", State: inbox.StateClaimed, Seq: s.Last(), Since: got.Since}, got)
	_, err := r.rs.Reserve(context.Background(), "s1", "c1", "m2", s.Last())
	require.Equal(t, holdover.CodeReplyQueued, holdover.CodeOf(err))

	// An ordinary user message claimed is no reply: nothing is reserved.
	user := events.Message{ID: "u1", Role: "user", Content: events.Text("hi"), Source: events.Source{Kind: events.SourceUser}}
	s.Splice(user, 3)
	s.Claim("u1")
	wait(t, tr, s.Last())
	_, ok = r.stored(t, "s1", "u1")
	require.False(t, ok)
}

// D8: of concurrent reservations of one call, exactly one is made.
func TestD8ReserveIsAtomic(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	const n = 32
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := r.rs.Reserve(ctx, "s1", "c1", "m"+string(rune('a'+i)), 0)
			errs <- err
		}()
	}
	made := 0
	for range n {
		err := <-errs
		if err == nil {
			made++
			continue
		}
		require.Equal(t, holdover.CodeReplyQueued, holdover.CodeOf(err), "%v", err)
	}
	require.Equal(t, 1, made)
}

// D8: Held reads the log itself, so a release counts before any Tracker
// has written it; the stale value is then deleted.
func TestD8HeldIsReadYourWrites(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	s, rev := r.reservedC1(t)
	_, held, err := r.rs.Held(ctx, "s1", "c1")
	require.NoError(t, err)
	require.True(t, held)

	s.Discard("m1")
	_, held, err = r.rs.Held(ctx, "s1", "c1")
	require.NoError(t, err)
	require.False(t, held)
	_, ok := r.stored(t, "s1", "c1")
	require.False(t, ok)

	// Cancel of a reservation that is gone, or has moved on, is harmless.
	require.NoError(t, r.rs.Cancel(ctx, "s1", "c1", rev))
}

func TestCorruptReservationIsAClearError(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	key, err := streams.ReservationKey("s1", "c1")
	require.NoError(t, err)
	_, err = r.env.Topology.Reservations.Put(ctx, key, []byte("{not json"))
	require.NoError(t, err)
	_, _, err = r.rs.Held(ctx, "s1", "c1")
	require.Equal(t, holdover.CodeInternal, holdover.CodeOf(err))
	require.ErrorContains(t, err, "delete it with the nats CLI")
}
