package integration

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/projection/projectiontest"
	"github.com/holdover-dev/holdover/steer/steertest"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/worker"
)

// Fault tests of the late answer's one write (D6, D8): a process is
// SIGKILLed at the instant between two of its steps, found with a proxy
// that stops passing on what the process sends once a chosen publish has
// reached the server. Nothing it wrote is lost, and nothing is written
// twice when the work is picked up again.

// isReply says whether a publish is a late reply, not a marker, on the
// reply subject of callID of sid.
func isReply(sid, callID string) func(string, nats.Header) bool {
	subject, _ := streams.ReplySubject(sid, callID)
	return func(s string, h nats.Header) bool { return s == subject && !inbox.IsMarker(h) }
}

// D6, D8: a worker killed after its reply's publish reached the server and
// before its answer reached the client leaves exactly one reply queued:
// the client, whose call failed, answers again through another worker and
// is told REPLY_QUEUED; the agent admits the one reply, which settles the
// call.
//
// Both ways: a worker that reads before it writes, and one that keeps the
// Views of its own projection worker and answers with the one write
// fenced on the whole Session.
func TestFaultWorkerKilledBetweenTheReplyAndItsAnswer(t *testing.T) {
	t.Parallel()
	t.Run("reading", func(t *testing.T) { t.Parallel(); workerKilledBetweenTheReplyAndItsAnswer(t, false) })
	t.Run("one write", func(t *testing.T) { t.Parallel(); workerKilledBetweenTheReplyAndItsAnswer(t, true) })
}

func workerKilledBetweenTheReplyAndItsAnswer(t *testing.T, keep bool) {
	w := newAnswerWorld(t)
	qs := steertest.Questions("q1")
	s := steertest.NewSession(t, w.log, "killed")
	s.Continued("call-1", qs)
	proxy := embeddedtest.NewProxy(t, w.env.Server.ClientURL())
	held := proxy.HoldAfter(isReply("killed", "call-1"))
	victim := fgStart(t, fgProcBinary(t), "worker", "-nats", proxy.URL(), "-creds", w.creds(auth.Worker), fmt.Sprintf("-keep=%t", keep))
	if keep {
		projectiontest.Folded(t, w.env.Topology.Questions, "killed", s.Last()) // its projection worker wrote the View
	}

	answered := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := w.client().Answer(ctx, holdover.AnswerRequest{Session: "killed", CallID: "call-1", Answers: steertest.Choose(qs)})
		answered <- err
	}()
	waitClosed(t, held, "the reply's publish")
	victim.kill()
	require.Error(t, <-answered, "the client never heard back")

	queued := w.inboxOf("killed")
	require.Len(t, queued, 1, "the reply is durable")
	if keep {
		subject, _ := streams.ReplySubject("killed", "call-1")
		raw, err := w.env.Topology.Sessions.GetLastMsgForSubject(context.Background(), subject)
		require.NoError(t, err)
		require.Equal(t, "holdover.session.killed.>", raw.Header.Get(jetstream.ExpectedLastSubjSeqSubjHeader), "it was the one write")
	}
	w.worker()
	_, err := w.client().Answer(context.Background(), holdover.AnswerRequest{Session: "killed", CallID: "call-1", Answers: steertest.Skip(qs)})
	require.Equal(t, holdover.CodeReplyQueued, holdover.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, queued[0].Message.ID)

	s.Splice(queued[0].Message, queued[0].Seq)
	s.Claim(queued[0].Message.ID)
	s.Admit(queued[0].Message)
	res, err := w.client().Answer(context.Background(), holdover.AnswerRequest{Session: "killed", CallID: "call-1", Answers: steertest.Skip(qs)})
	require.NoError(t, err)
	require.False(t, res.Accepted, "settled by the one reply (D5)")
	require.Len(t, w.inboxOf("killed"), 1)
}

