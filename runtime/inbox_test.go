package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/model"
	"github.com/holdover-dev/holdover/runtime/runtimetest"
)

// A queued message can be discarded before its step claims it, through
// the agent's NATS endpoint; it is then never admitted (D8, P5).
func TestDiscardDropsAQueuedMessage(t *testing.T) {
	h := start(t, "work 1 of 10s\nsay Done.")
	h.run("s1")
	h.steer("s1", "start")
	h.AwaitCount("s1", events.TypeToolCall, 1)
	require.NoError(t, h.clock.BlockUntilContext(h.ctx, 1))
	queued := h.steer("s1", "never mind")
	h.AwaitCount("s1", events.TypeInboxSpliced, 2)

	// The same request, replayed by JetStream (no reply) or replying into
	// a stream (another Session's reply subject), is refused unanswered
	// and discards nothing: the request from an inbox that follows does.
	subject, err := runtime.DiscardSubject("s1")
	require.NoError(t, err)
	spy, err := h.env.Conn.SubscribeSync("holdover.session.s2.inbox.call_1")
	require.NoError(t, err)
	req := fmt.Appendf(nil, `{"messageId":%q}`, queued)
	require.NoError(t, h.env.Conn.Publish(subject, req))
	require.NoError(t, h.env.Conn.PublishRequest(subject, "holdover.session.s2.inbox.call_1", req))
	require.Eventually(t, func() bool { return counter(t, h.metrics.RefusedOrigin, runtime.DiscardEndpoint) == 2 }, patience, 10*time.Millisecond)
	_, err = spy.NextMsg(100 * time.Millisecond)
	require.ErrorIs(t, err, nats.ErrTimeout, "the agent answered into a stream's subject")

	require.NoError(t, runtime.Discard(h.ctx, h.env.Conn, "s1", queued, "the user took it back"))
	evts := h.Events("s1")
	discarded := runtimetest.Last[*events.InboxDiscarded](t, evts)
	require.Equal(t, queued, discarded.MessageID)
	require.Equal(t, "the user took it back", discarded.Reason)

	err = runtime.Discard(h.ctx, h.env.Conn, "s1", queued, "")
	require.Equal(t, holdover.CodeConflict, holdover.CodeOf(err), "a message is discarded once")
	err = runtime.Discard(h.ctx, h.env.Conn, "s1", "no-such-message", "")
	require.Equal(t, holdover.CodeNotFound, holdover.CodeOf(err))
	err = runtime.Discard(h.ctx, h.env.Conn, "nobody-runs-this", "m", "")
	require.Equal(t, holdover.CodeInternal, holdover.CodeOf(err))
	require.Contains(t, err.Error(), "no running agent")

	h.clock.Advance(10 * time.Second)
	evts = h.AwaitCount("s1", events.TypeTurnEnd, 1)
	require.Equal(t, 1, runtimetest.Count(evts, events.TypeUserMessage), "the discarded message was never admitted")
	require.Equal(t, []string{"start"}, texts(h.model.Last(), model.User))
	err = runtime.Discard(h.ctx, h.env.Conn, "s1", evts[0].Body.(*events.InboxSpliced).Message.ID, "")
	require.Equal(t, holdover.CodeConflict, holdover.CodeOf(err), "an admitted message cannot be discarded")
}

// failing is a model whose requests wait for release and then fail, as a
// provider outage would.
type failing struct{ release chan struct{} }

func (failing) Name() string { return "failing" }
func (f failing) Complete(ctx context.Context, _ model.Request) (model.Response, error) {
	<-f.release
	return model.Response{}, holdover.New(holdover.CodeInternal, "the provider is down")
}

// A Turn that ends without admitting a queued message discards it, so its
// reservation is released and the user can answer again (D8).
func TestTurnThatEndsDiscardsWhatItDidNotAdmit(t *testing.T) {
	f := failing{release: make(chan struct{})}
	h := start(t, "", func(cfg *runtime.Config) { cfg.Model = f })
	h.run("s1")
	h.steer("s1", "one")
	h.AwaitCount("s1", events.TypeRequestHeader, 1)
	queued := h.steer("s1", "two")
	h.AwaitCount("s1", events.TypeInboxSpliced, 2)
	close(f.release)

	evts := h.AwaitCount("s1", events.TypeTurnEnd, 1)
	n := len(evts)
	require.Equal(t, []events.Type{events.TypeInboxDiscarded, events.TypeTurnEnd}, runtimetest.Types(evts[n-2:]), runtimetest.Describe(evts))
	require.Equal(t, queued, evts[n-2].Body.(*events.InboxDiscarded).MessageID)
	require.Contains(t, evts[n-1].Body.(*events.TurnEnd).Reason, "the provider is down")
}

// D8: the agent reads late replies from their calls' reply subjects as
// well as ordinary messages from its Session's inbox subject, in the order
// they were queued, and passes over the reservation markers the question
// worker writes there: a marker is never spliced or admitted.
func TestInboxReadsReplySubjectsAndPassesOverMarkers(t *testing.T) {
	h := start(t, "say Noted.\nsay Noted again.")
	replies := inbox.NewReplies(h.env.JS, h.env.Topology.Sessions, nil)
	qs := []holdover.Question{{ID: "q1", Question: "Which?"}}
	reply, err := events.NewReply("reply-1", "call-1", qs, []holdover.Answer{{ID: "q1", Selected: []string{}}})
	require.NoError(t, err)
	_, err = replies.Queue(h.ctx, "s1", "call-1", reply, 0)
	require.NoError(t, err)
	marked, err := replies.Release(h.ctx, "s1", "call-1", "reply-1", 0)
	require.NoError(t, err)
	require.True(t, marked)
	later := h.steer("s1", "and then")

	h.run("s1")
	evts := h.Await("s1", "both messages admitted", func(evts []events.Event) bool {
		return runtimetest.Count(evts, events.TypeUserMessage) == 2
	})
	var spliced []string
	for _, e := range evts {
		if b, ok := e.Body.(*events.InboxSpliced); ok {
			spliced = append(spliced, b.Message.ID)
		}
	}
	require.Equal(t, []string{"reply-1", later}, spliced, runtimetest.Describe(evts))
}

// A message the inbox holds is discarded even before the agent's reader
// has delivered it (issue 20): the agent splices it then and there, with
// whatever came before it, rather than answer NOT_FOUND for a reply that
// exists and holds its call. Each message here is discarded the moment it
// is stored, racing the reader; whichever wins, it is discarded once and
// never admitted.
func TestDiscardTakesAMessageTheReaderHasNotDelivered(t *testing.T) {
	h := start(t, "work 1 of 10s\nsay Done.")
	h.run("s1")
	h.steer("s1", "start")
	h.AwaitCount("s1", events.TypeToolCall, 1)
	require.NoError(t, h.clock.BlockUntilContext(h.ctx, 1))
	const n = 20
	for i := range n {
		id := h.steer("s1", "never mind")
		require.NoError(t, runtime.Discard(h.ctx, h.env.Conn, "s1", id, "taken back"), "message %d", i)
	}
	evts := h.AwaitCount("s1", events.TypeInboxDiscarded, n)
	require.Equal(t, n+1, runtimetest.Count(evts, events.TypeInboxSpliced), "each message spliced once")

	h.clock.Advance(10 * time.Second)
	evts = h.AwaitCount("s1", events.TypeTurnEnd, 1)
	require.Equal(t, 1, runtimetest.Count(evts, events.TypeUserMessage), "no discarded message was admitted")
}
