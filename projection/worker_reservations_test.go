package projection_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/streams"
)

// queue publishes the late reply messageID to callID of sid on its reply
// subject, as the late answer does.
func (e *workerEnv) queue(t *testing.T, sid, callID, messageID string) {
	t.Helper()
	ctx := context.Background()
	last, err := e.replies.Last(ctx, sid, callID)
	require.NoError(t, err)
	_, err = e.replies.Queue(ctx, sid, callID, replyMessage(messageID, callID, bothAnswered), last.Seq)
	require.NoError(t, err)
}

func (e *workerEnv) lastReply(t *testing.T, sid, callID string) inbox.Last {
	t.Helper()
	l, err := e.replies.Last(context.Background(), sid, callID)
	require.NoError(t, err)
	return l
}

// replySubjectCount is how many messages the reply subject of callID holds.
func (e *workerEnv) replySubjectCount(t *testing.T, sid, callID string) uint64 {
	t.Helper()
	subject, err := streams.ReplySubject(sid, callID)
	require.NoError(t, err)
	info, err := e.Topology.Sessions.Info(context.Background(), jetstream.WithSubjectFilter(subject))
	require.NoError(t, err)
	return info.State.Subjects[subject]
}

// D8: the worker marks on each call's reply subject what the events it
// folds did to the call's reply before it writes the View: by the time a
// View is visible, its releases and restores are on the reply subjects.
// A reply not spliced yet outlives a Turn end; admission releases it.
func TestWorkerMarksReservationsBeforeTheView_D8(t *testing.T) {
	e := newWorkerEnv(t)
	e.run(t, projection.WorkerConfig{})
	e.append(t, "s1", timedHeader(), ask("c1"), ask("c2"), ask("c3"), ask("c4"),
		pending("c1"), pending("c2"), pending("c3"), pending("c4"))
	for _, c := range []string{"c1", "c2", "c3", "c4"} {
		e.queue(t, "s1", c, "m-"+c)
	}
	e.append(t, "s1", spliced("m-c1", "c1", bothAnswered), spliced("m-c2", "c2", bothAnswered), spliced("m-c3", "c3", bothAnswered),
		&events.InboxDiscarded{MessageID: "m-c1"})
	folded := e.lastSeq("s1")
	e.waitFolded(t, "s1", folded)
	released := e.lastReply(t, "s1", "c1")
	assert.Equal(t, inbox.Last{Seq: released.Seq, MessageID: "m-c1", Marker: inbox.Released, SessionSeq: folded}, released)
	for _, c := range []string{"c2", "c3", "c4"} {
		assert.Equal(t, "m-"+c, e.lastReply(t, "s1", c).Holder(), "%s: spliced or queued, still held", c)
	}

	e.append(t, "s1", &events.InboxClaimed{MessageID: "m-c2"}, &events.TurnEnd{Turn: "t1"})
	e.waitFolded(t, "s1", e.lastSeq("s1"))
	assert.Equal(t, inbox.Released, e.lastReply(t, "s1", "c2").Marker, "the Turn ended without admitting it")
	assert.Equal(t, inbox.Released, e.lastReply(t, "s1", "c3").Marker)
	assert.Equal(t, "m-c4", e.lastReply(t, "s1", "c4").Holder(), "never spliced: in no Turn yet")
	assert.Equal(t, uint64(2), e.replySubjectCount(t, "s1", "c1"), "a later fold marks c1 no more")

	// The restarted agent claims the released reply again, and admits it.
	e.append(t, "s1", &events.InboxClaimed{MessageID: "m-c2"})
	e.waitFolded(t, "s1", e.lastSeq("s1"))
	restored := e.lastReply(t, "s1", "c2")
	assert.Equal(t, inbox.Restored, restored.Marker)
	assert.Equal(t, "m-c2", restored.Holder())
	e.append(t, "s1", admitted("m-c2", "c2", bothAnswered), admitted("m-c4", "c4", bothAnswered))
	v := storedView(t, e.waitFolded(t, "s1", e.lastSeq("s1")))
	assert.Equal(t, []string{"c1", "c3"}, activeIDs(v))
	assert.Equal(t, inbox.Released, e.lastReply(t, "s1", "c2").Marker)
	assert.Equal(t, inbox.Released, e.lastReply(t, "s1", "c4").Marker, "admitted without a splice: released all the same")
	assert.Equal(t, float64(5), value(e.metrics.ReservationMarkers.WithLabelValues(string(inbox.Released))))
	assert.Equal(t, float64(1), value(e.metrics.ReservationMarkers.WithLabelValues(string(inbox.Restored))))
	assert.Equal(t, projection.Fold(e.written["s1"]), v)
}

// D8: a fold whose markers were written but whose View write failed is
// folded again from the stored View; the markers it owes are on the
// reply subject already, so none is written twice.
func TestWorkerMarksOnceWhenTheViewWriteFails_D8(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := context.Background()
	e.run(t, projection.WorkerConfig{RetryDelay: 20 * time.Millisecond})
	e.append(t, "s1", timedHeader(), ask("c1"), pending("c1"))
	e.queue(t, "s1", "c1", "m1")
	e.append(t, "s1", spliced("m1", "c1", bothAnswered))
	e.waitFolded(t, "s1", e.lastSeq("s1"))

	// The bucket goes away: every View write fails from here on.
	require.NoError(t, e.JS.DeleteKeyValue(ctx, streams.QuestionsBucket))
	e.append(t, "s1", &events.InboxDiscarded{MessageID: "m1"})
	require.Eventually(t, func() bool { return e.lastReply(t, "s1", "c1").Marker == inbox.Released }, 10*time.Second, 5*time.Millisecond,
		"the release is marked before the View write that fails")
	require.Eventually(t, func() bool { return value(e.metrics.Errors.WithLabelValues("projection", "INTERNAL")) >= 2 }, 10*time.Second, 5*time.Millisecond,
		"the fold is retried")

	top, err := streams.Provision(ctx, e.JS, streams.Config{Memory: true})
	require.NoError(t, err)
	v := storedView(t, watchFolded(t, top.Questions, "s1", e.lastSeq("s1")))
	assert.Equal(t, projection.Fold(e.written["s1"]), v)
	assert.Equal(t, uint64(2), e.replySubjectCount(t, "s1", "c1"), "the reply and one release")
	assert.Equal(t, float64(1), value(e.metrics.ReservationMarkers.WithLabelValues(string(inbox.Released))))
}
