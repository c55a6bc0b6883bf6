package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/model/scripted"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/worker"
)

// Issue 25: nothing of a Runtime outlives its Close. It is in the resume
// pool and runs a Session whose agent waits on a timed question (its
// caller's call, the inbox reader's consumer, the root lease); once it is
// closed, and the question service it called has stopped, no goroutine
// of theirs runs.
func TestNothingOfARuntimeOutlivesClose(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	rtConn, _ := embeddedtest.Connect(t, env.Server.ClientURL())
	wnc, wjs := embeddedtest.Connect(t, env.Server.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := runtime.Steer(ctx, env.JS, "warm", "", "before the count") // env.Conn's publish replies
	require.NoError(t, err)
	leaks := embeddedtest.Leaks(t, env.Conn, rtConn, wnc)

	svc := worker.New(wnc, wjs, env.Topology, worker.Config{}, quiet())
	running, err := ops.Start(ctx, ops.Component{Name: "userQuestions", Run: svc.Run})
	require.NoError(t, err)
	script, err := scripted.Parse(`ask db "Which database?" options a,b timeout 60
say Done.`)
	require.NoError(t, err)
	rt, err := runtime.New(ctx, runtime.Config{Conn: rtConn, Model: script.Model(), Ask: timedConfig(), Logger: quiet()})
	require.NoError(t, err)
	leave, err := rt.ServePool(ctx)
	require.NoError(t, err)
	_, err = rt.Start(ctx, "s1")
	require.NoError(t, err)
	_, err = runtime.Steer(ctx, env.JS, "s1", "", "Set up the service.")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return svc.LiveWaits() == 1 }, patience, time.Millisecond, "the agent waits on its question")

	leave()
	require.NoError(t, rt.Close())
	require.NoError(t, running.Stop())
	goleak.VerifyNone(t, leaks...)
}
