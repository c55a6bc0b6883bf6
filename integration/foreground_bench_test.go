package integration

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
	"github.com/holdover-dev/holdover/worker"
)

// Benchmarks of the foreground path (issue 3). Each reports its figure
// beside the raw NATS primitive it is built on, measured in the same run,
// so the ratio survives a slower or faster machine. Run them without -race
// and one at a time, for example:
//
//	go test ./integration -run '^$' -bench BenchmarkForeground -benchtime 2000x
//
// The scenario benchmarks (memory, claim release) do their fixed work once
// whatever b.N is; -benchtime 1x keeps the harness from repeating them.

// fgQuantile returns the q-quantile of ds, which it sorts.
func fgQuantile(ds []time.Duration, q float64) time.Duration {
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

func fgMicros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// askTimed → request delivered to a subscribed Client, and Client answer →
// result at the caller, against a core request-reply round trip between
// two connections of the same embedded server. The Client answers as soon
// as the request reaches its handler, and every time is taken where it
// happens, so no test goroutine stands in between. Targets: each at most
// 3× the round trip, p99 under 2 ms.
func BenchmarkForegroundLatency(b *testing.B) {
	w := newFGWorld(b) // deadlines on a fake clock never fire
	call := fgBenchCalls(b, w)
	roundTrip := fgRawRoundTrip(b, w)

	// The raw round trip is measured between the calls, so both see the
	// same machine: on a shared one, load comes and goes.
	raw := make([]time.Duration, 0, b.N)
	deliver := make([]time.Duration, 0, b.N)
	answer := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		raw = append(raw, roundTrip())
		d, a := call(i)
		deliver = append(deliver, d)
		answer = append(answer, a)
	}
	b.StopTimer()
	rawP50, rawP99 := fgQuantile(raw, 0.5), fgQuantile(raw, 0.99)
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"deliver", deliver}, {"answer", answer}} {
		p50, p99 := fgQuantile(m.ds, 0.5), fgQuantile(m.ds, 0.99)
		b.ReportMetric(fgMicros(p50), m.name+"-p50-µs")
		b.ReportMetric(fgMicros(p99), m.name+"-p99-µs")
		b.ReportMetric(float64(p50)/float64(rawP50), m.name+"/raw-p50")
		b.ReportMetric(float64(p99)/float64(rawP99), m.name+"/raw-p99")
	}
	b.ReportMetric(fgMicros(rawP50), "raw-rtt-p50-µs")
	b.ReportMetric(fgMicros(rawP99), "raw-rtt-p99-µs")
}

// fgBenchCalls watches Session "bench" in w with a Client that answers at
// once (on a gateway's connection) and returns one timed call by w's agent:
// askTimed → request delivered, and Client answer → result at the caller.
func fgBenchCalls(b *testing.B, w *fgWorld) func(i int) (deliver, answer time.Duration) {
	client := &fgAutoAnswer{b: b, answered: make(chan [2]time.Time, 1)}
	watch, err := w.answerer(w.as(auth.Gateway)).Watch(context.Background(), "bench", client)
	require.NoError(b, err)
	b.Cleanup(func() { _ = watch.Close(context.Background()) })
	ref := w.live("bench")
	call := func(i int) (deliver, answer time.Duration) {
		start := time.Now()
		out, err := w.agent.AskTimed(context.Background(), fgTimed("bench", fmt.Sprintf("c%d", i), ref, 600_000))
		end := time.Now()
		require.NoError(b, err)
		require.Len(b, out.Answers, 1)
		at := <-client.answered
		return at[0].Sub(start), end.Sub(at[1])
	}
	call(-1) // the agent's lease and the worker's lease watch are made once
	return call
}

// What authentication costs the foreground path: the same timed calls in a
// world with it on (every part on its role's credentials, every message
// checked against its permissions) and in one without, one call in each by
// turns so both see the same machine. Reported as the p50 and p99 ratios,
// auth on over off, of delivery and of the answer's way back.
func BenchmarkForegroundAuthCost(b *testing.B) {
	open, secure := fgBenchCalls(b, newFGWorldAuth(b, false)), fgBenchCalls(b, newFGWorld(b))
	var on, off [2][]time.Duration
	b.ResetTimer()
	for i := range b.N {
		d, a := open(i)
		off[0], off[1] = append(off[0], d), append(off[1], a)
		d, a = secure(i)
		on[0], on[1] = append(on[0], d), append(on[1], a)
	}
	b.StopTimer()
	for k, name := range []string{"deliver", "answer"} {
		for _, q := range []float64{0.5, 0.99} {
			b.ReportMetric(float64(fgQuantile(on[k], q))/float64(fgQuantile(off[k], q)), fmt.Sprintf("%s-auth/noauth-p%d", name, int(q*100)))
		}
		b.ReportMetric(fgMicros(fgQuantile(on[k], 0.5)), name+"-auth-p50-µs")
		b.ReportMetric(fgMicros(fgQuantile(off[k], 0.5)), name+"-noauth-p50-µs")
	}
}

