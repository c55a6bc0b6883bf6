package projection_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/streams"
)

// D6: CaughtUp reads the stored View and the Session's last seq together
// through direct gets; streams provisioned without direct gets (an older
// deployment, say) give the same View the ordinary way.
func TestCaughtUpWithoutDirectGets(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := context.Background()
	e.append(t, "s", timedHeader(), ask("c1"))
	stop := e.run(t, projection.WorkerConfig{})
	e.waitFolded(t, "s", e.lastSeq("s"))
	stop()
	e.append(t, "s", pending("c1"))

	for _, name := range []string{streams.SessionsStream, "KV_" + streams.QuestionsBucket} {
		s, err := e.Env.JS.Stream(ctx, name)
		require.NoError(t, err)
		cfg := s.CachedInfo().Config
		cfg.AllowDirect = false
		_, err = e.Env.JS.UpdateStream(ctx, cfg)
		require.NoError(t, err)
	}
	sessions, err := e.Env.JS.Stream(ctx, streams.SessionsStream)
	require.NoError(t, err)
	questions, err := e.Env.JS.KeyValue(ctx, streams.QuestionsBucket)
	require.NoError(t, err)
	store := projection.NewStore(e.Env.JS, sessions, questions)

	v, err := store.CaughtUp(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, projection.Fold(e.written["s"]), v)
	assert.Equal(t, projection.Continued, statusOf(t, v, "c1"))
	none, err := store.CaughtUp(ctx, "nobody")
	require.NoError(t, err)
	assert.Equal(t, projection.New(), none)
}

// A deleted View reads as none, as the bucket's Get has it.
func TestCaughtUpAfterTheViewIsDeleted(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := context.Background()
	e.foldedByAStoppedWorker(t, "s", timedHeader(), ask("c1"), pending("c1"))
	require.NoError(t, e.Env.Topology.Questions.Delete(ctx, "s"))
	_, err := e.Env.Topology.Questions.Get(ctx, "s")
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound)

	fresh := projection.NewStore(e.Env.JS, e.Env.Topology.Sessions, e.Env.Topology.Questions) // one that reads the bucket
	v, err := fresh.CaughtUp(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, projection.Fold(e.written["s"]), v, "folded from the start of the log")
}

// D6: a Store that wrote a Session's View as of the log's last event
// answers CaughtUp with it after one read of the log's last seq, without
// reading the bucket; once the log has moved on it reads again.
func TestCaughtUpChecksTheViewItWroteAgainstTheLog(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := context.Background()
	e.foldedByAStoppedWorker(t, "s", timedHeader(), ask("c1"), pending("c1"))
	require.NoError(t, e.Env.JS.DeleteKeyValue(ctx, streams.QuestionsBucket))

	v, err := e.store.CaughtUp(ctx, "s")
	require.NoError(t, err, "the bucket is gone, and not read")
	assert.Equal(t, projection.Fold(e.written["s"]), v)
	_, err = projection.NewStore(e.Env.JS, e.Env.Topology.Sessions, e.Env.Topology.Questions).CaughtUp(ctx, "s")
	require.Error(t, err, "a Store that did not write the View reads the bucket")

	e.append(t, "s", spliced("m1", "c1", bothAnswered))
	_, err = e.store.CaughtUp(ctx, "s")
	require.Error(t, err, "behind the log: the bucket is read again")
	_, err = streams.Provision(ctx, e.Env.JS, streams.Config{Memory: true})
	require.NoError(t, err)
	v, err = e.store.CaughtUp(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, projection.Fold(e.written["s"]), v)
}

// D6: the View a Store wrote is kept as a copy of its own and handed out
// as another, so a caller that changes what CaughtUp returned (a late
// answer building its reply from the call's questions) changes nothing
// the next answer checks; and the copy says what the bucket stores.
func TestCaughtUpHandsOutCopiesOfTheViewItWrote(t *testing.T) {
	e := newWorkerEnv(t)
	ctx := context.Background()
	e.foldedByAStoppedWorker(t, "s", timedHeader(), ask("c1"), pending("c1"))
	want := projection.Fold(e.written["s"])
	require.NotEmpty(t, want.Active)
	require.NotEmpty(t, want.Active[0].Questions)

	v, err := e.store.CaughtUp(ctx, "s")
	require.NoError(t, err)
	stored, err := e.Env.Topology.Questions.Get(ctx, "s")
	require.NoError(t, err)
	encoded, err := json.Marshal(v)
	require.NoError(t, err)
	assert.JSONEq(t, string(stored.Value()), string(encoded), "the kept copy is what the bucket stores")

	v.Active[0].Questions[0].Question = "changed by a caller"
	v.Active[0].Status = projection.Open
	v.Active = append(v.Active[:0], projection.Call{CallID: "other"})
	again, err := e.store.CaughtUp(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, want, again, "a caller's change to its View reaches no other caller")
}

// foldedByAStoppedWorker appends bodies to sid, runs a worker until it has
// stored sid's View, and stops it.
func (e *workerEnv) foldedByAStoppedWorker(t *testing.T, sid string, bodies ...events.Body) {
	t.Helper()
	e.append(t, sid, bodies...)
	stop := e.run(t, projection.WorkerConfig{})
	e.waitFolded(t, sid, e.lastSeq(sid))
	stop()
}

// A Store read whose context ended is still context.Canceled to errors.Is
// however deep the read was: the bucket, the log or the stream scan.
func TestStoreReadsKeepTheContextsEnd(t *testing.T) {
	e := newWorkerEnv(t)
	e.append(t, "s", timedHeader(), ask("c1"))
	fresh := projection.NewStore(e.Env.JS, e.Env.Topology.Sessions, e.Env.Topology.Questions)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	_, err := fresh.CaughtUp(ctx, "s")
	require.ErrorIs(t, err, context.Canceled)
	_, err = fresh.Rebuild(ctx)
	require.ErrorIs(t, err, context.Canceled)
	_, err = fresh.Sessions(ctx)
	require.ErrorIs(t, err, context.Canceled)
}