// D8: a projection worker killed after it marked a reply released and
// before it wrote the View that folds the release leaves the events
// unacknowledged; the worker that gets them again folds them from the
// stored View, finds the marker written, writes none twice, and stores
// the View. The call is answerable again throughout.
func TestFaultFolderKilledBetweenTheMarkerAndTheView(t *testing.T) {
	t.Parallel()
	const ackWait = time.Second
	w := newAnswerWorld(t)
	proxy := embeddedtest.NewProxy(t, w.env.Server.ClientURL())
	victim := fgStart(t, fgProcBinary(t), "folder", "-nats", proxy.URL(), "-creds", w.creds(auth.Worker), "-ackwait", ackWait.String())

	views := projection.NewStore(w.env.JS, w.env.Topology.Sessions, w.env.Topology.Questions)
	replies := inbox.NewReplies(w.env.JS, w.env.Topology.Sessions, views)
	qs := steertest.Questions("q1")
	s := steertest.NewSession(t, w.log, "folded")
	s.Continued("call-1", qs)
	reply, err := events.NewReply("reply-1", "call-1", qs, steertest.Choose(qs))
	require.NoError(t, err)
	seq, err := replies.Queue(context.Background(), "folded", "call-1", reply, 0)
	require.NoError(t, err)
	s.Splice(reply, seq)
	spliced := s.Last()
	projectiontest.Folded(t, w.env.Topology.Questions, "folded", spliced)

	subject, err := streams.ReplySubject("folded", "call-1")
	require.NoError(t, err)
	held := proxy.HoldAfter(func(s string, h nats.Header) bool { return s == subject && inbox.IsMarker(h) })
	s.Discard("reply-1")
	waitClosed(t, held, "the release marker")
	// Passed on to the server is not yet stored: wait for the store
	// before the kill, which could otherwise reset the proxy's connection
	// with the marker still unread. The victim cannot write the View
	// meanwhile: the proxy holds all it sends after the marker.
	require.Eventually(t, func() bool {
		last, err := replies.Last(context.Background(), "folded", "call-1")
		return err == nil && last.Marker == inbox.Released
	}, fgPatience, 5*time.Millisecond, "the server stores the release marker")
	victim.kill()

	last, err := replies.Last(context.Background(), "folded", "call-1")
	require.NoError(t, err)
	require.Equal(t, inbox.Released, last.Marker)
	stored, _, err := views.Get(context.Background(), "folded")
	require.NoError(t, err)
	require.Equal(t, spliced, stored.LastSeq, "the View folding the discard was never written")
	held2, err := replies.Held(context.Background(), "folded", "call-1", "reply-1")
	require.NoError(t, err)
	require.False(t, held2, "released all the same")

	folder := projection.NewWorker(views, replies, projection.WorkerConfig{AckWait: ackWait, Logger: slog.New(slog.DiscardHandler)})
	opstest.Start(t, ops.Component{Name: "projection", Run: folder.Run})
	kve := projectiontest.Folded(t, w.env.Topology.Questions, "folded", s.Last())
	require.NotEmpty(t, kve.Value())
	again, err := replies.Last(context.Background(), "folded", "call-1")
	require.NoError(t, err)
	require.Equal(t, last, again, "the redelivered fold marked nothing twice")
	check, folded, equal, err := views.Check(context.Background(), "folded")
	require.NoError(t, err)
	require.True(t, equal, "stored %+v, folded %+v", check, folded)

	svc := worker.New(w.env.Conn, w.env.JS, w.env.Topology, worker.Config{Views: views}, slog.New(slog.DiscardHandler))
	runWorker(t, svc)
	res, err := w.client().Answer(context.Background(), holdover.AnswerRequest{Session: "folded", CallID: "call-1", Answers: steertest.Skip(qs)})
	require.NoError(t, err)
	require.True(t, res.Accepted, "the discarded reply left the call answerable")
	require.True(t, strings.HasPrefix(res.MessageID, "reply-"))
}

func waitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(fgPatience):
		t.Fatalf("%s did not happen", what)
	}
}
