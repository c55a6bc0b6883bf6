package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/notify/notifytest"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/steer/steertest"
	"github.com/holdover-dev/holdover/streams"
)

// world is a real embedded server with the Session log, webhook
// receivers on loopback, and notifiers the test starts and stops.
type world struct {
	t   *testing.T
	env *steertest.Env
}

func newWorld(t *testing.T) *world { return &world{t: t, env: steertest.Start(t)} }

// running is a started notifier.
type running struct {
	metrics *ops.Metrics
	stop    func()
}

// start runs a notifier with cfg (its metrics fresh, its logs dropped)
// until stop or the test's end, once its consumer exists.
func (w *world) start(cfg Config) running {
	w.t.Helper()
	cfg.Metrics = ops.NewMetrics()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	n, err := New(w.env.JS, w.env.Topology.Sessions, w.env.Topology.Questions, cfg)
	require.NoError(w.t, err)
	started := opstest.Start(w.t, ops.Component{Name: "notify", Run: n.Run})
	return running{metrics: cfg.Metrics, stop: func() { require.NoError(w.t, started.Stop()) }}
}

func (w *world) hook(r *notifytest.Receiver, f Format) Webhook {
	h, err := ParseWebhook(r.URL, f)
	require.NoError(w.t, err)
	return h
}

// settled waits until the consumer has acknowledged every event up to
// the stream's last: nothing held, nothing left to deliver.
func (w *world) settled(durable string) {
	w.t.Helper()
	ctx := context.Background()
	require.Eventually(w.t, func() bool {
		info, err := w.env.Topology.Sessions.Info(ctx)
		require.NoError(w.t, err)
		cons, err := w.env.JS.Consumer(ctx, streams.SessionsStream, durable)
		require.NoError(w.t, err)
		ci, err := cons.Info(ctx)
		require.NoError(w.t, err)
		return ci.AckFloor.Stream == info.State.LastSeq && ci.NumAckPending == 0 && ci.NumPending == 0
	}, patience, 5*time.Millisecond, "the notifier acknowledges every event")
}

// accepted waits for n requests answered 2xx and returns them.
func accepted(t *testing.T, r *notifytest.Receiver, n int) []notifytest.Request {
	t.Helper()
	got := r.Await(t, patience, fmt.Sprintf("%d accepted notifications", n), func(reqs []notifytest.Request) bool {
		return len(notifytest.Keys(reqs)) >= n
	})
	var out []notifytest.Request
	for _, req := range got {
		if req.Status/100 == 2 {
			out = append(out, req)
		}
	}
	return out
}

func decode(t *testing.T, r notifytest.Request) Notification {
	t.Helper()
	var n Notification
	require.NoError(t, json.Unmarshal(r.Body, &n), "%s", r.Body)
	require.Equal(t, n.Key, r.Key, "the header carries the body's key")
	return n
}

// A question and its pending result reach every webhook, each in its own
// format, once, in order, with the key, the card link and the event's
// seq; the events are acknowledged once delivered.
func TestNotifierPostsQuestionAndPending(t *testing.T) {
	w := newWorld(t)
	raw, slack := notifytest.NewReceiver(t, KeyHeader), notifytest.NewReceiver(t, KeyHeader)
	web, err := ParseWebURL("http://127.0.0.1:8080/")
	require.NoError(t, err)
	n := w.start(Config{Webhooks: []Webhook{w.hook(raw, FormatJSON), w.hook(slack, FormatSlack)}, WebURL: web})

	s := steertest.NewSession(t, w.env.Log, "s1")
	s.Header(true)
	asked := s.Ask("call_1", questions)
	s.Append(&events.AssistantMessage{ID: "m1", Content: events.Text("Asking the user.")})
	went := s.Pending("call_1")

	got := accepted(t, raw, 2)
	require.Len(t, got, 2)
	q, p := decode(t, got[0]), decode(t, got[1])
	require.Equal(t, KindQuestion, q.Kind)
	require.Equal(t, fmt.Sprintf("s1.call_1.%d.question", asked), q.Key)
	require.Equal(t, asked, q.CallSeq)
	require.Equal(t, asked, q.Seq)
	require.Equal(t, questions, q.Questions)
	require.NotNil(t, q.Deadline)
	require.Equal(t, q.At.Add(30*time.Second), *q.Deadline, "steertest asks with a 30 s timeout")
	require.Equal(t, "http://127.0.0.1:8080/?session=s1#/s/s1", q.Link)
	require.Equal(t, KindPending, p.Kind)
	require.Equal(t, fmt.Sprintf("s1.call_1.%d.pending", asked), p.Key)
	require.Equal(t, went, p.Seq)

	texts := accepted(t, slack, 2)
	require.Equal(t, []string{q.Key, p.Key}, []string{texts[0].Key, texts[1].Key})
	require.Contains(t, string(texts[0].Body), `"text":"*New question* in Session`)
	w.settled(DefaultDurable)
	require.Equal(t, 2.0, notifytest.Count(t, n.metrics, "holdover_notify_delivered_total", "question"), "one per webhook")
	require.Equal(t, 2.0, notifytest.Count(t, n.metrics, "holdover_notify_delivered_total", "pending"))
	require.Equal(t, 0.0, notifytest.Count(t, n.metrics, "holdover_notify_seeds_total", ""), "a new Session needs no seed")
	require.Len(t, raw.Requests(), 2, "nothing was sent twice")
}

