package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/steer/steertest"
)

// strandAckWait is the AckWait of the workers' consumer of the queued
// replies in the strand test: how soon a restarted worker takes over
// what the killed one followed.
const strandAckWait = time.Second

// D7, issue 24 item 7: 20 late answers are in flight when the worker is
// SIGKILLed, each for a Session whose runtime is gone. The proxy in front
// of the worker passes everything on until the 20th reply reaches the
// server and nothing after it, so every reply is stored and none of the
// follow-ups the worker began (its answers, its acknowledgements, its
// resume requests) gets out. A worker that starts afterwards finds each
// stored reply on the reply subjects, and the resume pool admits each
// exactly once: one reply stored, one user/message, settled late.
func TestFaultWorkerKilledMidAnswersStrandsNoReply(t *testing.T) {
	const n = 20
	w := newAnswerWorld(t)
	bin := fgProcBinary(t)
	url := w.env.Server.ClientURL()
	fgStart(t, bin, "folder", "-nats", url, "-creds", w.creds(auth.Worker))
	proxy := embeddedtest.NewProxy(t, url)
	var replies atomic.Int32
	held := proxy.HoldAfter(func(s string, h nats.Header) bool {
		return isReplySubject(s) && !inbox.IsMarker(h) && replies.Add(1) == n
	})
	victim := fgStart(t, bin, "worker", "-nats", proxy.URL(), "-creds", w.creds(auth.Worker), "-replyackwait", strandAckWait.String())

	// The Sessions' runtime asks, goes pending, ends its Turns and dies.
	first := startScaleProc(t, bin, "runtime", "-nats", url, "-creds", w.creds(auth.Agent), "-prefix", "strand", "-bound", "1s")
	first.ask(fmt.Sprintf("start %d", n))
	for i := range n {
		_, err := runtime.Steer(context.Background(), w.env.JS, strandSession(i), "prompt-"+strandSession(i), "Set up the service.")
		require.NoError(t, err)
	}
	store := projection.NewStore(w.env.JS, w.env.Topology.Sessions, w.env.Topology.Questions)
	calls := make([]projection.Call, n)
	for i := range n {
		calls[i] = awaitContinued(t, store, strandSession(i))
	}
	first.proc.kill()
	startScaleProc(t, bin, "runtime", "-nats", url, "-creds", w.creds(auth.Agent), "-prefix", "pool", "-pool", "-bound", "1s")

	client := w.client()
	var answered sync.WaitGroup
	for i := range n {
		answered.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), fgPatience)
			defer cancel()
			_, _ = client.Answer(ctx, holdover.AnswerRequest{Session: strandSession(i), CallID: calls[i].CallID, Answers: steertest.Choose(calls[i].Questions)})
		})
	}
	waitClosed(t, held, "the 20th reply's publish")
	replyStore := inbox.NewReplies(w.env.JS, w.env.Topology.Sessions, nil)
	require.Eventually(t, func() bool {
		stored := 0
		for i := range n {
			last, err := replyStore.Last(context.Background(), strandSession(i), calls[i].CallID)
			if err == nil && last.Marker == "" && last.MessageID != "" {
				stored++
			}
		}
		return stored == n
	}, fgPatience, 5*time.Millisecond, "the server stores every reply")
	victim.kill()
	answered.Wait()

	restarted := time.Now()
	fgStart(t, bin, "worker", "-nats", url, "-creds", w.creds(auth.Worker), "-replyackwait", strandAckWait.String())
	log := sessionlog.New(w.env.JS, w.env.Topology.Sessions)
	for i := range n {
		sid := strandSession(i)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			v, _, err := store.Get(context.Background(), sid)
			require.NoError(c, err)
			s, ok := v.FindSettled(calls[i].CallID)
			require.True(c, ok && s.Late, "%s: %s is not settled late: %+v", sid, calls[i].CallID, v)
		}, 2*fgPatience, 10*time.Millisecond)
		evts, _, err := log.Read(context.Background(), sid, 0)
		require.NoError(t, err)
		assert.Len(t, admissions(evts, calls[i].CallID), 1, "%s: the reply is admitted once", sid)
		replies := 0
		for _, q := range steertest.Queued(t, w.env.Topology.Sessions, sid) {
			if q.Message.Source.IsQuestionReply() {
				replies++
			}
		}
		assert.Equal(t, 1, replies, "%s: one reply stored", sid)
	}
	t.Logf("%d of %d stored replies admitted once, the last %v after a new worker was started (AckWait %v)",
		n, n, time.Since(restarted).Round(time.Millisecond), strandAckWait)
}

func strandSession(i int) string { return fmt.Sprintf("strand-%d", i) }

// isReplySubject says whether subject is a call's reply subject.
func isReplySubject(subject string) bool {
	parts := strings.Split(subject, ".")
	return len(parts) == 5 && parts[0] == "holdover" && parts[1] == "session" && parts[3] == "inbox"
}

// awaitContinued waits until the one call of Session sid is continued.
func awaitContinued(t *testing.T, store *projection.Store, sid string) projection.Call {
	t.Helper()
	var call projection.Call
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		v, _, err := store.Get(context.Background(), sid)
		require.NoError(c, err)
		require.Len(c, v.Active, 1, "%s: %+v", sid, v)
		require.Equal(c, projection.Continued, v.Active[0].Status)
		call = v.Active[0]
	}, fgPatience, 10*time.Millisecond)
	return call
}
