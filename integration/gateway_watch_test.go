package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/gateway"
	"github.com/holdover-dev/holdover/projection"
)

// gwAppend appends n turn/start events to Session sid and returns their seqs.
func (w *gwWorld) gwAppend(sid string, n int) []uint64 {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fgPatience)
	defer cancel()
	last, err := w.sessions.Last(ctx, sid)
	require.NoError(w.t, err)
	var seqs []uint64
	for i := range n {
		e := events.New(time.Now().UTC(), &events.TurnStart{Turn: fmt.Sprintf("t%d", i)})
		last, err = w.sessions.Append(ctx, sid, last, e)
		require.NoError(w.t, err)
		seqs = append(seqs, last)
	}
	return seqs
}

// seqsOf collects the seqs of watch id's events frames until it has n.
func (c *gwClient) seqsOf(id string, n int) []uint64 {
	c.t.Helper()
	var seqs []uint64
	for len(seqs) < n {
		f := c.take(fmt.Sprintf("events of %s (have %d of %d)", id, len(seqs), n), gwTypeID("events", id))
		for _, e := range f.Events {
			seqs = append(seqs, e.Seq)
		}
	}
	return seqs
}

// A watch delivers the Session's events from the asked seq on, in order,
// each once, then the new ones as they are appended; each event as the log
// records it.
func TestGatewayWatchDeliversEventsFromASeq(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	w.gwAppend("s2", 2) // another Session's events never show
	seqs := w.gwAppend("s1", 5)

	c := w.dial(gwTokenAna)
	c.welcome()
	c.send(map[string]any{"type": "watch", "id": "w1", "session": "s1", "fromSeq": seqs[2]})
	assert.Equal(t, seqs[2:], c.seqsOf("w1", 3))

	more := w.gwAppend("s1", 3)
	got := c.take("a live events frame", gwTypeID("events", "w1"))
	assert.Equal(t, more[0], got.Events[0].Seq)
	assert.Equal(t, "turn/start", got.Events[0].Type)
	assert.JSONEq(t, `{"turn":"t0"}`, string(got.Events[0].Data))
	assert.False(t, got.Events[0].At.IsZero())
	rest := []uint64{}
	for _, e := range got.Events {
		rest = append(rest, e.Seq)
	}
	rest = append(rest, c.seqsOf("w1", len(more)-len(rest))...)
	assert.Equal(t, more, rest)

	// fromSeq 0 (or missing) is the whole log.
	c.send(map[string]any{"type": "watch", "id": "w2", "session": "s1"})
	assert.Equal(t, append(seqs, more...), c.seqsOf("w2", 8))
}

// The projection comes with the watch and again whenever it changes; a
// watch that joins later gets the latest one at once.
func TestGatewayWatchDeliversProjectionUpdates(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	ctx := context.Background()
	put := func(v projection.View) {
		data, err := json.MarshalIndent(v, "", "  ") // as the projection worker stores it
		require.NoError(t, err)
		_, err = w.env.Topology.Questions.Put(ctx, "s1", data)
		require.NoError(t, err)
	}
	put(projection.View{LastSeq: 3, Timed: true})

	c := w.dial(gwTokenAna)
	c.welcome()
	c.send(map[string]any{"type": "watch", "id": "w1", "session": "s1", "fromSeq": 1})
	first := c.take("the first view", gwTypeID("view", "w1"))
	assert.Equal(t, "s1", first.Session)
	assert.JSONEq(t, `{"active":[],"settled":[],"timed":true,"lastSeq":3}`, string(first.View))
	assert.NotContains(t, string(first.View), "\n", "views travel compact")

	put(projection.View{LastSeq: 4, Timed: true, Active: []projection.Call{{CallID: "call-1", Status: projection.Continued, Seq: 4, Questions: fgQuestions}}})
	second := c.take("the changed view", gwTypeID("view", "w1"))
	var v projection.View
	require.NoError(t, json.Unmarshal(second.View, &v))
	assert.Equal(t, uint64(4), v.LastSeq)
	require.Len(t, v.Active, 1)
	assert.Equal(t, "call-1", v.Active[0].CallID)

	later := w.dial(gwTokenAna)
	later.welcome()
	later.send(map[string]any{"type": "watch", "id": "w9", "session": "s1", "fromSeq": 1})
	latest := later.take("the latest view", gwTypeID("view", "w9"))
	assert.JSONEq(t, string(second.View), string(latest.View))
}