// A notifier started while a Session runs announces nothing from before
// (its consumer starts at new events), and folds the Session from the
// stored projection and the log on first sight, so a question asked
// before it started still goes pending after.
func TestNotifierSeedsASessionThatRanBefore(t *testing.T) {
	for _, projected := range []bool{false, true} {
		t.Run(fmt.Sprintf("projection stored %v", projected), func(t *testing.T) {
			w := newWorld(t)
			s := steertest.NewSession(t, w.env.Log, "s1")
			s.Header(true)
			first := s.Ask("call_1", questions)
			if projected {
				folder := projection.NewWorker(projection.NewStore(w.env.JS, w.env.Topology.Sessions, w.env.Topology.Questions),
					inbox.NewReplies(w.env.JS, w.env.Topology.Sessions, nil), projection.WorkerConfig{Logger: slog.New(slog.DiscardHandler)})
				folding := opstest.Start(t, ops.Component{Name: "projection", Run: folder.Run})
				require.Eventually(t, func() bool {
					v, found, err := projection.NewStore(w.env.JS, w.env.Topology.Sessions, w.env.Topology.Questions).Get(context.Background(), "s1")
					return err == nil && found && v.LastSeq == s.Last()
				}, patience, 5*time.Millisecond)
				require.NoError(t, folding.Stop())
			}
			recv := notifytest.NewReceiver(t, KeyHeader)
			n := w.start(Config{Webhooks: []Webhook{w.hook(recv, FormatJSON)}})
			s.Pending("call_1")
			second := s.Ask("call_2", questions)
			got := accepted(t, recv, 2)
			require.Equal(t, []string{fmt.Sprintf("s1.call_1.%d.pending", first), fmt.Sprintf("s1.call_2.%d.question", second)},
				[]string{got[0].Key, got[1].Key})
			w.settled(DefaultDurable)
			require.Equal(t, 1.0, notifytest.Count(t, n.metrics, "holdover_notify_seeds_total", ""), "one seed, then the kept View")
		})
	}
}

// Two notifiers sharing the consumer split the events: each folds the
// events the other took from the log (a gap in Holdover-Prev-Seq), and
// notifies only its own, so every transition is posted exactly once.
func TestNotifiersShareTheConsumer(t *testing.T) {
	w := newWorld(t)
	recv := notifytest.NewReceiver(t, KeyHeader)
	cfg := Config{Webhooks: []Webhook{w.hook(recv, FormatJSON)}, Lanes: 2}
	a, b := w.start(cfg), w.start(cfg)
	const sessions, calls = 8, 5
	for i := range sessions {
		s := steertest.NewSession(t, w.env.Log, fmt.Sprintf("s%d", i))
		s.Header(true)
		for c := range calls {
			s.Ask(fmt.Sprintf("call_%d", c), questions)
			s.Pending(fmt.Sprintf("call_%d", c))
		}
	}
	accepted(t, recv, sessions*calls*2)
	w.settled(DefaultDurable)
	keys := notifytest.Keys(recv.Requests())
	require.Len(t, keys, sessions*calls*2)
	for k, n := range keys {
		require.Equal(t, 1, n, "%s posted once", k)
	}
	seeds := notifytest.Count(t, a.metrics, "holdover_notify_seeds_total", "") + notifytest.Count(t, b.metrics, "holdover_notify_seeds_total", "")
	require.Positive(t, seeds, "each notifier folded what the other took")
	t.Logf("seeds: %v", seeds)
}

// A notifier stopped while it retries a receiver that is down hands the
// event back; the next one posts the same notification, same key, and
// the receiver, deduping by key, sees it once. The event stays
// unacknowledged until then. AckWait outlasts the test's patience, so
// only the hand-back, never the server's redelivery on AckWait, can
// bring the event to the next notifier in time.
func TestNotifierStoppedMidRetryLosesNothing(t *testing.T) {
	w := newWorld(t)
	recv := notifytest.NewReceiver(t, KeyHeader)
	recv.Respond(func(int, http.Header) int { return http.StatusServiceUnavailable })
	cfg := Config{Webhooks: []Webhook{w.hook(recv, FormatJSON)}, AckWait: 6 * patience,
		Retry: RetryPolicy{First: 20 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: 1000}}
	first := w.start(cfg)
	s := steertest.NewSession(t, w.env.Log, "s1")
	s.Header(true)
	asked := s.Ask("call_1", questions)
	key := fmt.Sprintf("s1.call_1.%d.question", asked)
	recv.Await(t, patience, "a few failed attempts", func(reqs []notifytest.Request) bool { return len(reqs) >= 3 })
	first.stop()
	require.Empty(t, notifytest.Keys(recv.Requests()), "nothing was accepted")

	recv.Respond(func(int, http.Header) int { return http.StatusOK })
	second := w.start(cfg)
	got := accepted(t, recv, 1)
	require.Equal(t, key, got[0].Key)
	for _, r := range recv.Requests() {
		require.Equal(t, key, r.Key, "every attempt, before and after the restart, has one key")
	}
	w.settled(DefaultDurable)
	require.Equal(t, 1.0, notifytest.Count(t, second.metrics, "holdover_notify_seeds_total", ""), "the redelivered event is folded afresh")
}