// fgRawRoundTrip returns a core request-reply round trip between two
// connections of w's server, the primitive the foreground path is built
// on: the scale its latency benchmarks report against.
func fgRawRoundTrip(b *testing.B, w *fgWorld) func() time.Duration {
	responder := w.conn()
	_, err := responder.Subscribe("bench.raw", func(m *nats.Msg) { _ = m.Respond(m.Data) })
	require.NoError(b, err)
	require.NoError(b, responder.Flush())
	caller := w.conn()
	payload := make([]byte, 200) // about the size of a one-question request
	return func() time.Duration {
		start := time.Now()
		_, err := caller.Request("bench.raw", payload, fgPatience)
		require.NoError(b, err)
		return time.Since(start)
	}
}

// fgAutoAnswer is a Client that answers every request the moment it is
// delivered, and tells when it got it and when it sent the answer.
type fgAutoAnswer struct {
	b        testing.TB
	answered chan [2]time.Time
}

func (a *fgAutoAnswer) Request(d *answerer.Delivery) {
	got := time.Now()
	require.NoError(a.b, d.Settle(fgAnswer("yes")))
	a.answered <- [2]time.Time{got, got}
}

func (a *fgAutoAnswer) Cancel(*answerer.Delivery, string) {}

// The worker's memory per live timed wait with one claim, over 10,000
// live waits. The server, the agent and the claiming Client run in other
// processes, so the worker's heap holds only its own share; the raw
// primitive is the heap of one core subscription, which every wait would
// cost if it had its own. Target: under 8 KiB a wait.
func BenchmarkForegroundMemoryPerWait(b *testing.B) {
	const waits = 10_000
	bin := fgProcBinary(b)
	server := fgStart(b, bin, "server", "-store", b.TempDir())
	nc, js := embeddedtest.Connect(b, server.said)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	top, err := streams.Provision(ctx, js, streams.Config{Memory: true})
	require.NoError(b, err)
	svc := worker.New(nc, js, top, worker.Config{}, slog.New(slog.DiscardHandler))
	require.NoError(b, svc.Start(ctx))
	b.Cleanup(svc.Stop)
	require.NoError(b, nc.Flush())
	epoch, err := svc.Roots().Register(ctx, "mem", "runtime-mem")
	require.NoError(b, err)

	subBytes := fgHeapPer(1000, func() {
		_, err := nc.Subscribe(nc.NewInbox(), func(*nats.Msg) {})
		require.NoError(b, err)
	})
	before := fgHeap()
	goroutines := runtime.NumGoroutine()
	load := fgStart(b, bin, "claimer", "-nats", server.said, "-session", "mem", "-bound", userquestions.DefaultReleaseBound.String(),
		"-claims", fmt.Sprint(waits), "-timed", fmt.Sprint(waits), "-instance", "runtime-mem", "-epoch", fmt.Sprint(epoch))
	require.Equal(b, waits, svc.LiveWaits())
	after := fgHeap()
	perWait := float64(after-before) / waits
	b.ReportMetric(perWait, "B/wait")
	b.ReportMetric(subBytes, "B/raw-sub")
	b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/waits, "goroutines/wait")
	load.kill()
}

// fgHeap is the live heap after a collection.
func fgHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// fgHeapPer is the live heap each of n calls of f leaves behind.
func fgHeapPer(n int, f func()) float64 {
	before := fgHeap()
	for range n {
		f()
	}
	return float64(fgHeap()-before) / float64(n)
}

// Claim release after a SIGKILLed Client: a claim holds an overdue wait;
// its process is killed, and the wait must expire (the call turns pending)
// within the release bound plus 200 ms. The raw primitive is the bound
// itself, NATS's InactiveThreshold.
func BenchmarkForegroundClaimRelease(b *testing.B) {
	const rounds = 5
	w := newFGWorld(b)
	bin := fgProcBinary(b)
	ref := w.live("rel")
	var took []time.Duration
	for round := range rounds {
		// Nobody watches yet: NO_PROVIDER, and the timed wait goes on (W6).
		done := w.askTimed(context.Background(), w.agent, fgTimed("rel", fmt.Sprintf("c%d", round), ref, 5000))
		w.waitsAre(w.worker, 1)
		claimer := fgStart(b, bin, "claimer", "-nats", w.env.Server.ClientURL(), "-creds", w.creds(auth.Gateway), "-session", "rel", "-bound", fgBound.String())
		w.clock.Advance(time.Minute) // overdue, held only by the claim
		fgPendingOnly(b, done)

		killed := time.Now()
		claimer.kill()
		r := fgWait(b, done)
		took = append(took, time.Since(killed))
		require.NoError(b, r.err)
		require.True(b, r.out.Pending)
	}
	worst := slices.Max(took)
	b.ReportMetric(float64(fgQuantile(took, 0.5))/float64(time.Millisecond), "release-p50-ms")
	b.ReportMetric(float64(worst)/float64(time.Millisecond), "release-max-ms")
	b.ReportMetric(float64(fgBound)/float64(time.Millisecond), "bound-ms")
	b.ReportMetric(float64(worst-fgBound)/float64(time.Millisecond), "over-bound-max-ms")
}
