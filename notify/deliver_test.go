package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/notify/notifytest"
	"github.com/holdover-dev/holdover/ops"
)

const patience = 10 * time.Second

// posterWorld is a poster on a fake clock posting to a real loopback
// receiver, with its metrics and logs at hand.
type posterWorld struct {
	t       *testing.T
	clock   *clockwork.FakeClock
	recv    *notifytest.Receiver
	hook    Webhook
	post    *poster
	metrics *ops.Metrics
	logs    *bytes.Buffer
}

func newPosterWorld(t *testing.T, policy RetryPolicy) *posterWorld {
	recv := notifytest.NewReceiver(t, KeyHeader)
	hook, err := ParseWebhook(recv.URL, FormatJSON)
	require.NoError(t, err)
	w := &posterWorld{t: t, clock: clockwork.NewFakeClock(), recv: recv, hook: hook, metrics: ops.NewMetrics(), logs: &bytes.Buffer{}}
	w.post = &poster{client: http.DefaultClient, clock: w.clock, policy: policy.withDefaults(), metrics: newNotifyMetrics(w.metrics),
		errors: w.metrics, log: slog.New(slog.NewTextHandler(w.logs, nil))}
	return w
}

var note = Notification{Kind: KindPending, Key: "s1.call_1.2.pending", Session: "s1", CallID: "call_1", CallSeq: 2, Questions: questions, Seq: 3, At: t0}

// deliver runs one delivery in the background and returns its result.
func (w *posterWorld) deliver(ctx context.Context) <-chan error {
	done := make(chan error, 1)
	data, err := body(note, FormatJSON)
	require.NoError(w.t, err)
	go func() { done <- w.post.deliver(ctx, w.hook, note, data) }()
	return done
}

// requests waits until the receiver has answered n requests.
func (w *posterWorld) requests(n int) []notifytest.Request {
	w.t.Helper()
	return w.recv.Await(w.t, patience, "answered requests", func(got []notifytest.Request) bool {
		return len(got) >= n && got[n-1].Status != 0
	})
}

// waitsFor requires that the poster is waiting out exactly d: nothing
// is posted a moment before d has passed on the clock, and the next
// attempt is posted once it has.
func (w *posterWorld) waitsFor(d time.Duration, attemptsSoFar int) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	require.NoError(w.t, w.clock.BlockUntilContext(ctx, 1), "the poster waits on its clock")
	w.clock.Advance(d - time.Millisecond)
	require.Len(w.t, w.recv.Requests(), attemptsSoFar, "no attempt before the back-off has passed")
	w.clock.Advance(time.Millisecond)
	w.requests(attemptsSoFar + 1)
}

// count reads the poster's counter holdover_notify_<name>_total of kind pending.
func (w *posterWorld) count(name string) float64 {
	return notifytest.Count(w.t, w.metrics, "holdover_notify_"+name+"_total", string(KindPending))
}

// The back-off doubles from First up to Max.
func TestBackoffDoublesUpToMax(t *testing.T) {
	p := RetryPolicy{First: 500 * time.Millisecond, Max: 5 * time.Second}
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, p.Backoff(n))
	}
	require.Equal(t, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}, got)
	require.Equal(t, 30*time.Second, RetryPolicy{}.Backoff(100), "the default caps at 30 s")
}

