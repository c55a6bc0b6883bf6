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

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/bench"
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
// two connections of the same embedded server, measured by package bench
// as `holdover bench` measures a deployment. Targets: each at most 3× the
// round trip, p99 under 2 ms.
func BenchmarkForegroundLatency(b *testing.B) {
	w := newFGWorld(b) // deadlines on a fake clock never fire
	call := fgBenchCalls(b, w)
	roundTrip, err := bench.RoundTrip(w.conn(), w.conn(), "bench.raw")
	require.NoError(b, err)
	b.ResetTimer()
	rows, err := bench.Foreground(context.Background(), call, roundTrip, b.N)
	b.StopTimer()
	require.NoError(b, err)
	for _, row := range rows {
		b.ReportMetric(fgMicros(row.Path.Quantile(0.5)), row.Key+"-p50-µs")
		b.ReportMetric(fgMicros(row.Path.Quantile(0.99)), row.Key+"-p99-µs")
		b.ReportMetric(row.Ratio(0.5), row.Key+"/raw-p50")
		b.ReportMetric(row.Ratio(0.99), row.Key+"/raw-p99")
	}
	b.ReportMetric(fgMicros(rows[0].Raw.Quantile(0.5)), "raw-rtt-p50-µs")
	b.ReportMetric(fgMicros(rows[0].Raw.Quantile(0.99)), "raw-rtt-p99-µs")
}

// fgBenchCalls watches Session "bench" in w with a Client that answers at
// once (on a gateway's connection) and returns timed calls by w's agent,
// as package bench makes them.
func fgBenchCalls(b *testing.B, w *fgWorld) bench.Call {
	call, stop, err := bench.ForegroundCalls(context.Background(), w.agent, w.answerer(w.as(auth.Gateway)), "bench", w.live("bench"))
	require.NoError(b, err)
	b.Cleanup(stop)
	return call
}

// What authentication costs the foreground path: the same timed calls in a
// world with it on (every part on its role's credentials, every message
// checked against its permissions) and in one without, one call in each by
// turns so both see the same machine. Reported as the p50 and p99 ratios,
// auth on over off, of delivery and of the answer's way back.
func BenchmarkForegroundAuthCost(b *testing.B) {
	open, secure := fgBenchCalls(b, newFGWorldAuth(b, false)), fgBenchCalls(b, newFGWorld(b))
	var on, off [2]bench.Samples
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		d, a, err := open(ctx, i)
		require.NoError(b, err)
		off[0], off[1] = append(off[0], d), append(off[1], a)
		d, a, err = secure(ctx, i)
		require.NoError(b, err)
		on[0], on[1] = append(on[0], d), append(on[1], a)
	}
	b.StopTimer()
	for k, name := range []string{"deliver", "answer"} {
		for _, q := range []float64{0.5, 0.99} {
			b.ReportMetric(float64(on[k].Quantile(q))/float64(off[k].Quantile(q)), fmt.Sprintf("%s-auth/noauth-p%d", name, int(q*100)))
		}
		b.ReportMetric(fgMicros(on[k].Quantile(0.5)), name+"-auth-p50-µs")
		b.ReportMetric(fgMicros(off[k].Quantile(0.5)), name+"-noauth-p50-µs")
	}
}

// fgRawRoundTrip returns a core request-reply round trip between two
// connections of w's server, the primitive the foreground path is built
// on, as package bench times it.
func fgRawRoundTrip(b *testing.B, w *fgWorld) func() time.Duration {
	roundTrip, err := bench.RoundTrip(w.conn(), w.conn(), "bench.raw")
	require.NoError(b, err)
	return func() time.Duration {
		took, err := roundTrip(context.Background())
		require.NoError(b, err)
		return took
	}
}

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
	runWorker(b, svc)
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
