package projection_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/projection/projectiontest"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// workerEnv is a real embedded server with the topology, a store over it,
// and the Session logs a test appended, as the pure fold should see them.
type workerEnv struct {
	*embeddedtest.Env
	store   *projection.Store
	replies *inbox.Replies
	log     *sessionlog.Log
	written map[string][]events.Event
	metrics *ops.Metrics
}

func newWorkerEnv(t *testing.T) *workerEnv {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	return &workerEnv{
		Env:     env,
		store:   projection.NewStore(env.JS, env.Topology.Sessions, env.Topology.Questions),
		replies: inbox.NewReplies(env.JS, env.Topology.Sessions, nil),
		log:     sessionlog.New(env.JS, env.Topology.Sessions),
		written: map[string][]events.Event{},
		metrics: ops.NewMetrics(),
	}
}

// append records bodies as the next events of Session sid.
func (e *workerEnv) append(t *testing.T, sid string, bodies ...events.Body) {
	t.Helper()
	for _, b := range bodies {
		var last uint64
		if n := len(e.written[sid]); n > 0 {
			last = e.written[sid][n-1].Seq
		}
		ev := events.New(t0, b)
		seq, err := e.log.Append(context.Background(), sid, last, ev)
		require.NoError(t, err)
		ev.Seq = seq
		e.written[sid] = append(e.written[sid], ev)
	}
}

func (e *workerEnv) lastSeq(sid string) uint64 {
	log := e.written[sid]
	return log[len(log)-1].Seq
}

// run starts a worker until the test ends or the returned stop is called.
func (e *workerEnv) run(t *testing.T, cfg projection.WorkerConfig) (stop func()) {
	cfg.Metrics = e.metrics
	cfg.Logger = slog.New(slog.DiscardHandler)
	running := opstest.Start(t, ops.Component{Name: "projection", Run: projection.NewWorker(e.store, e.replies, cfg).Run})
	return func() { require.NoError(t, running.Stop()) }
}

// waitFolded waits until Session sid's stored View has folded seq.
func (e *workerEnv) waitFolded(t *testing.T, sid string, seq uint64) jetstream.KeyValueEntry {
	t.Helper()
	return projectiontest.Folded(t, e.Topology.Questions, sid, seq)
}

// watchFolded is projectiontest.Folded on any bucket, for tests without a
// workerEnv.
func watchFolded(t *testing.T, kv jetstream.KeyValue, sid string, seq uint64) jetstream.KeyValueEntry {
	t.Helper()
	return projectiontest.Folded(t, kv, sid, seq)
}

func storedView(t *testing.T, kve jetstream.KeyValueEntry) projection.View {
	t.Helper()
	var v projection.View
	require.NoError(t, json.Unmarshal(kve.Value(), &v))
	return v
}

// D1: the worker folds each Session's log into userQuestions under the
// Session id, as readable JSON with [] lists and the last folded seq.
func TestWorkerFoldsSessionLogsIntoTheBucket_D1(t *testing.T) {
	e := newWorkerEnv(t)
	e.append(t, "s1", timedHeader(), ask("c1"), pending("c1"), ask("c2"))
	e.append(t, "s2", &events.TurnStart{Turn: "t"}, &events.TurnEnd{Turn: "t"})
	stop := e.run(t, projection.WorkerConfig{})

	for _, sid := range []string{"s1", "s2"} {
		kve := e.waitFolded(t, sid, e.lastSeq(sid))
		assert.Equal(t, projection.Fold(e.written[sid]), storedView(t, kve))
	}
	kve := e.waitFolded(t, "s2", e.lastSeq("s2"))
	assert.JSONEq(t, `{"active":[],"settled":[],"timed":false,"lastSeq":`+jsonNumber(e.lastSeq("s2"))+`}`, string(kve.Value()))
	assert.Contains(t, string(kve.Value()), `{"active":[],"settled":[]`, "values are compact JSON an operator can read")

	s1 := storedView(t, e.waitFolded(t, "s1", e.lastSeq("s1")))
	assert.Equal(t, []string{"c1", "c2"}, activeIDs(s1))
	assert.Equal(t, projection.Continued, statusOf(t, s1, "c1"))
	stop() // counters move after the write is visible; a stopped worker has counted its last batch
	assert.Equal(t, float64(6), value(e.metrics.EventsFolded.WithLabelValues(projection.DefaultDurable)))
}

func jsonNumber(n uint64) string {
	data, _ := json.Marshal(n)
	return string(data)
}

