package inbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/streams"
)

// replyRig is a real server with the topology and the replies of its
// SESSIONS stream.
type replyRig struct {
	env     *embeddedtest.Env
	replies *inbox.Replies
	ctx     context.Context
}

func newReplyRig(t *testing.T) *replyRig {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &replyRig{env: env, replies: inbox.NewReplies(env.JS, env.Topology.Sessions, nil), ctx: ctx}
}

func (r *replyRig) last(t *testing.T, sid, callID string) inbox.Last {
	t.Helper()
	l, err := r.replies.Last(r.ctx, sid, callID)
	require.NoError(t, err)
	return l
}

// D6, D8: the reply's publish is the reservation: of 100 replies to one
// call sent at once, each expecting the empty subject, exactly one is
// stored and the others lose the compare-and-set.
func TestD8QueueIsTheReservation(t *testing.T) {
	r := newReplyRig(t)
	const n = 100
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = r.replies.Queue(r.ctx, "s1", "c1", reply(t, "m"+string(rune('A'+i)), "c1"), 0)
		})
	}
	wg.Wait()
	stored := 0
	for _, err := range errs {
		if err == nil {
			stored++
			continue
		}
		require.Equal(t, holdover.CodeConflict, holdover.CodeOf(err), "%v", err)
		require.True(t, streams.IsConflict(err), "the cause is kept")
	}
	require.Equal(t, 1, stored)
	subject, err := streams.ReplySubject("s1", "c1")
	require.NoError(t, err)
	info, err := r.env.Topology.Sessions.Info(r.ctx, jetstream.WithSubjectFilter(subject))
	require.NoError(t, err)
	require.Equal(t, uint64(1), info.State.Subjects[subject])

	l := r.last(t, "s1", "c1")
	require.Equal(t, inbox.Marker(""), l.Marker)
	require.Equal(t, l.MessageID, l.Holder())
}

// A reply whose acknowledgement was lost meets itself when it is sent
// again: the retry fails the compare-and-set, and the subject's last
// message names it, so the sender can tell it was stored once.
func TestQueueRetryFindsItsOwnReply(t *testing.T) {
	r := newReplyRig(t)
	m := reply(t, "m1", "c1")
	seq, err := r.replies.Queue(r.ctx, "s1", "c1", m, 0)
	require.NoError(t, err)
	_, err = r.replies.Queue(r.ctx, "s1", "c1", m, 0)
	require.Equal(t, holdover.CodeConflict, holdover.CodeOf(err))
	require.Equal(t, inbox.Last{Seq: seq, MessageID: "m1"}, r.last(t, "s1", "c1"))
}

// D8: the markers are idempotent, so a fold that is delivered again
// writes nothing twice: a release marks only the reply that holds the
// call, a restore only a call nothing holds.
func TestD8MarkersAreIdempotent(t *testing.T) {
	r := newReplyRig(t)
	_, err := r.replies.Queue(r.ctx, "s1", "c1", reply(t, "m1", "c1"), 0)
	require.NoError(t, err)

	mark(t, false, "m2 does not hold the call")(r.replies.Release(r.ctx, "s1", "c1", "m2", 7))
	mark(t, false, "m1 holds it already")(r.replies.Restore(r.ctx, "s1", "c1", "m1", 7))

	mark(t, true, "m1 released")(r.replies.Release(r.ctx, "s1", "c1", "m1", 8))
	released := r.last(t, "s1", "c1")
	require.Equal(t, inbox.Released, released.Marker)
	require.Equal(t, "m1", released.MessageID)
	require.Equal(t, uint64(8), released.SessionSeq)
	require.Empty(t, released.Holder())
	mark(t, false, "released once")(r.replies.Release(r.ctx, "s1", "c1", "m1", 8))
	require.Equal(t, released, r.last(t, "s1", "c1"))

	mark(t, true, "m1 restored")(r.replies.Restore(r.ctx, "s1", "c1", "m1", 9))
	restored := r.last(t, "s1", "c1")
	require.Equal(t, inbox.Restored, restored.Marker)
	require.Equal(t, "m1", restored.Holder())
	mark(t, false, "restored once")(r.replies.Restore(r.ctx, "s1", "c1", "m1", 9))
	mark(t, false, "a fold of an earlier seq moves nothing back")(r.replies.Release(r.ctx, "s1", "c1", "m1", 8))

	// An admission releases whichever reply holds the call.
	mark(t, true, "the holder released")(r.replies.Release(r.ctx, "s1", "c1", "", 10))
	require.Equal(t, inbox.Released, r.last(t, "s1", "c1").Marker)

	// A restore loses to a new reply published meanwhile: the new reply holds.
	_, err = r.replies.Queue(r.ctx, "s1", "c1", reply(t, "m2", "c1"), r.last(t, "s1", "c1").Seq)
	require.NoError(t, err)
	mark(t, false, "m2 holds the call")(r.replies.Restore(r.ctx, "s1", "c1", "m1", 11))
	require.Equal(t, "m2", r.last(t, "s1", "c1").Holder())
}

// mark checks what a marker write reported: whether it wrote, and no error.
func mark(t *testing.T, want bool, why string) func(bool, error) {
	return func(marked bool, err error) {
		t.Helper()
		require.NoError(t, err, why)
		require.Equal(t, want, marked, why)
	}
}

