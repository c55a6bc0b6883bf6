package integration

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/notify"
	"github.com/holdover-dev/holdover/notify/notifytest"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/runtime/runtimetest"
	"github.com/holdover-dev/holdover/streams"
)

// notifyAgents runs a notifier posting to a loopback receiver beside the
// agent world's question worker and projection worker, on a connection
// of its own, and returns the receiver and the notifier's metrics.
func notifyAgents(t *testing.T, w *agentWorld) (*notifytest.Receiver, *ops.Metrics) {
	t.Helper()
	recv := notifytest.NewReceiver(t, notify.KeyHeader)
	hook, err := notify.ParseWebhook(recv.URL, notify.FormatJSON)
	require.NoError(t, err)
	web, err := notify.ParseWebURL("http://127.0.0.1:8080/")
	require.NoError(t, err)
	metrics := ops.NewMetrics()
	_, js := w.env.As(t, auth.Notifier)
	top, err := streams.Open(w.ctx, js)
	require.NoError(t, err)
	n, err := notify.New(js, top.Sessions, top.Questions, notify.Config{
		Webhooks: []notify.Webhook{hook}, WebURL: web, Metrics: metrics, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	opstest.Start(t, ops.Component{Name: "notify", Run: n.Run}) // ready: consuming
	return recv, metrics
}

// notes waits until the receiver accepted n notifications and decodes them.
func notes(t *testing.T, recv *notifytest.Receiver, n int) []notify.Notification {
	t.Helper()
	got := recv.Await(t, agentPatience, "notifications", func(reqs []notifytest.Request) bool { return len(notifytest.Keys(reqs)) >= n })
	var out []notify.Notification
	for _, r := range got {
		var note notify.Notification
		require.NoError(t, json.Unmarshal(r.Body, &note))
		require.Equal(t, note.Key, r.Key)
		out = append(out, note)
	}
	return out
}

// A real agent asks a timed question nobody answers in time: the
// notifier posts the question with its deadline while the wait runs,
// then, once the call returned pending and the agent went on, that it
// went pending. A late answer settles it and notifies nothing more
// (D3, D5, M2, M6).
func TestNotifyTimedQuestionThatGoesPending(t *testing.T) {
	w := newAgentWorld(t, lateScript)
	recv, metrics := notifyAgents(t, w)
	w.start(w.ctx, "s1", "Set up the service.")
	w.working("s1")

	got := notes(t, recv, 2)
	require.Len(t, got, 2)
	evts := w.Events("s1")
	call := evts[runtimetest.IndexOf(evts, events.TypeToolCall)]
	result := evts[runtimetest.IndexOf(evts, events.TypeToolResult)]
	q, p := got[0], got[1]
	require.Equal(t, normal(notify.Notification{Kind: notify.KindQuestion, Key: fmt.Sprintf("s1.call_1.%d.question", call.Seq), Session: "s1", CallID: "call_1",
		CallSeq: call.Seq, Questions: dbQuestions, Deadline: new(call.At.Add(time.Second)), Seq: call.Seq, At: call.At,
		Link: "http://127.0.0.1:8080/?session=s1#/s/s1"}), normal(q))
	require.Equal(t, normal(notify.Notification{Kind: notify.KindPending, Key: fmt.Sprintf("s1.call_1.%d.pending", call.Seq), Session: "s1", CallID: "call_1",
		CallSeq: call.Seq, Questions: dbQuestions, Seq: result.Seq, At: result.At, Link: q.Link}), normal(p))

	res, err := w.answer("s1", "call_1", holdover.Answer{ID: "db", Selected: []string{"SQLite"}})
	require.NoError(t, err)
	require.True(t, res.Accepted)
	w.clock.Advance(time.Minute) // the agent's independent work ends; it admits the reply
	w.AwaitCount("s1", events.TypeUserMessage, 2)
	view := w.projected("s1")
	require.Empty(t, view.Active, "the late answer settled the question")
	require.Len(t, recv.Requests(), 2, "settling notifies nothing")
	require.Equal(t, 1.0, notifytest.Count(t, metrics, "holdover_notify_delivered_total", "question"))
	require.Equal(t, 1.0, notifytest.Count(t, metrics, "holdover_notify_delivered_total", "pending"))
}

// A question answered in time is announced and never goes pending.
func TestNotifyQuestionAnsweredInTime(t *testing.T) {
	w := newAgentWorld(t, `ask db "Which database?" options Postgres,SQLite timeout 30
say Using {result}.`)
	recv, _ := notifyAgents(t, w)
	settled := w.answerFirst("s1", []holdover.Answer{{ID: "db", Selected: []string{"SQLite"}}})
	w.start(w.ctx, "s1", "Set up the service.")
	require.NoError(t, <-settled)
	evts := w.AwaitCount("s1", events.TypeTurnEnd, 1)
	w.projected("s1")
	got := notes(t, recv, 1)
	require.Equal(t, fmt.Sprintf("s1.call_1.%d.question", evts[runtimetest.IndexOf(evts, events.TypeToolCall)].Seq), got[0].Key)
	require.Len(t, recv.Requests(), 1, "no pending: the answer came in time")
}

// normal drops the monotonic clock reading and location of a
// notification's times, as JSON does, so it compares with a decoded one.
func normal(n notify.Notification) notify.Notification {
	n.At = n.At.UTC()
	if n.Deadline != nil {
		n.Deadline = new(n.Deadline.UTC())
	}
	return n
}
