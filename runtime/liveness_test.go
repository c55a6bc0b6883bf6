package runtime_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/runtimetest"
)

// A second instance that opens a Session takes it over: it registers a new
// epoch and repairs the log, the first instance's questions fail
// CALLER_NOT_LIVE, and its next append is fenced out, which stops it (M9).
func TestSecondInstanceFencesOutTheFirst(t *testing.T) {
	h := start(t, "work 1 of 10s\nsay Done.", timed)
	first, err := h.rt.Open(h.ctx, "s1")
	require.NoError(t, err)
	stopped := make(chan error, 1)
	go func() { stopped <- first.Run(h.ctx) }()
	h.steer("s1", "go")
	h.AwaitCount("s1", events.TypeToolCall, 1)
	require.NoError(t, h.clock.BlockUntilContext(h.ctx, 1)) // the first instance is inside a tool call

	other, err := runtime.New(h.ctx, runtime.Config{
		Conn: h.env.Conn, Model: h.model, Questions: h.client, Ask: timedConfig(),
		Clock: h.clock, Logger: quiet(), Instance: "other-runtime",
	})
	require.NoError(t, err)
	second, err := other.Open(h.ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, first.Ref().Epoch+1, second.Ref().Epoch)
	evts := h.Events("s1")
	repair := runtimetest.Last[*events.ToolResult](t, evts)
	require.Equal(t, holdover.CodeToolOutcomeUnknown, repair.Error.Code, "the takeover repairs the call the first instance is still running")

	stale := first.Ref()
	_, err = h.client.AskTimed(h.ctx, holdover.AskTimedRequest{
		Session: "s1", CallID: "from-the-stale-instance", Agent: &stale, TimeoutMs: 1000,
		Questions: []holdover.Question{{ID: "q", Question: "Still there?"}},
	})
	require.Equal(t, holdover.CodeCallerNotLive, holdover.CodeOf(err))

	h.clock.Advance(10 * time.Second) // the first instance's tool returns; its result cannot be appended
	select {
	case err := <-stopped:
		require.Equal(t, holdover.CodeCallerNotLive, holdover.CodeOf(err), "%v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the fenced-out instance kept running")
	}
	require.Equal(t, len(evts), len(h.Events("s1")), "the stale instance appended nothing after the takeover")
}

// The pool answers resume requests (D7): an instance takes the Session,
// registers as its live root and serves it; a request for a Session it
// runs already changes nothing; a clean stop releases the live root.
func TestPoolResumesSessionsOnRequest(t *testing.T) {
	h := start(t, "say Back.")
	pool, leave := context.WithCancel(h.ctx)
	_, err := h.rt.ServePool(pool)
	require.NoError(t, err)

	instance, err := liveroot.RequestResume(h.ctx, h.env.Conn, "s9")
	require.NoError(t, err)
	require.Equal(t, "test-runtime", instance)
	rec, live, err := h.service.Roots().Lookup(h.ctx, "s9")
	require.NoError(t, err)
	require.True(t, live)
	require.Equal(t, instance, rec.Instance)

	again, err := liveroot.RequestResume(h.ctx, h.env.Conn, "s9")
	require.NoError(t, err)
	require.Equal(t, instance, again)
	rec2, _, err := h.service.Roots().Lookup(h.ctx, "s9")
	require.NoError(t, err)
	require.Equal(t, rec.Epoch, rec2.Epoch, "a running Session is not registered again")

	h.steer("s9", "hello")
	evts := h.AwaitCount("s9", events.TypeTurnEnd, 1)
	require.Equal(t, "Back.", events.JoinText(runtimetest.Last[*events.AssistantMessage](t, evts).Content))

	_, err = liveroot.RequestResume(h.ctx, h.env.Conn, "bad.session")
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))

	leave()
	require.Eventually(t, func() bool {
		_, live, err := h.service.Roots().Lookup(h.ctx, "s9")
		return err == nil && !live
	}, 10*time.Second, 5*time.Millisecond, "a clean stop releases the live root")
}