// D8: an inbox reader sees the replies of every call and the Session's
// ordinary messages in the order they were queued, and can tell the
// markers between them.
func TestReaderSeesRepliesMessagesAndMarkers(t *testing.T) {
	r := newReplyRig(t)
	_, err := r.replies.Queue(r.ctx, "s1", "c1", reply(t, "m1", "c1"), 0)
	require.NoError(t, err)
	_, err = r.replies.Release(r.ctx, "s1", "c1", "m1", 3)
	require.NoError(t, err)
	_, err = inbox.Publish(r.ctx, r.env.JS, "s1", reply(t, "u1", "c9"))
	require.NoError(t, err)
	_, err = r.replies.Queue(r.ctx, "s2", "c1", reply(t, "other", "c1"), 0)
	require.NoError(t, err)

	cons, err := inbox.Open(r.ctx, r.env.Topology.Sessions, "s1", 0)
	require.NoError(t, err)
	batch, err := cons.Fetch(4, jetstream.FetchMaxWait(500*time.Millisecond))
	require.NoError(t, err)
	var read []string
	for m := range batch.Messages() {
		if inbox.IsMarker(m.Headers()) {
			read = append(read, "marker")
			continue
		}
		q, err := inbox.DecodeMsg(m)
		require.NoError(t, err)
		read = append(read, q.Message.ID)
	}
	require.Equal(t, []string{"m1", "marker", "u1"}, read, "another Session's reply is not read")
}

// D7, D8: a release watch ends when the reply no longer holds its call:
// marked released, or replaced by a later reply; a restore of the same
// reply keeps it held.
func TestD8WatchReleaseEndsWithTheReply(t *testing.T) {
	r := newReplyRig(t)
	_, err := r.replies.Queue(r.ctx, "s1", "c1", reply(t, "m1", "c1"), 0)
	require.NoError(t, err)
	released, _, err := r.replies.WatchRelease(r.ctx, "s1", "c1", "m1")
	require.NoError(t, err)
	other, _, err := r.replies.WatchRelease(r.ctx, "s1", "c1", "m0")
	require.NoError(t, err)
	waitClosed(t, other, "a watch of a reply that does not hold the call")
	requireOpen(t, released)

	_, err = r.replies.Release(r.ctx, "s1", "c1", "m1", 5)
	require.NoError(t, err)
	waitClosed(t, released, "the released reply's watch")

	_, err = r.replies.Restore(r.ctx, "s1", "c1", "m1", 6)
	require.NoError(t, err)
	restored, _, err := r.replies.WatchRelease(r.ctx, "s1", "c1", "m1")
	require.NoError(t, err)
	_, err = r.replies.Queue(r.ctx, "s2", "c1", reply(t, "n1", "c1"), 0)
	require.NoError(t, err)
	elsewhere, _, err := r.replies.WatchRelease(r.ctx, "s2", "c1", "n1")
	require.NoError(t, err)
	requireOpen(t, restored)
	_, err = r.replies.Release(r.ctx, "s1", "c1", "m1", 7)
	require.NoError(t, err)
	_, err = r.replies.Queue(r.ctx, "s1", "c1", reply(t, "m2", "c1"), r.last(t, "s1", "c1").Seq)
	require.NoError(t, err)
	waitClosed(t, restored, "the restored reply's watch")
	requireOpen(t, elsewhere)
}

// D7, D8: a release published while the watching connection was cut off
// never arrives on its subscription; the Recheck run after the reconnect
// finds it.
func TestD8WatchReleaseRecheckFindsAMissedRelease(t *testing.T) {
	r := newReplyRig(t)
	_, err := r.replies.Queue(r.ctx, "s1", "c1", reply(t, "m1", "c1"), 0)
	require.NoError(t, err)
	proxy := embeddedtest.NewProxy(t, r.env.Server.ClientURL())
	reconnected := make(chan struct{}, 1)
	nc, js := embeddedtest.Connect(t, proxy.URL(), nats.ReconnectWait(20*time.Millisecond), nats.MaxReconnects(-1),
		nats.ReconnectHandler(func(*nats.Conn) { reconnected <- struct{}{} }))
	watching := inbox.NewReplies(js, r.env.Topology.Sessions, nil)
	released, _, err := watching.WatchRelease(r.ctx, "s1", "c1", "m1")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())

	proxy.Cut()
	_, err = r.replies.Release(r.ctx, "s1", "c1", "m1", 3)
	require.NoError(t, err)
	proxy.Heal()
	waitClosed(t, reconnected, "the reconnect")
	require.NoError(t, nc.Flush())
	requireOpen(t, released)

	watching.Recheck(r.ctx)
	waitClosed(t, released, "the rechecked watch")
}

func waitClosed[T any](t *testing.T, c <-chan T, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not end", what)
	}
}

// requireOpen checks that the watch c has not ended. The watches of one
// test share a connection, so once a later watch has ended on the same
// subject's last message, this one has had that message too.
func requireOpen(t *testing.T, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
		t.Fatal("the watch ended while its reply still holds the call")
	default:
	}
}
