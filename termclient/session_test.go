package termclient

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/projection"
)

// C1, C2, C3: one entry per call, the projection's joined with the latest
// live request of the call; requests the projection does not list yet
// follow, then unkeyed ones. A continued call answers through the RPC, a
// live request with no outcome from here through the waterfall.
func TestEntriesJoinTheViewWithTheLiveRequests(t *testing.T) {
	qs := []holdover.Question{{ID: "q", Question: "Why?"}}
	s := &Session{changed: make(chan struct{}), view: projection.View{Active: []projection.Call{
		{CallID: "c1", Status: projection.Open, Questions: qs, Seq: 3},
		{CallID: "c0", Status: projection.Continued, Questions: qs, Seq: 2},
		{CallID: "c2", Status: projection.Open, Questions: qs, Seq: 4},
	}, LastSeq: 4}}
	req := func(id, callID string) *Request {
		return &Request{s: s, ID: id, CallID: callID, Timed: callID != "", Questions: qs, ended: make(chan struct{})}
	}
	old, again, early, unkeyed := req("r1", "c1"), req("r2", "c1"), req("r3", "c9"), req("r4", "")
	for _, r := range []*Request{old, again, early, unkeyed} {
		s.addRequest(r)
	}

	entries := s.Entries()
	assert.Equal(t, []Entry{
		{CallID: "c1", Call: &s.view.Active[0], Request: again},
		{CallID: "c0", Call: &s.view.Active[1]},
		{CallID: "c2", Call: &s.view.Active[2]},
		{CallID: "c9", Request: early},
		{Request: unkeyed},
	}, entries)
	channels := make([]Channel, len(entries))
	for i, e := range entries {
		channels[i] = e.Channel()
	}
	assert.Equal(t, []Channel{ChannelWaterfall, ChannelRPC, ChannelNone, ChannelWaterfall, ChannelWaterfall}, channels)
	assert.Equal(t, "open · waiting for your answer", statusOf(entries[0]))
	assert.Equal(t, "continued · work continued, answer still available", statusOf(entries[1]))
	assert.Equal(t, "open · not connected to this Client", statusOf(entries[2]))
	assert.Equal(t, "open · waiting for your answer, no time limit", statusOf(entries[4]))

	// This Client's outcome takes the waterfall away until the worker or
	// the projection says what happened (C4).
	again.outcome = "settle"
	e, ok := s.Entry("c1")
	assert.True(t, ok)
	assert.Equal(t, ChannelNone, e.Channel())
	assert.Equal(t, "open · answer sent", statusOf(e))

	// A view never replaces a newer one.
	s.onView([]byte(`{"active":[],"settled":[],"lastSeq":3}`))
	assert.Len(t, s.View().Active, 3)
}
