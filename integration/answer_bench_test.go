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
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/steer/steertest"
	"github.com/holdover-dev/holdover/streams"
)

// BenchmarkLateAnswer measures a late answer from the client's call to
// the reply being durable in the inbox (the answer returns only after the
// reply's publish is acknowledged), against a raw synchronous JetStream
// publish of the same reply to the same stream. The raw publish is timed
// between the answers, so both see the same machine: on a shared one, load
// comes and goes. Issue 3's target: at most 3× the raw publish. It runs on
// memory storage (the tests' setting) and file storage (a deployment's).
//
// Each answer goes to a Session of its own whose stored projection is
// caught up, as in steady state where the projection worker keeps up, and
// whose root is alive (its instance holds its root lease), so the worker
// follows the root until the reply is read instead of asking for a resume
// (D7), as for most answers in production. Every part runs on its own
// role's credentials.
func BenchmarkLateAnswer(b *testing.B) { onEachStorage(b, benchmarkLateAnswer) }

// onEachStorage runs bench on memory storage (the tests' setting) and on
// file storage (a deployment's).
func onEachStorage(b *testing.B, bench func(*testing.B, streams.Config)) {
	b.Run("memory", func(b *testing.B) { bench(b, streams.Config{Memory: true}) })
	b.Run("file", func(b *testing.B) { bench(b, streams.Config{}) })
}

func benchmarkLateAnswer(b *testing.B, cfg streams.Config) {
	w := newAnswerWorldOn(b, cfg, true)
	answer := lateAnswers(b, w)
	raw := rawPublisher(b, w.env.JS, steertest.Questions("q1", "q2"), steertest.Choose(steertest.Questions("q1", "q2")))
	raw(-1) // the stream's first message on the subject

	lat := make([]time.Duration, b.N)
	rawLat := make([]time.Duration, b.N)
	var total, rawTotal time.Duration
	b.ResetTimer()
	for i := range b.N {
		rawLat[i] = raw(i)
		lat[i] = answer(i)
		total += lat[i]
		rawTotal += rawLat[i]
	}
	b.StopTimer()
	reportRatio(b, lat, rawLat, total, rawTotal, "raw-publish")
}

// reportRatio reports latencies lat against the raw operation's rawLat
// measured beside them: the raw mean, the ratios of the means and of the
// p50s, and lat's p50 and p99.
func reportRatio(b *testing.B, lat, rawLat []time.Duration, total, rawTotal time.Duration, raw string) {
	slices.Sort(lat)
	slices.Sort(rawLat)
	b.ReportMetric(float64(rawTotal.Nanoseconds())/float64(b.N), raw+"-ns/op")
	b.ReportMetric(float64(total)/float64(rawTotal), "x-"+raw)
	b.ReportMetric(float64(lat[len(lat)/2])/float64(rawLat[len(rawLat)/2]), "x-"+raw+"-p50")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(rawLat[len(rawLat)/2].Microseconds()), raw+"-p50-µs")
}

// lateAnswers prepares b.N Sessions in w, each with a continued call, a
// caught-up View and a live root, and returns the timed late answer to
// Session i, given as a gateway gives it.
func lateAnswers(b *testing.B, w *answerWorld) func(i int) time.Duration {
	w.worker()
	c := w.client()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	store := projection.NewStore(w.env.JS, w.env.Topology.Sessions, w.env.Topology.Questions)
	rootConn, rootJS := w.env.As(b, auth.Agent)
	if _, err := liveroot.HoldLease(ctx, rootConn, rootJS, "runtime-1", lease.MinReleaseBound); err != nil {
		b.Fatal(err)
	}

	qs := steertest.Questions("q1", "q2")
	answers := steertest.Choose(qs)
	roots := w.roots()
	sids := make([]string, b.N)
	for i := range sids {
		sids[i] = fmt.Sprintf("bench-%d", i)
		s := steertest.NewSession(b, w.log, sids[i])
		s.Continued("call-1", qs)
		if _, err := roots.Register(ctx, sids[i], "runtime-1"); err != nil {
			b.Fatal(err)
		}
	}
	waitFolded(b, store, sids)
	return func(i int) time.Duration {
		start := time.Now()
		res, err := c.Answer(ctx, holdover.AnswerRequest{Session: sids[i], CallID: "call-1", Answers: answers})
		took := time.Since(start)
		if err != nil || !res.Accepted {
			b.Fatalf("answer %s: %+v %v", sids[i], res, err)
		}
		return took
	}
}

// What authentication costs a late answer: the same answers in a world
// with it on and in one without, one in each by turns so both see the same
// machine; the p50 and p99 ratios, auth on over off.
func BenchmarkLateAnswerAuthCost(b *testing.B) {
	open, secure := lateAnswers(b, newAnswerWorldOn(b, streams.Config{Memory: true}, false)), lateAnswers(b, newAnswerWorld(b))
	on := make([]time.Duration, b.N)
	off := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := range b.N {
		off[i] = open(i)
		on[i] = secure(i)
	}
	b.StopTimer()
	for _, q := range []float64{0.5, 0.99} {
		b.ReportMetric(float64(fgQuantile(on, q))/float64(fgQuantile(off, q)), fmt.Sprintf("auth/noauth-p%d", int(q*100)))
	}
	b.ReportMetric(fgMicros(fgQuantile(on, 0.5)), "auth-p50-µs")
	b.ReportMetric(fgMicros(fgQuantile(off, 0.5)), "noauth-p50-µs")
}

// rawPublisher returns a function that times one synchronous publish of a
// reply-sized message to one reply subject, under the message id i.
func rawPublisher(b *testing.B, js jetstream.JetStream, qs []holdover.Question, answers []holdover.Answer) func(i int) time.Duration {
	msg, err := events.NewReply("raw", "call-1", qs, answers)
	if err != nil {
		b.Fatal(err)
	}
	data, err := events.Encode(events.New(time.Now(), &events.UserMessage{Message: msg}))
	if err != nil {
		b.Fatal(err)
	}
	subject, err := streams.ReplySubject("raw", "call-1")
	if err != nil {
		b.Fatal(err)
	}
	return func(i int) time.Duration {
		m := &nats.Msg{Subject: subject, Data: data}
		start := time.Now()
		if _, err := js.PublishMsg(context.Background(), m, jetstream.WithMsgID(fmt.Sprintf("raw-%d", i))); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
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