// Watches join while events are being appended: each gets every event from
// its fromSeq on exactly once and in order, however its log read and the
// live feed interleave.
func TestGatewayWatchesJoiningDuringAppendsMissNothing(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	const batches, perBatch = 24, 10

	type joined struct {
		c    *gwClient
		from uint64
	}
	var (
		all  []joined
		seqs []uint64
	)
	// Each watch joins right after a batch, and the next batch is appended
	// at once, while the watch is still reading the log: half of them from
	// the start of the log, half from the middle of what is there.
	for b := range batches {
		seqs = append(seqs, w.gwAppend("s1", perBatch)...)
		if b%2 == 1 {
			continue
		}
		from := uint64(1)
		if b%4 == 2 {
			from = seqs[len(seqs)/2]
		}
		c := w.dial(gwTokenAna)
		c.send(map[string]any{"type": "watch", "id": "w", "session": "s1", "fromSeq": from})
		all = append(all, joined{c: c, from: from})
	}

	for _, j := range all {
		var want []uint64
		for _, s := range seqs {
			if s >= j.from {
				want = append(want, s)
			}
		}
		assert.Equal(t, want, j.c.seqsOf("w", len(want)), "watch from %d", j.from)
	}
}

// Two watches of one Session on one connection each get the events, and
// the Session's requests reach the connection once.
func TestGatewayTwoWatchesOfOneSessionOnOneConnection(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	seqs := w.gwAppend("s1", 2)
	c := w.dial(gwTokenAna)
	c.welcome()
	c.send(map[string]any{"type": "watch", "id": "w1", "session": "s1", "fromSeq": 1})
	c.send(map[string]any{"type": "watch", "id": "w2", "session": "s1", "fromSeq": 1})
	assert.Equal(t, seqs, c.seqsOf("w1", 2))
	assert.Equal(t, seqs, c.seqsOf("w2", 2))

	done := w.askTimed(context.Background(), w.agent, fgTimed("s1", "call-1", w.live("s1"), 5000))
	req := c.take("the request", gwType("request"))
	c.alive("c1")
	_, twice := c.find(gwType("request"))
	assert.False(t, twice, "one request per connection, however many watches")

	// Unwatching one keeps the request; unwatching both passes it on.
	c.send(map[string]any{"type": "unwatch", "id": "w1"})
	c.settle(req.ID, fgAnswer("no"))
	r := fgWait(t, done)
	require.NoError(t, r.err)
	assert.Equal(t, fgAnswer("no"), r.out.Answers)
}

// A watch tells the Client when it is live with one ready frame, after the
// history and the projection: before it, the page is still loading; after
// it, everything new arrives as it happens (docs/protocol.md, "Watching a
// Session").
func TestGatewayWatchIsReadyAfterHistoryAndView(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	seqs := w.gwAppend("s1", 300) // more than one history frame
	data, err := json.Marshal(projection.View{LastSeq: seqs[len(seqs)-1]})
	require.NoError(t, err)
	_, err = w.env.Topology.Questions.Put(context.Background(), "s1", data)
	require.NoError(t, err)

	c := w.dial(gwTokenAna)
	c.welcome()
	c.watchLive("w1", "s1")
	// Everything the ready frame follows has arrived before it.
	assert.Equal(t, seqs, c.seqsOf("w1", len(seqs)))
	c.take("the view", gwTypeID("view", "w1"))
	order := typesOf(c.framesSnapshot(), "w1")
	assert.Equal(t, "ready", order[len(order)-1], "ready is the last frame of the catch-up: %v", order)
	assert.Equal(t, 1, countOf(order, "ready"))

	more := w.gwAppend("s1", 1)
	assert.Equal(t, more, c.seqsOf("w1", 1))
	assert.Equal(t, 1, countOf(typesOf(c.framesSnapshot(), "w1"), "ready"), "a watch is ready once")
}

