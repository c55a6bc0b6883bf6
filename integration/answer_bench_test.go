package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/steer/steertest"
	"github.com/holdover-dev/holdover/streams"
)

// BenchmarkLateAnswer measures a late answer from the client's call to
// the reply being durable in the Session inbox (the answer returns only
// after the inbox publish is acknowledged), against a raw synchronous
// JetStream publish of the same reply to the same stream, measured in the
// same run. Issue 3's target: at most 3× the raw publish.
//
// Each answer goes to a Session of its own whose stored projection is
// caught up, as in steady state where the projection worker keeps up, and
// which has a live root, so no resume request follows (D7).
func BenchmarkLateAnswer(b *testing.B) {
	w := newAnswerWorld(b)
	svc := w.worker()
	c := w.client()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := projection.NewStore(w.env.JS, w.env.Topology.Sessions, w.env.Topology.Questions)
	go func() { _ = projection.NewWorker(store, projection.WorkerConfig{}).Run(ctx) }()

	qs := steertest.Questions("q1", "q2")
	answers := steertest.Choose(qs)
	sids := make([]string, b.N)
	for i := range sids {
		sids[i] = fmt.Sprintf("bench-%d", i)
		s := steertest.NewSession(b, w.log, sids[i])
		s.Continued("call-1", qs)
		if _, err := svc.Roots().Register(ctx, sids[i], "runtime-1"); err != nil {
			b.Fatal(err)
		}
	}
	waitFolded(b, store, sids)

	raw := rawPublish(b, w.env.JS, qs, answers)

	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	for i, sid := range sids {
		start := time.Now()
		res, err := c.Answer(ctx, holdover.AnswerRequest{Session: sid, CallID: "call-1", Answers: answers})
		lat[i] = time.Since(start)
		if err != nil || !res.Accepted {
			b.Fatalf("answer %s: %+v %v", sid, res, err)
		}
	}
	b.StopTimer()
	per := b.Elapsed() / time.Duration(b.N)
	slices.Sort(lat)
	b.ReportMetric(float64(raw.Nanoseconds()), "raw-publish-ns/op")
	b.ReportMetric(float64(per)/float64(raw), "x-raw-publish")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// rawPublish times b.N synchronous publishes of a reply-sized message to
// one inbox subject and returns the mean.
func rawPublish(b *testing.B, js jetstream.JetStream, qs []holdover.Question, answers []holdover.Answer) time.Duration {
	msg, err := events.NewReply("raw", "call-1", qs, answers)
	if err != nil {
		b.Fatal(err)
	}
	data, err := events.Encode(events.New(time.Now(), &events.UserMessage{Message: msg}))
	if err != nil {
		b.Fatal(err)
	}
	subject, err := streams.InboxSubject("raw")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	start := time.Now()
	for i := range b.N {
		m := &nats.Msg{Subject: subject, Data: data}
		if _, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(fmt.Sprintf("raw-%d", i))); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start) / time.Duration(b.N)
}

// waitFolded waits until the projection worker has stored every Session's
// View, so the benchmark measures the steady state.
func waitFolded(b testing.TB, store *projection.Store, sids []string) {
	deadline := time.Now().Add(2 * time.Minute)
	ctx := context.Background()
	for _, sid := range sids {
		for {
			v, ok, err := store.Get(ctx, sid)
			if err != nil {
				b.Fatal(err)
			}
			if ok && len(v.Active) == 1 && v.Active[0].Status == projection.Continued {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("projection of %s not folded", sid)
			}
			time.Sleep(time.Millisecond) // waiting for another component's progress, not for a result
		}
	}
}