// A webhook that refuses a notification dead-letters it, and the event
// is acknowledged all the same: one bad receiver holds nobody up.
func TestNotifierDeadLetterSettlesTheEvent(t *testing.T) {
	w := newWorld(t)
	bad, good := notifytest.NewReceiver(t, KeyHeader), notifytest.NewReceiver(t, KeyHeader)
	bad.Respond(func(int, http.Header) int { return http.StatusGone })
	n := w.start(Config{Webhooks: []Webhook{w.hook(bad, FormatJSON), w.hook(good, FormatJSON)}})
	s := steertest.NewSession(t, w.env.Log, "s1")
	s.Header(true)
	s.Ask("call_1", questions)
	accepted(t, good, 1)
	w.settled(DefaultDurable)
	require.Equal(t, 1.0, notifytest.Count(t, n.metrics, "holdover_notify_dead_lettered_total", "question"))
	require.Equal(t, 1.0, notifytest.Count(t, n.metrics, "holdover_notify_delivered_total", "question"))
}

// An operator replays a window by making a consumer of another name
// start at a seq: a notifier of that name keeps its starting point (and
// takes its own AckWait), and posts the transitions from there on.
func TestNotifierReplaysFromAConsumerAnOperatorMade(t *testing.T) {
	w := newWorld(t)
	s := steertest.NewSession(t, w.env.Log, "s1")
	s.Header(true)
	s.Ask("call_1", questions)
	from := s.Pending("call_1")
	s.Ask("call_2", questions)
	ctx := context.Background()
	_, err := w.env.Topology.Sessions.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "replay", DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from, AckPolicy: jetstream.AckExplicitPolicy,
	})
	require.NoError(t, err)
	recv := notifytest.NewReceiver(t, KeyHeader)
	w.start(Config{Webhooks: []Webhook{w.hook(recv, FormatJSON)}, Durable: "replay", AckWait: 7 * time.Second})
	got := accepted(t, recv, 2)
	require.Equal(t, []Kind{KindPending, KindQuestion}, []Kind{decode(t, got[0]).Kind, decode(t, got[1]).Kind})
	require.Equal(t, []string{"call_1", "call_2"}, []string{decode(t, got[0]).CallID, decode(t, got[1]).CallID})
	w.settled("replay")
	cons, err := w.env.JS.Consumer(ctx, streams.SessionsStream, "replay")
	require.NoError(t, err)
	require.Equal(t, jetstream.DeliverByStartSequencePolicy, cons.CachedInfo().Config.DeliverPolicy)
	require.Equal(t, 7*time.Second, cons.CachedInfo().Config.AckWait)
}

// An operator who deletes the consumer (to drop a backlog) finds the
// running notifier creating it again, at new events.
func TestNotifierRecreatesADeletedConsumer(t *testing.T) {
	w := newWorld(t)
	recv := notifytest.NewReceiver(t, KeyHeader)
	w.start(Config{Webhooks: []Webhook{w.hook(recv, FormatJSON)}, Retry: RetryPolicy{First: 10 * time.Millisecond}})
	ctx := context.Background()
	require.NoError(t, w.env.Topology.Sessions.DeleteConsumer(ctx, DefaultDurable))
	s := steertest.NewSession(t, w.env.Log, "s1")
	s.Header(true)
	s.Ask("call_1", questions) // may be stored before the consumer is back
	require.Eventually(t, func() bool {
		_, err := w.env.JS.Consumer(ctx, streams.SessionsStream, DefaultDurable)
		return err == nil
	}, patience, 5*time.Millisecond, "the notifier creates its consumer again")
	asked := s.Ask("call_2", questions)
	got := recv.Await(t, patience, "the question asked after", func(reqs []notifytest.Request) bool {
		return notifytest.Keys(reqs)[fmt.Sprintf("s1.call_2.%d.question", asked)] == 1
	})
	require.NotEmpty(t, got)
}

// A notifier needs somewhere to post.
func TestNewNeedsAWebhook(t *testing.T) {
	w := newWorld(t)
	_, err := New(w.env.JS, w.env.Topology.Sessions, w.env.Topology.Questions, Config{})
	require.ErrorContains(t, err, "no webhook")
	require.Equal(t, jetstream.DeliverNewPolicy, Config{}.ConsumerConfig().DeliverPolicy, "turning notifications on announces nothing from before")
}
