package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// The projection benchmarks run on file storage, as a deployment does,
// with the worker in the benchmark's process. Targets on the 2-core
// reference machine: end-to-end ≥ 20k events/s, p99 lag < 50 ms at 1k
// events/s, rebuild of 1,000 Sessions × 1,000 events < 60 s
// (HOLDOVER_BENCH_REBUILD=1000x1000; the default is small).

// benchEvents returns n events of working agents (mostly tool calls and
// text, a question every few dozen events), spread round-robin over
// sessions Sessions.
func benchEvents(sessions, n int) map[string][]events.Event {
	out := map[string][]events.Event{}
	at := time.Now()
	for i := range sessions {
		sid := "bench-" + strconv.Itoa(i)
		per := n / sessions
		if i < n%sessions {
			per++
		}
		a := newAgentScript(rand.New(rand.NewPCG(1, uint64(i))), sid, working)
		for len(out[sid]) < per {
			out[sid] = append(out[sid], events.New(at, a.script(1)[0].body))
		}
	}
	return out
}

// lastSeqWatcher follows every key's lastSeq in the bucket and calls
// onUpdate for each change, from one goroutine.
func lastSeqWatcher(b *testing.B, kv jetstream.KeyValue, onUpdate func(sid string, lastSeq uint64)) (stop func()) {
	w, err := kv.WatchAll(context.Background(), jetstream.UpdatesOnly())
	require.NoError(b, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for kve := range w.Updates() {
			var v struct {
				LastSeq uint64 `json:"lastSeq"`
			}
			if kve != nil && json.Unmarshal(kve.Value(), &v) == nil {
				onUpdate(kve.Key(), v.LastSeq)
			}
		}
	}()
	return func() { _ = w.Stop(); <-done }
}

// publishAll appends every Session's events, each Session from one of
// publishers goroutines, and returns each Session's last seq.
func publishAll(b *testing.B, log *sessionlog.Log, evs map[string][]events.Event, publishers int) map[string]uint64 {
	sids := slices.Sorted(maps.Keys(evs))
	last := make([]uint64, len(sids))
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for step := 0; ; step++ {
				progressed := false
				for i := p; i < len(sids); i += publishers {
					if step >= len(evs[sids[i]]) {
						continue
					}
					seq, err := log.Append(context.Background(), sids[i], last[i], evs[sids[i]][step])
					if err != nil {
						panic(err)
					}
					last[i], progressed = seq, true
				}
				if !progressed {
					return
				}
			}
		})
	}
	wg.Wait()
	out := map[string]uint64{}
	for i, sid := range sids {
		out[sid] = last[i]
	}
	return out
}

// foldTracker closes settled once every expected Session's stored
// lastSeq has reached its expected seq, whether the write came before or
// after the expectation.
type foldTracker struct {
	mu      sync.Mutex
	have    map[string]uint64
	want    map[string]uint64
	settled chan struct{}
}

func newFoldTracker() *foldTracker {
	return &foldTracker{have: map[string]uint64{}, settled: make(chan struct{})}
}

func (f *foldTracker) expect(want map[string]uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.want = want
	for sid, seq := range f.have {
		f.check(sid, seq)
	}
	f.check("", 0)
}

func (f *foldTracker) update(sid string, lastSeq uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.have[sid] = lastSeq
	f.check(sid, lastSeq)
}

func (f *foldTracker) check(sid string, lastSeq uint64) {
	if f.want == nil {
		return
	}
	if seq, ok := f.want[sid]; ok && lastSeq >= seq {
		delete(f.want, sid)
	}
	if len(f.want) == 0 {
		f.want = nil
		close(f.settled)
	}
}

func benchWorker(b *testing.B, env *embeddedtest.Env) {
	workers := newFleet(b, env.Server.ClientURL(), projection.WorkerConfig{})
	workers.start()
}

// BenchmarkProjectionEndToEnd publishes b.N events over 100 Sessions, each
// from its own writer as each agent writes its own, while one worker folds
// them, and measures from the first append to the last KV write (target
// ≥ 20k events/s).
func BenchmarkProjectionEndToEnd(b *testing.B) {
	env := embeddedtest.Start(b, streams.Config{})
	evs := benchEvents(100, b.N)
	tracker := newFoldTracker()
	stop := lastSeqWatcher(b, env.Topology.Questions, tracker.update)
	defer stop()
	benchWorker(b, env)

	b.ResetTimer()
	last := publishAll(b, sessionlog.New(env.JS, env.Topology.Sessions), evs, len(evs))
	published := b.Elapsed()
	tracker.expect(last)
	<-tracker.settled
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.N)/published.Seconds(), "published/s")
	requireFolded(b, env, last)
}

// BenchmarkProjectionBacklog folds b.N events already in the log: the
// worker's own rate when publishing is not the limit.
func BenchmarkProjectionBacklog(b *testing.B) {
	env := embeddedtest.Start(b, streams.Config{})
	last := publishAll(b, sessionlog.New(env.JS, env.Topology.Sessions), benchEvents(100, b.N), 16)
	tracker := newFoldTracker()
	tracker.expect(last)
	stop := lastSeqWatcher(b, env.Topology.Questions, tracker.update)
	defer stop()

	b.ResetTimer()
	benchWorker(b, env)
	<-tracker.settled
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	requireFolded(b, env, last)
}

