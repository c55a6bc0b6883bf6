package liveroot_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

func registry(t *testing.T) (*liveroot.Registry, *embeddedtest.Env) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	return liveroot.New(env.Topology.Roots), env
}

func origins() *ops.Origins { return ops.NewOrigins(ops.NewMetrics(), slog.New(slog.DiscardHandler)) }

func ref(instance string, epoch uint64) holdover.AgentRef {
	return holdover.AgentRef{Instance: instance, Epoch: epoch}
}

// M9: only the exact live root asks; a takeover makes the old instance stale.
func TestM9StaleInstanceIsNotLive(t *testing.T) {
	reg, _ := registry(t)
	ctx := context.Background()

	e1, err := reg.Register(ctx, "s1", "runtime-a")
	require.NoError(t, err)
	require.NoError(t, reg.Check(ctx, "s1", ref("runtime-a", e1)))

	e2, err := reg.Register(ctx, "s1", "runtime-b")
	require.NoError(t, err)
	require.Greater(t, e2, e1)

	err = reg.Check(ctx, "s1", ref("runtime-a", e1))
	require.Equal(t, holdover.CodeCallerNotLive, holdover.CodeOf(err))
	require.ErrorContains(t, err, `"runtime-b"`)
	require.NoError(t, reg.Check(ctx, "s1", ref("runtime-b", e2)))

	// The same instance with an old epoch is stale too: it registered again.
	e3, err := reg.Register(ctx, "s1", "runtime-b")
	require.NoError(t, err)
	require.Equal(t, holdover.CodeCallerNotLive, holdover.CodeOf(reg.Check(ctx, "s1", ref("runtime-b", e2))))
	require.NoError(t, reg.Check(ctx, "s1", ref("runtime-b", e3)))
}

func TestM9SessionWithoutRootIsNotLive(t *testing.T) {
	reg, _ := registry(t)
	err := reg.Check(context.Background(), "nobody", ref("runtime-a", 1))
	require.Equal(t, holdover.CodeCallerNotLive, holdover.CodeOf(err))
	_, live, err := reg.Lookup(context.Background(), "nobody")
	require.NoError(t, err)
	require.False(t, live)
}

// M9: a child owned by another agent is DELEGATED_CALLER, told to put the
// question in its final result; resumed as a root, the same Session asks.
func TestM9OwnedChildIsDelegatedUntilResumedAsRoot(t *testing.T) {
	reg, _ := registry(t)
	ctx := context.Background()

	e1, err := reg.RegisterChild(ctx, "child", "runtime-c", "planner")
	require.NoError(t, err)
	err = reg.Check(ctx, "child", ref("runtime-c", e1))
	require.Equal(t, holdover.CodeDelegatedCaller, holdover.CodeOf(err))
	require.ErrorContains(t, err, "final result")
	require.ErrorContains(t, err, `"planner"`)

	// A ref that says it is owned is delegated whatever the registry holds.
	owned := ref("runtime-c", e1)
	owned.Owner = "planner"
	require.Equal(t, holdover.CodeDelegatedCaller, holdover.CodeOf(reg.Check(ctx, "child", owned)))

	// The Session keeps its lineage but is resumed as a new root: it may ask.
	e2, err := reg.Register(ctx, "child", "runtime-d")
	require.NoError(t, err)
	require.NoError(t, reg.Check(ctx, "child", ref("runtime-d", e2)))
	rec, live, err := reg.Lookup(ctx, "child")
	require.NoError(t, err)
	require.True(t, live)
	require.Empty(t, rec.Owner)
}

// D7: a released Session has no live root; epochs keep growing, and a
// stale instance cannot release its successor.
func TestReleaseEndsTheRootAndEpochsKeepGrowing(t *testing.T) {
	reg, _ := registry(t)
	ctx := context.Background()

	e1, err := reg.Register(ctx, "s1", "runtime-a")
	require.NoError(t, err)
	e2, err := reg.Register(ctx, "s1", "runtime-b")
	require.NoError(t, err)
	require.NoError(t, reg.Release(ctx, "s1", ref("runtime-a", e1)), "a stale release is a no-op")
	require.NoError(t, reg.Check(ctx, "s1", ref("runtime-b", e2)))

	require.NoError(t, reg.Release(ctx, "s1", ref("runtime-b", e2)))
	_, live, err := reg.Lookup(ctx, "s1")
	require.NoError(t, err)
	require.False(t, live)
	require.Equal(t, holdover.CodeCallerNotLive, holdover.CodeOf(reg.Check(ctx, "s1", ref("runtime-b", e2))))

	e3, err := reg.Register(ctx, "s1", "runtime-a")
	require.NoError(t, err)
	require.Greater(t, e3, e2, "an epoch never comes back after a release")
}

// Concurrent takeovers each get their own epoch and exactly one is live.
func TestConcurrentRegistrationsGetDistinctEpochs(t *testing.T) {
	reg, _ := registry(t)
	ctx := context.Background()
	const n = 16
	epochs := make([]uint64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			e, err := reg.Register(ctx, "s1", fmt.Sprintf("runtime-%d", i))
			require.NoError(t, err)
			epochs[i] = e
		})
	}
	wg.Wait()
	seen := map[uint64]bool{}
	live := 0
	for i, e := range epochs {
		require.False(t, seen[e], "epoch %d given twice", e)
		seen[e] = true
		if reg.Check(ctx, "s1", ref(fmt.Sprintf("runtime-%d", i), e)) == nil {
			live++
		}
	}
	require.Equal(t, 1, live)
}