// A Session with no projection entry yet (no question events folded) gets
// a null view, so the Client shows an empty, working page; the first
// projection write then arrives as usual (C1).
func TestGatewayWatchOfASessionWithoutProjectionGetsANullView(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	w.gwAppend("s1", 2)

	c := w.dial(gwTokenAna)
	c.welcome()
	c.watchLive("w1", "s1")
	first := c.take("the absent view", gwTypeID("view", "w1"))
	assert.Equal(t, "null", string(first.View))

	data, err := json.Marshal(projection.View{LastSeq: 3, Active: []projection.Call{{CallID: "call-1", Status: projection.Open, Seq: 3, Questions: fgQuestions}}})
	require.NoError(t, err)
	_, err = w.env.Topology.Questions.Put(context.Background(), "s1", data)
	require.NoError(t, err)
	second := c.take("the first projection", gwTypeID("view", "w1"))
	var v projection.View
	require.NoError(t, json.Unmarshal(second.View, &v))
	require.Len(t, v.Active, 1)
	assert.Equal(t, "call-1", v.Active[0].CallID)
}

func typesOf(frames []gwFrame, id string) []string {
	var out []string
	for _, f := range frames {
		if f.ID == id {
			out = append(out, f.Type)
		}
	}
	return out
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// A projection value that is not JSON (an operator's hand edit) is passed
// over: the watch still becomes ready, with no view, and the next good
// write arrives as usual.
func TestGatewayWatchPassesOverAProjectionThatIsNotJSON(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	ctx := context.Background()
	_, err := w.env.Topology.Questions.Put(ctx, "s1", []byte("{not json"))
	require.NoError(t, err)

	c := w.dial(gwTokenAna)
	c.welcome()
	c.watchLive("w1", "s1")
	assert.Equal(t, "null", string(c.take("the absent view", gwTypeID("view", "w1")).View))

	data, err := json.Marshal(projection.View{LastSeq: 2})
	require.NoError(t, err)
	_, err = w.env.Topology.Questions.Put(ctx, "s1", data)
	require.NoError(t, err)
	assert.JSONEq(t, `{"active":[],"settled":[],"timed":false,"lastSeq":2}`, string(c.take("the good view", gwTypeID("view", "w1")).View))
}

// A protocol 2 Client may get several frames in one message, a protocol 1
// Client never: each watch of either still gets every event once and in
// order. Twenty watches of one Session on one connection make each append
// twenty frames at once, the burst a writer batches (docs/protocol.md).
func TestGatewayBatchesFramesForProtocol2Only(t *testing.T) {
	t.Parallel()
	const watches, appends = 20, 50
	// Room for the whole burst: what is measured is how frames are sent,
	// not the slow-Client policy, which a protocol 1 writer on a loaded
	// machine would otherwise meet.
	w := newGWWorld(t, gateway.Limits{SendQueue: watches * appends})
	clients := map[int]*gwClient{}
	for _, protocol := range []int{1, 2} {
		c := w.dialRaw(w.url + "?token=" + gwTokenAna)
		c.send(map[string]any{"type": "hello", "protocol": protocol, "client": "test"})
		c.welcome()
		for i := range watches {
			id := fmt.Sprintf("w%d", i)
			c.send(map[string]any{"type": "watch", "id": id, "session": "s1"})
			c.take("ready of "+id, gwTypeID("ready", id))
		}
		clients[protocol] = c
	}
	seqs := w.gwAppend("s1", appends)
	for protocol, c := range clients {
		for i := range watches {
			id := fmt.Sprintf("w%d", i)
			assert.Equal(t, seqs, c.seqsOf(id, appends), "protocol %d, watch %s", protocol, id)
		}
	}
	v1 := clients[1]
	v1.mu.Lock()
	assert.Zero(t, v1.batches, "a protocol 1 Client gets one frame per message")
	assert.Equal(t, len(v1.frames), v1.messages)
	v1.mu.Unlock()
	v2 := clients[2]
	v2.mu.Lock()
	t.Logf("protocol 2: %d frames in %d messages, %d of them batches", len(v2.frames), v2.messages, v2.batches)
	v2.mu.Unlock()
}
