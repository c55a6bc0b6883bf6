package inbox_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
)

func reply(t *testing.T, messageID, callID string) events.Message {
	t.Helper()
	m, err := events.NewReply(messageID, callID, []holdover.Question{{ID: "q1", Question: "?"}}, []holdover.Answer{{ID: "q1"}})
	require.NoError(t, err)
	return m
}

func at(seq uint64, body events.Body) events.Event {
	return events.Event{Seq: seq, Type: body.EventType(), Body: body}
}

// fold moves l on by one transition the way the projection does.
func fold(l inbox.Logged, callID string, e events.Event) (inbox.Logged, inbox.Transition) {
	t := l.Step(callID, e)
	switch t {
	case inbox.Hold:
		l.Held = e.Body.(*events.InboxSpliced).Message.ID
	case inbox.Release:
		l.Released, l.Held = l.Held, ""
	case inbox.Restore:
		l.Held, l.Released = l.Released, ""
	}
	return l, t
}

// D8: the log holds a reply from its splice; admission, discard, or a
// Turn that ends after the splice release it; claiming a released reply
// again restores it. A reply that is queued but not spliced is unknown to
// the log, so a Turn end leaves it to the reply subject.
func TestD8LoggedReservationLifecycle(t *testing.T) {
	m := reply(t, "m1", "c1")
	other := reply(t, "m2", "c1")
	otherCall := reply(t, "m3", "c2")
	ordinary := events.Message{ID: "u1", Role: "user", Content: events.Text("hi"), Source: events.Source{Kind: events.SourceUser}}
	type step struct {
		body events.Body
		want inbox.Transition
		held string
	}
	for name, steps := range map[string][]step{
		"admitted after claim": {
			{&events.InboxSpliced{Message: m}, inbox.Hold, "m1"},
			{&events.InboxClaimed{MessageID: "m1"}, inbox.Unchanged, "m1"},
			{&events.UserMessage{Message: m}, inbox.Release, ""},
		},
		"discarded after splice": {
			{&events.InboxSpliced{Message: m}, inbox.Hold, "m1"},
			{&events.InboxDiscarded{MessageID: "m1"}, inbox.Release, ""},
		},
		"not spliced yet: a Turn end is not the reply's": {
			{&events.TurnEnd{Turn: "t1"}, inbox.Unchanged, ""},
			{&events.InboxSpliced{Message: m}, inbox.Hold, "m1"},
			{&events.TurnEnd{Turn: "t2"}, inbox.Release, ""},
		},
		"released, then claimed again after a restart": {
			{&events.InboxSpliced{Message: m}, inbox.Hold, "m1"},
			{&events.InboxClaimed{MessageID: "m1"}, inbox.Unchanged, "m1"},
			{&events.TurnEnd{Turn: "t1"}, inbox.Release, ""},
			{&events.InboxClaimed{MessageID: "m1"}, inbox.Restore, "m1"},
			{&events.UserMessage{Message: m}, inbox.Release, ""},
			{&events.InboxClaimed{MessageID: "m1"}, inbox.Restore, "m1"},
		},
		"another reply of the call admitted": {
			{&events.InboxSpliced{Message: m}, inbox.Hold, "m1"},
			{&events.UserMessage{Message: other}, inbox.Release, ""},
		},
		"a later splice of the call holds": {
			{&events.InboxSpliced{Message: m}, inbox.Hold, "m1"},
			{&events.InboxSpliced{Message: other}, inbox.Hold, "m2"},
		},
		"other messages change nothing": {
			{&events.InboxSpliced{Message: m}, inbox.Hold, "m1"},
			{&events.InboxSpliced{Message: otherCall}, inbox.Unchanged, "m1"},
			{&events.InboxSpliced{Message: ordinary}, inbox.Unchanged, "m1"},
			{&events.InboxClaimed{MessageID: "m2"}, inbox.Unchanged, "m1"},
			{&events.InboxDiscarded{MessageID: "m2"}, inbox.Unchanged, "m1"},
			{&events.UserMessage{Message: ordinary}, inbox.Unchanged, "m1"},
			{&events.UserMessage{Message: otherCall}, inbox.Unchanged, "m1"},
			{&events.StepEnd{Turn: "t1"}, inbox.Unchanged, "m1"},
		},
		"a claim of a message never released restores nothing": {
			{&events.InboxClaimed{MessageID: "m1"}, inbox.Unchanged, ""},
			{&events.InboxDiscarded{MessageID: "m1"}, inbox.Unchanged, ""},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var l inbox.Logged
			for i, s := range steps {
				var got inbox.Transition
				l, got = fold(l, "c1", at(uint64(i+1), s.body))
				require.Equal(t, s.want, got, "step %d", i)
				require.Equal(t, s.held, l.Held, "step %d", i)
			}
		})
	}
}

// D6, D8: REPLY_QUEUED is decided from both halves read together: the
// reply the caught-up log holds, else the reply the reply subject holds
// unless the log already released that very reply; an admitted call
// holds nothing. A free call's reply expects the subject's last message.
func TestD8CheckReadsTheLogAndTheReplySubjectTogether(t *testing.T) {
	reply := func(seq uint64, id string) inbox.Last { return inbox.Last{Seq: seq, MessageID: id} }
	marker := func(seq uint64, m inbox.Marker, id string) inbox.Last {
		return inbox.Last{Seq: seq, MessageID: id, Marker: m}
	}
	for name, c := range map[string]struct {
		logged inbox.Logged
		last   inbox.Last
		holder string // "" free
	}{
		"nothing yet":                       {inbox.Logged{}, inbox.Last{}, ""},
		"queued, not spliced":               {inbox.Logged{}, reply(4, "m1"), "m1"},
		"spliced":                           {inbox.Logged{Held: "m1"}, reply(4, "m1"), "m1"},
		"released and marked":               {inbox.Logged{Released: "m1"}, marker(5, inbox.Released, "m1"), ""},
		"released, marker not written yet":  {inbox.Logged{Released: "m1"}, reply(4, "m1"), ""},
		"restored and marked":               {inbox.Logged{Held: "m1"}, marker(6, inbox.Restored, "m1"), "m1"},
		"restored, marker not written yet":  {inbox.Logged{Held: "m1"}, marker(5, inbox.Released, "m1"), "m1"},
		"released again after a restore":    {inbox.Logged{Released: "m1"}, marker(6, inbox.Restored, "m1"), ""},
		"an older reply released, new one":  {inbox.Logged{Released: "m1"}, reply(6, "m2"), "m2"},
		"admitted, marker not written yet":  {inbox.Logged{Admitted: true}, reply(4, "m1"), ""},
		"a marker this version cannot read": {inbox.Logged{}, marker(7, "expired", "m1"), "m1"},
	} {
		t.Run(name, func(t *testing.T) {
			expect, err := inbox.Check("c1", c.logged, c.last)
			if c.holder == "" {
				require.NoError(t, err)
				require.Equal(t, c.last.Seq, expect, "the reply must find the subject as it was read")
				return
			}
			require.Equal(t, holdover.CodeReplyQueued, holdover.CodeOf(err), "%v", err)
			require.ErrorContains(t, err, "message "+c.holder)
		})
	}
}