func TestBadIdsAreBadRequest(t *testing.T) {
	reg, _ := registry(t)
	ctx := context.Background()
	for _, sid := range []string{"a.b", "*", ">", ""} {
		_, err := reg.Register(ctx, sid, "runtime-a")
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "%q", sid)
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(reg.Check(ctx, sid, ref("runtime-a", 1))), "%q", sid)
	}
	_, err := reg.Register(ctx, "s1", "")
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	_, err = reg.RegisterChild(ctx, "s1", "runtime-a", "")
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
}

// D7: a resume request reaches one runtime of the pool, which registers
// the Session as its live root.
func TestD7ResumeRequestReachesOneRuntime(t *testing.T) {
	reg, env := registry(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var mu sync.Mutex
	took := map[string]int{}
	for _, name := range []string{"runtime-a", "runtime-b"} {
		sub, err := liveroot.ServeResume(ctx, env.Conn, origins(), func(ctx context.Context, sid string) (string, error) {
			mu.Lock()
			took[name]++
			mu.Unlock()
			_, err := reg.Register(ctx, sid, name)
			return name, err
		})
		require.NoError(t, err)
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	require.NoError(t, env.Conn.Flush())

	instance, err := liveroot.RequestResume(ctx, env.Conn, "s1")
	require.NoError(t, err)
	rec, live, err := reg.Lookup(ctx, "s1")
	require.NoError(t, err)
	require.True(t, live)
	require.Equal(t, instance, rec.Instance)
	mu.Lock()
	require.Equal(t, 1, took["runtime-a"]+took["runtime-b"], "a queue group hands the request to one runtime")
	mu.Unlock()

	_, err = liveroot.RequestResume(ctx, env.Conn, "a.b")
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
}

func TestD7ResumeErrorsKeepTheirCode(t *testing.T) {
	_, env := registry(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	_, err := liveroot.RequestResume(ctx, env.Conn, "s1")
	require.Equal(t, holdover.CodeInternal, holdover.CodeOf(err))
	require.ErrorContains(t, err, streams.ResumeSubject, "no runtime listening names the subject")

	sub, err := liveroot.ServeResume(ctx, env.Conn, origins(), func(context.Context, string) (string, error) {
		return "", holdover.New(holdover.CodeConflict, "session is being resumed elsewhere")
	})
	require.NoError(t, err)
	defer func() { _ = sub.Unsubscribe() }()
	_, err = liveroot.RequestResume(ctx, env.Conn, "s1")
	require.Equal(t, holdover.CodeConflict, holdover.CodeOf(err))

	reply, err := env.Conn.RequestWithContext(ctx, streams.ResumeSubject, []byte("{"))
	require.NoError(t, err)
	require.Contains(t, string(reply.Data), string(holdover.CodeBadRequest))
}

// A registry read or a resume request whose context ended is still
// context.Canceled to errors.Is under its code, so a caller shutting down
// can tell its own stop from a registry failure.
func TestRegistryErrorsKeepTheContextsEnd(t *testing.T) {
	reg, env := registry(t)
	_, err := reg.Register(context.Background(), "s1", "rt-1")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	_, _, err = reg.Lookup(ctx, "s1")
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, holdover.CodeInternal, holdover.CodeOf(err))
	_, err = reg.Register(ctx, "s1", "rt-2")
	require.ErrorIs(t, err, context.Canceled)
	_, err = liveroot.RequestResume(ctx, env.Conn, "s1")
	require.ErrorIs(t, err, context.Canceled)
}

// A resume request takes a Session only when a process sent it from its
// own inbox, as the worker does: one without a reply (a stored message a
// direct get replayed), one replying to another service's subject or into
// a stream's, and one from the inbox of a role that may not send it (an
// agent's) take nothing and get no reply, and each is counted.
func TestD7ResumeRefusesRequestsFromElsewhere(t *testing.T) {
	_, env := registry(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := ops.NewMetrics()
	var took []string
	var mu sync.Mutex
	sub, err := liveroot.ServeResume(ctx, env.Conn, ops.NewOrigins(m, slog.New(slog.DiscardHandler)), func(_ context.Context, sid string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		took = append(took, sid)
		return "runtime-a", nil
	})
	require.NoError(t, err)
	defer func() { _ = sub.Unsubscribe() }()
	spy, err := env.Conn.SubscribeSync("holdover.session.s2.>")
	require.NoError(t, err)

	body := []byte(`{"session":"s2"}`)
	for _, reply := range []string{"", "holdover.q.view", "holdover.session.s2.inbox.call_1", "_INBOX.agent.abc.1"} {
		require.NoError(t, env.Conn.PublishMsg(&nats.Msg{Subject: streams.ResumeSubject, Reply: reply, Data: body}))
	}
	require.Eventually(t, func() bool {
		var c dto.Metric
		require.NoError(t, m.RefusedOrigin.WithLabelValues(liveroot.ResumeEndpoint).Write(&c))
		return c.GetCounter().GetValue() == 4
	}, 10*time.Second, 10*time.Millisecond)

	instance, err := liveroot.RequestResume(ctx, env.Conn, "s3")
	require.NoError(t, err, "a request from an inbox is served")
	require.Equal(t, "runtime-a", instance)
	mu.Lock()
	require.Equal(t, []string{"s3"}, took, "no refused request took a Session")
	mu.Unlock()
	_, err = spy.NextMsg(100 * time.Millisecond)
	require.ErrorIs(t, err, nats.ErrTimeout, "no reply went to the stream's subject")
}