// BenchmarkProjectionLag appends b.N events at 1,000 events/s over 20
// Sessions and measures, per event, the time from the start of its append
// to the KV write that folds it (target p99 < 50 ms).
func BenchmarkProjectionLag(b *testing.B) {
	env := embeddedtest.Start(b, streams.Config{})
	log := sessionlog.New(env.JS, env.Topology.Sessions)
	evs := benchEvents(20, b.N)
	sids := slices.Sorted(maps.Keys(evs))
	last := map[string]uint64{}
	var (
		mu    sync.Mutex
		sent  = map[string][]sentEvent{} // per Session, in seq order, not yet folded
		lags  = make([]time.Duration, 0, b.N)
		all   = make(chan struct{})
		count int
	)
	stop := lastSeqWatcher(b, env.Topology.Questions, func(sid string, lastSeq uint64) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		pending := sent[sid]
		n := 0
		for n < len(pending) && pending[n].seq <= lastSeq {
			lags = append(lags, now.Sub(pending[n].at))
			n++
		}
		sent[sid] = pending[n:]
		if count += n; count == b.N {
			close(all)
		}
	})
	defer stop()
	benchWorker(b, env)

	const interval = time.Millisecond
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval))) // pace to 1k events/s
		sid := sids[i%len(sids)]
		ev := evs[sid][0]
		evs[sid] = evs[sid][1:]
		mu.Lock() // the fold may land before Append returns
		at := time.Now()
		seq, err := log.Append(context.Background(), sid, last[sid], ev)
		require.NoError(b, err)
		last[sid] = seq
		sent[sid] = append(sent[sid], sentEvent{seq, at})
		mu.Unlock()
	}
	<-all
	b.StopTimer()
	slices.Sort(lags)
	pct := func(p float64) float64 { return float64(lags[int(p*float64(len(lags)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(pct(1), "max-ms")
}

type sentEvent struct {
	seq uint64
	at  time.Time
}

// BenchmarkProjectionRebuild refolds every Session from an empty bucket.
// HOLDOVER_BENCH_REBUILD=<sessions>x<events> sets the size (default 20x200;
// the target is 1000x1000 in under 60 s).
func BenchmarkProjectionRebuild(b *testing.B) {
	sessions, perSession := 20, 200
	if s := os.Getenv("HOLDOVER_BENCH_REBUILD"); s != "" {
		_, err := fmt.Sscanf(s, "%dx%d", &sessions, &perSession)
		require.NoError(b, err, "HOLDOVER_BENCH_REBUILD=<sessions>x<events>")
	}
	env := embeddedtest.Start(b, streams.Config{})
	total := populate(b, env, sessions, perSession)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		require.NoError(b, env.JS.DeleteKeyValue(ctx, streams.QuestionsBucket))
		topo, err := streams.Provision(ctx, env.JS, streams.Config{})
		require.NoError(b, err)
		store := projection.NewStore(env.JS, topo.Sessions, topo.Questions)
		b.StartTimer()
		stats, err := store.Rebuild(ctx)
		require.NoError(b, err)
		require.Equal(b, projection.RebuildStats{Sessions: sessions, Events: total, Repaired: sessions}, stats)
	}
	b.ReportMetric(float64(total*b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(total), "events/op")
}

// populate writes sessions × perSession scripted events quickly: one
// event of every Session per round, published asynchronously with the
// same headers and fencing as an append, the acks collected per round.
func populate(b *testing.B, env *embeddedtest.Env, sessions, perSession int) int {
	evs := benchEvents(sessions, sessions*perSession)
	sids := slices.Sorted(maps.Keys(evs))
	last := make([]uint64, sessions)
	total := 0
	for round := range perSession {
		futures := make([]jetstream.PubAckFuture, sessions)
		for i, sid := range sids {
			data, err := events.Encode(evs[sid][round])
			require.NoError(b, err)
			subject, _ := streams.EventsSubject(sid)
			msg := nats.NewMsg(subject)
			msg.Data = data
			msg.Header.Set(sessionlog.PrevHeader, strconv.FormatUint(last[i], 10))
			futures[i], err = env.JS.PublishMsgAsync(msg, jetstream.WithExpectLastSequencePerSubject(last[i]))
			require.NoError(b, err)
		}
		for i, f := range futures {
			select {
			case ack := <-f.Ok():
				last[i] = ack.Sequence
				total++
			case err := <-f.Err():
				b.Fatal(err)
			}
		}
	}
	return total
}

// requireFolded checks, outside the timing, that every Session's stored
// View equals the fold of its log.
func requireFolded(b *testing.B, env *embeddedtest.Env, last map[string]uint64) {
	b.StopTimer()
	store := projection.NewStore(env.JS, env.Topology.Sessions, env.Topology.Questions)
	for sid, seq := range last {
		stored, folded, equal, err := store.Check(context.Background(), sid)
		require.NoError(b, err)
		require.Equal(b, seq, folded.LastSeq)
		require.True(b, equal, "session %s: stored at %d, log at %d", sid, stored.LastSeq, folded.LastSeq)
	}
}