// A redelivered event is at or before the stored LastSeq: the worker
// acknowledges it without writing, so the revision does not move.
func TestWorkerIsIdempotentUnderRedelivery(t *testing.T) {
	e := newWorkerEnv(t)
	e.append(t, "quiet", timedHeader(), ask("c1"), pending("c1"))
	e.append(t, "busy", timedHeader(), ask("c1"))
	stop := e.run(t, projection.WorkerConfig{})
	quiet := e.waitFolded(t, "quiet", e.lastSeq("quiet"))
	e.waitFolded(t, "busy", e.lastSeq("busy"))
	stop()

	// Forget every delivery: the next worker is handed the whole log again.
	require.NoError(t, e.JS.DeleteConsumer(context.Background(), streams.SessionsStream, projection.DefaultDurable))
	e.run(t, projection.WorkerConfig{})
	e.append(t, "busy", answered("c1", bothAnswered...))
	busy := e.waitFolded(t, "busy", e.lastSeq("busy"))

	assert.Equal(t, projection.Fold(e.written["busy"]), storedView(t, busy))
	assert.Equal(t, []string{"c1"}, settledIDs(storedView(t, busy)))
	again, err := e.Topology.Questions.Get(context.Background(), "quiet")
	require.NoError(t, err)
	assert.Equal(t, quiet.Revision(), again.Revision(), "redelivered events caused no write")
	assert.Zero(t, value(e.metrics.KVConflicts.WithLabelValues(streams.QuestionsBucket)))
}

// An operator who deletes the shared consumer under running workers
// replays the log through them: the worker creates the consumer again,
// and every event already folded is acknowledged without a write.
func TestWorkerRecreatesADeletedConsumer(t *testing.T) {
	e := newWorkerEnv(t)
	e.append(t, "quiet", timedHeader(), ask("c1"))
	e.append(t, "busy", timedHeader(), ask("c1"))
	e.run(t, projection.WorkerConfig{RetryDelay: 10 * time.Millisecond})
	quiet := e.waitFolded(t, "quiet", e.lastSeq("quiet"))
	e.waitFolded(t, "busy", e.lastSeq("busy"))

	require.NoError(t, e.JS.DeleteConsumer(context.Background(), streams.SessionsStream, projection.DefaultDurable))
	e.append(t, "busy", pending("c1"))
	busy := e.waitFolded(t, "busy", e.lastSeq("busy"))
	assert.Equal(t, projection.Fold(e.written["busy"]), storedView(t, busy))
	again, err := e.Topology.Questions.Get(context.Background(), "quiet")
	require.NoError(t, err)
	assert.Equal(t, quiet.Revision(), again.Revision(), "the replay wrote nothing it had folded")
}

// When a delivered event does not directly follow the stored View (its
// predecessors were acknowledged elsewhere but their fold never written),
// the worker reads the gap from the log before folding it.
func TestWorkerCatchesUpWhenPrevIsNotTheStoredSeq(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := context.Background()
	e.append(t, "s", timedHeader(), ask("c1"), pending("c1"))

	// Consume the first three events without folding them.
	cons, err := e.Topology.Sessions.CreateOrUpdateConsumer(ctx, projection.WorkerConfig{}.ConsumerConfig())
	require.NoError(t, err)
	batch, err := cons.FetchNoWait(10)
	require.NoError(t, err)
	n := 0
	for m := range batch.Messages() {
		require.NoError(t, m.DoubleAck(ctx))
		n++
	}
	require.Equal(t, 3, n)

	e.append(t, "s", admitted("r1", "c1", bothAnswered))
	stop := e.run(t, projection.WorkerConfig{})
	v := storedView(t, e.waitFolded(t, "s", e.lastSeq("s")))
	stop()

	assert.Equal(t, projection.Fold(e.written["s"]), v)
	assert.Equal(t, []string{"c1"}, settledIDs(v), "the late reply settled the call opened in the gap (D5)")
	assert.Equal(t, float64(1), value(e.metrics.CatchUps.WithLabelValues(projection.DefaultDurable)))
}

// A restarted worker resumes from the shared consumer: events folded
// before the restart are not delivered again.
func TestWorkerResumesWithoutRefolding(t *testing.T) {
	e := newWorkerEnv(t)
	e.append(t, "s", timedHeader(), ask("c1"))
	stop := e.run(t, projection.WorkerConfig{})
	e.waitFolded(t, "s", e.lastSeq("s"))
	stop()
	before := value(e.metrics.EventsFolded.WithLabelValues(projection.DefaultDurable))

	e.append(t, "s", pending("c1"))
	stop = e.run(t, projection.WorkerConfig{})
	v := storedView(t, e.waitFolded(t, "s", e.lastSeq("s")))
	stop()
	assert.Equal(t, projection.Fold(e.written["s"]), v)
	assert.Equal(t, before+1, value(e.metrics.EventsFolded.WithLabelValues(projection.DefaultDurable)))
	assert.Zero(t, value(e.metrics.CatchUps.WithLabelValues(projection.DefaultDurable)))
}

