package inbox_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
)

// D8: the reservation covers queuing, splice and claim, and is released
// by admission, discard, or a Turn that ends after the reply entered the
// agent's inbox.
func TestD8ReservationLifecycle(t *testing.T) {
	m := reply(t, "m1", "c1")
	other := reply(t, "m2", "c1")
	ordinary := events.Message{ID: "u1", Role: "user", Content: events.Text("hi"), Source: events.Source{Kind: events.SourceUser}}
	type step struct {
		body             events.Body
		changed, release bool
		state            inbox.State
	}
	for name, steps := range map[string][]step{
		"admitted after claim": {
			{&events.InboxSpliced{Message: m}, true, false, inbox.StateSpliced},
			{&events.InboxClaimed{MessageID: "m1"}, true, false, inbox.StateClaimed},
			{&events.UserMessage{Message: m}, true, true, inbox.StateClaimed},
		},
		"discarded while queued": {
			{&events.InboxDiscarded{MessageID: "m1"}, true, true, inbox.StateQueued},
		},
		"queued reply outlives a Turn end": {
			{&events.TurnEnd{Turn: "t1"}, false, false, inbox.StateQueued},
			{&events.InboxSpliced{Message: m}, true, false, inbox.StateSpliced},
			{&events.TurnEnd{Turn: "t2"}, true, true, inbox.StateSpliced},
		},
		"claimed reply dropped at Turn end": {
			{&events.InboxClaimed{MessageID: "m1"}, true, false, inbox.StateClaimed},
			{&events.TurnEnd{Turn: "t1"}, true, true, inbox.StateClaimed},
		},
		"another reply of the call admitted": {
			{&events.UserMessage{Message: other}, true, true, inbox.StateQueued},
		},
		"other messages change nothing": {
			{&events.InboxSpliced{Message: other}, false, false, inbox.StateQueued},
			{&events.InboxClaimed{MessageID: "m2"}, false, false, inbox.StateQueued},
			{&events.InboxDiscarded{MessageID: "m2"}, false, false, inbox.StateQueued},
			{&events.UserMessage{Message: ordinary}, false, false, inbox.StateQueued},
			{&events.StepEnd{Turn: "t1"}, false, false, inbox.StateQueued},
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := inbox.Reservation{CallID: "c1", MessageID: "m1", State: inbox.StateQueued, Seq: 10}
			for i, s := range steps {
				seq := uint64(11 + i)
				changed, released := r.Apply(at(seq, s.body))
				require.Equal(t, s.changed, changed, "step %d", i)
				require.Equal(t, s.release, released, "step %d", i)
				require.Equal(t, s.state, r.State, "step %d", i)
				if changed {
					require.Equal(t, seq, r.Seq)
				}
			}
		})
	}
}

// Events at or before the reservation's seq are already in it: a
// redelivered event changes nothing.
func TestReservationIgnoresEventsItHasSeen(t *testing.T) {
	r := inbox.Reservation{CallID: "c1", MessageID: "m1", State: inbox.StateQueued, Seq: 10}
	changed, released := r.Apply(at(10, &events.InboxDiscarded{MessageID: "m1"}))
	require.False(t, changed)
	require.False(t, released)
	changed, _ = r.Apply(at(11, &events.InboxClaimed{MessageID: "m1"}))
	require.True(t, changed)
	changed, released = r.Apply(at(11, &events.TurnEnd{Turn: "t1"}))
	require.False(t, changed)
	require.False(t, released)
}
