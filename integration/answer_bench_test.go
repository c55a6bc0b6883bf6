package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/bench"
	"github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
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
	raw := rawPublisher(b, w.env.JS, bench.Questions, bench.Answers)
	b.ResetTimer()
	row, err := bench.LateAnswer(context.Background(), answer, raw, b.N)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	reportRatio(b, row.Path, row.Raw, "raw-publish")
}

// reportRatio reports latencies lat against the raw operation's rawLat
// measured beside them: the raw mean, the ratios of the means and of the
// p50s, and lat's p50 and p99.
func reportRatio(b *testing.B, lat, rawLat bench.Samples, raw string) {
	var total, rawTotal time.Duration
	for i := range lat {
		total, rawTotal = total+lat[i], rawTotal+rawLat[i]
	}
	b.ReportMetric(float64(rawTotal.Nanoseconds())/float64(len(rawLat)), raw+"-ns/op")
	b.ReportMetric(float64(total)/float64(rawTotal), "x-"+raw)
	b.ReportMetric(float64(lat.Quantile(0.5))/float64(rawLat.Quantile(0.5)), "x-"+raw+"-p50")
	b.ReportMetric(float64(lat.Quantile(0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat.Quantile(0.99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(rawLat.Quantile(0.5).Microseconds()), raw+"-p50-µs")
}

// lateAnswers prepares b.N Sessions in w, each with a continued call, a
// caught-up View and a live root, and returns the timed late answer to
// Session i, given as a gateway gives it: package bench's, as `holdover
// bench` measures a deployment.
func lateAnswers(b *testing.B, w *answerWorld) func(context.Context, int) (time.Duration, error) {
	w.worker()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	rootConn, rootJS := w.env.As(b, auth.Agent)
	if _, err := liveroot.HoldLease(ctx, rootConn, rootJS, "runtime-1", lease.MinReleaseBound); err != nil {
		b.Fatal(err)
	}
	tool, err := askuser.New(askuser.Config{Mode: askuser.ModeTimed}, w.agent())
	if err != nil {
		b.Fatal(err)
	}
	top := w.open(rootJS)
	continued := bench.Continued{
		Log: sessionlog.New(rootJS, top.Sessions), Roots: w.roots(), Instance: "runtime-1", Tool: tool,
		Store: projection.NewStore(w.env.JS, w.env.Topology.Sessions, w.env.Topology.Questions),
	}
	sids := make([]string, b.N)
	for i := range sids {
		sids[i] = fmt.Sprintf("bench-%d", i)
	}
	answer, err := bench.LateAnswers(ctx, continued, w.client(), sids)
	if err != nil {
		b.Fatal(err)
	}
	return answer
}

// What authentication costs a late answer: the same answers in a world
// with it on and in one without, one in each by turns so both see the same
// machine; the p50 and p99 ratios, auth on over off.
func BenchmarkLateAnswerAuthCost(b *testing.B) {
	open, secure := lateAnswers(b, newAnswerWorldOn(b, streams.Config{Memory: true}, false)), lateAnswers(b, newAnswerWorld(b))
	var on, off bench.Samples
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		for _, m := range []struct {
			answer func(context.Context, int) (time.Duration, error)
			into   *bench.Samples
		}{{open, &off}, {secure, &on}} {
			took, err := m.answer(ctx, i)
			if err != nil {
				b.Fatal(err)
			}
			*m.into = append(*m.into, took)
		}
	}
	b.StopTimer()
	for _, q := range []float64{0.5, 0.99} {
		b.ReportMetric(float64(on.Quantile(q))/float64(off.Quantile(q)), fmt.Sprintf("auth/noauth-p%d", int(q*100)))
	}
	b.ReportMetric(fgMicros(on.Quantile(0.5)), "auth-p50-µs")
	b.ReportMetric(fgMicros(off.Quantile(0.5)), "noauth-p50-µs")
}

// rawPublisher returns one synchronous publish of a reply to questions qs
// (answered by answers) on one reply subject, each under a message id of
// its own, as package bench times it.
func rawPublisher(b *testing.B, js jetstream.JetStream, qs []holdover.Question, answers []holdover.Answer) bench.Timed {
	publish, err := bench.ReplyPublisher(context.Background(), js, "raw", "call-1", qs, answers)
	if err != nil {
		b.Fatal(err)
	}
	return publish
}