// A stored value that is not a View (an operator's hand edit, say) is
// overwritten by a refold of the Session's log.
func TestWorkerRefoldsAnUnreadableStoredValue(t *testing.T) {
	e := newWorkerEnv(t)
	_, err := e.Topology.Questions.Put(context.Background(), "s", []byte("not a view"))
	require.NoError(t, err)
	e.append(t, "s", timedHeader(), ask("c1"))
	e.run(t, projection.WorkerConfig{})
	v := storedView(t, e.waitFolded(t, "s", e.lastSeq("s")))
	assert.Equal(t, projection.Fold(e.written["s"]), v)
	assert.Equal(t, float64(1), value(e.metrics.Errors.WithLabelValues("projection", string(holdover.CodeInternal))))
}

// D6 needs the projection as of the Session's last event, even when no
// worker has folded it yet.
func TestCaughtUpIncludesEventsNotYetWritten(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := context.Background()
	e.append(t, "s", timedHeader(), ask("c1"))
	stop := e.run(t, projection.WorkerConfig{})
	e.waitFolded(t, "s", e.lastSeq("s"))
	stop()
	e.append(t, "s", pending("c1"))

	stored, found, err := e.store.Get(ctx, "s")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, projection.Open, statusOf(t, stored, "c1"), "the bucket is behind")
	v, err := e.store.CaughtUp(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, projection.Fold(e.written["s"]), v)
	assert.Equal(t, projection.Continued, statusOf(t, v, "c1"))

	none, err := e.store.CaughtUp(ctx, "nobody")
	require.NoError(t, err)
	assert.Equal(t, projection.New(), none)
}

// Check compares the bucket with the fold of the log; Rebuild repairs
// every Session whose value is wrong or unreadable and leaves right ones.
func TestCheckAndRebuild(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := context.Background()
	e.append(t, "right", timedHeader(), ask("c1"))
	e.append(t, "wrong", timedHeader(), ask("c1"), pending("c1"))
	e.append(t, "garbled", timedHeader(), ask("c1"))
	e.append(t, "missing", timedHeader(), ask("c1"))
	stop := e.run(t, projection.WorkerConfig{})
	for _, sid := range []string{"right", "wrong", "garbled", "missing"} {
		e.waitFolded(t, sid, e.lastSeq(sid))
	}
	stop()
	wrong := projection.Fold(e.written["wrong"][:2])
	data, err := json.Marshal(wrong)
	require.NoError(t, err)
	_, err = e.Topology.Questions.Put(ctx, "wrong", data)
	require.NoError(t, err)
	_, err = e.Topology.Questions.Put(ctx, "garbled", []byte("{"))
	require.NoError(t, err)
	require.NoError(t, e.Topology.Questions.Delete(ctx, "missing"))

	for sid, want := range map[string]bool{"right": true, "wrong": false, "garbled": false, "missing": false} {
		stored, folded, equal, err := e.store.Check(ctx, sid)
		require.NoError(t, err)
		assert.Equal(t, want, equal, sid)
		assert.Equal(t, projection.Fold(e.written[sid]), folded, sid)
		if sid == "wrong" {
			assert.Equal(t, wrong, stored)
		}
	}
	_, _, err = e.store.Get(ctx, "garbled")
	assert.Equal(t, holdover.CodeInternal, holdover.CodeOf(err), "Get names an unreadable value")

	stats, err := e.store.Rebuild(ctx)
	require.NoError(t, err)
	assert.Equal(t, projection.RebuildStats{Sessions: 4, Events: 2 + 3 + 2 + 2, Repaired: 3}, stats)
	for sid := range e.written {
		_, folded, equal, err := e.store.Check(ctx, sid)
		require.NoError(t, err)
		assert.True(t, equal, sid)
		assert.Equal(t, projection.Fold(e.written[sid]), folded)
	}
}

func TestStoreRejectsInvalidSessionIDs(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := context.Background()
	for _, sid := range []string{"", "a.b", "*", ">", "a b"} {
		_, _, err := e.store.Get(ctx, sid)
		assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "Get %q", sid)
		_, err = e.store.CaughtUp(ctx, sid)
		assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "CaughtUp %q", sid)
		_, _, _, err = e.store.Check(ctx, sid)
		assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "Check %q", sid)
	}
}

func TestWorkerRunsOnceAtATime(t *testing.T) {
	e := newWorkerEnv(t)
	w := projection.NewWorker(e.store, e.replies, projection.WorkerConfig{Logger: slog.New(slog.DiscardHandler)})
	opstest.Start(t, ops.Component{Name: "projection", Run: w.Run}) // ready: consuming
	assert.Equal(t, holdover.CodeConflict, holdover.CodeOf(w.Run(context.Background(), func() {})))
}

// value reads a counter.
func value(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}