// A receiver that is down (503) is tried again after 0.5 s, 1 s, 2 s of
// the clock; every attempt carries the same key and body, and the
// delivery counts once, its failed attempts as retries.
func TestDeliverRetriesOnBackoff(t *testing.T) {
	w := newPosterWorld(t, RetryPolicy{})
	w.recv.Respond(func(n int, _ http.Header) int {
		if n < 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	done := w.deliver(context.Background())
	w.requests(1)
	w.waitsFor(500*time.Millisecond, 1)
	w.waitsFor(time.Second, 2)
	w.waitsFor(2*time.Second, 3)
	require.NoError(t, <-done)

	reqs := w.recv.Requests()
	require.Len(t, reqs, 4)
	for _, r := range reqs {
		require.Equal(t, "s1.call_1.2.pending", r.Key)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		require.Equal(t, reqs[0].Body, r.Body)
	}
	var got Notification
	require.NoError(t, json.Unmarshal(reqs[3].Body, &got))
	require.Equal(t, note, got)
	require.Equal(t, 1.0, w.count("delivered"))
	require.Equal(t, 3.0, w.count("retried"))
	require.Equal(t, 0.0, w.count("dead_lettered"))
}

// A receiver that asks for a wait (429 with Retry-After) gets it, up to Max.
func TestDeliverHonoursRetryAfter(t *testing.T) {
	require.Equal(t, 7*time.Second, retryAfter("7", t0))
	require.Equal(t, 90*time.Second, retryAfter(t0.Add(90*time.Second).Format(http.TimeFormat), t0))
	require.Zero(t, retryAfter("soon", t0))

	w := newPosterWorld(t, RetryPolicy{Max: 20 * time.Second})
	w.recv.Respond(func(n int, reply http.Header) int {
		switch n {
		case 0:
			reply.Set("Retry-After", "7")
		case 1:
			reply.Set("Retry-After", "3600")
		default:
			return http.StatusOK
		}
		return http.StatusTooManyRequests
	})
	done := w.deliver(context.Background())
	w.requests(1)
	w.waitsFor(7*time.Second, 1)
	w.waitsFor(20*time.Second, 2)
	require.NoError(t, <-done)
}

// A refusal that another attempt would not change (400) is dead-lettered
// at once; a receiver that stays down is dead-lettered once the attempts
// are spent. Either is counted by kind and in errors_total, and logged
// with the error of every attempt, the webhook named by its host alone.
func TestDeliverDeadLetters(t *testing.T) {
	w := newPosterWorld(t, RetryPolicy{Attempts: 3})
	w.recv.Respond(func(int, http.Header) int { return http.StatusBadRequest })
	require.NoError(t, <-w.deliver(context.Background()), "a dead letter settles the delivery")
	require.Len(t, w.recv.Requests(), 1)
	require.Equal(t, 1.0, w.count("dead_lettered"))
	require.Equal(t, 0.0, w.count("retried"))
	require.Contains(t, w.logs.String(), "answered 400 Bad Request")

	w.recv.Respond(func(int, http.Header) int { return http.StatusBadGateway })
	done := w.deliver(context.Background())
	w.requests(2)
	w.waitsFor(500*time.Millisecond, 2)
	w.waitsFor(time.Second, 3)
	require.NoError(t, <-done)
	require.Len(t, w.recv.Requests(), 4)
	require.Equal(t, 2.0, w.count("dead_lettered"))
	require.Equal(t, 2.0, w.count("retried"))
	require.Equal(t, 2.0, notifytest.Count(t, w.metrics, "holdover_errors_total", ""))
	logs := w.logs.String()
	require.Contains(t, logs, `msg="webhook delivery dead-lettered" key=s1.call_1.2.pending kind=pending session=s1 call=call_1`)
	require.Contains(t, logs, "after 3 attempts: attempt 1: POST http://127.0.0.1")
	require.Contains(t, logs, "attempt 3: POST http://127.0.0.1")
	require.Contains(t, logs, "answered 502 Bad Gateway")
	require.NotContains(t, logs, "secret-path", "the webhook's path is its secret")
}

// A receiver nobody listens at is retried (a connection failure may
// pass), and the error names its host, not its path; a delivery whose
// context ends is neither delivered nor dead-lettered.
func TestDeliverUnreachableAndStopped(t *testing.T) {
	w := newPosterWorld(t, RetryPolicy{})
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	hook, err := ParseWebhook(closed.URL+"/hook/secret-path", FormatJSON)
	require.NoError(t, err)
	w.hook = hook
	ctx, cancel := context.WithCancel(context.Background())
	done := w.deliver(ctx)
	waiting, stop := context.WithTimeout(context.Background(), patience)
	defer stop()
	require.NoError(t, w.clock.BlockUntilContext(waiting, 1), "the failed attempt is retried after a back-off")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Equal(t, 1.0, w.count("retried"))
	require.Equal(t, 0.0, w.count("dead_lettered"))
	require.Contains(t, w.logs.String(), "connection refused")
	require.NotContains(t, w.logs.String(), "secret-path")
}