// Close stops the Sessions Start runs and returns once they have released
// their live roots; the Runtime then starts nothing more.
func TestCloseStopsStartedSessions(t *testing.T) {
	h := start(t, "say Hi.")
	h.run("s1")
	h.run("s2")
	h.rt.Close()
	for _, sid := range []string{"s1", "s2"} {
		_, live, err := h.service.Roots().Lookup(h.ctx, sid)
		require.NoError(t, err)
		require.False(t, live, "%s was released before Close returned", sid)
	}
	_, err := h.rt.Start(h.ctx, "s3")
	require.Equal(t, holdover.CodeInternal, holdover.CodeOf(err))
}

// D7: a runtime holds its root lease, lease~root~<instance>, from New to
// Close, so a record naming it is believed only while it runs. Close
// releases its Sessions at once; the lease, which an agent may not delete
// (package auth), ends the release bound later.
func TestRootLeaseLivesFromNewToClose(t *testing.T) {
	h := start(t, "say Hi.")
	leases := liveroot.Leases(h.env.JS)
	alive, err := leases(h.ctx, liveroot.LeaseName("test-runtime"))
	require.NoError(t, err)
	require.True(t, alive, "New holds the root lease before any Session is registered")
	h.run("s1")
	_, state, err := h.service.Roots().Root(h.ctx, "s1", leases)
	require.NoError(t, err)
	require.Equal(t, liveroot.Alive, state)

	h.rt.Close()
	_, state, err = h.service.Roots().Root(h.ctx, "s1", leases)
	require.NoError(t, err)
	require.Equal(t, liveroot.NoRoot, state, "Close releases its Sessions before it returns")
	require.Eventually(t, func() bool {
		alive, err := leases(h.ctx, liveroot.LeaseName("test-runtime"))
		return err == nil && !alive
	}, 15*time.Second, 10*time.Millisecond, "NATS ends the root lease the release bound after Close")
}

// D7: a runtime whose connection is gone (as after a SIGKILL) releases
// nothing, but its root lease ends the release bound later, so its
// Sessions read as lost; stopping it then is quiet, with nothing left to
// release on a closed connection.
func TestRuntimeCutOffLosesItsRoots(t *testing.T) {
	h := start(t, "say Hi.")
	nc, _ := embeddedtest.Connect(t, h.env.Server.ClientURL())
	logs := &syncWriter{w: &bytes.Buffer{}}
	doomed, err := runtime.New(h.ctx, runtime.Config{
		Conn: nc, Model: h.model, Questions: h.client, Clock: h.clock, Instance: "doomed",
		ReleaseBound: time.Second, Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	require.NoError(t, err)
	_, err = doomed.Start(h.ctx, "s1")
	require.NoError(t, err)

	nc.Close()
	leases := liveroot.Leases(h.env.JS)
	require.Eventually(t, func() bool {
		_, state, err := h.service.Roots().Root(h.ctx, "s1", leases)
		return err == nil && state == liveroot.RootLost
	}, patience, 10*time.Millisecond)
	doomed.Close()
	rec, state, err := h.service.Roots().Root(h.ctx, "s1", leases)
	require.NoError(t, err)
	require.Equal(t, liveroot.RootLost, state, "nothing released on the closed connection")
	require.Equal(t, "doomed", rec.Instance)
	require.NotContains(t, logs.String(), "release the live root")
	require.NotContains(t, logs.String(), "root lease")
}

// New refuses an instance id that cannot name its root lease.
func TestInstanceMustNameALease(t *testing.T) {
	h := start(t, "say Hi.")
	_, err := runtime.New(h.ctx, runtime.Config{Conn: h.env.Conn, Model: h.model, Questions: h.client, Instance: "a.b"})
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
}

// syncWriter lets the runtime's goroutines log into one buffer, and the
// test read it while they may still write (the inbox reader's recovery
// can log after Close).
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
