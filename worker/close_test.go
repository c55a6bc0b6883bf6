package worker_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/projection/projectiontest"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/steer/steertest"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/worker"
)

// Issue 25: nothing of the service outlives its Run. It served a timed
// call a Client claimed and answered, one that went pending, and a late
// answer whose Session no runtime serves (its follow-up keeps asking the
// resume pool); once it stops, and the caller and answerer that used it
// are closed, no goroutine of theirs runs.
func TestNothingOfTheServiceOutlivesItsRun(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	wnc, wjs := embeddedtest.Connect(t, env.Server.ClientURL())
	anc, _ := embeddedtest.Connect(t, env.Server.ClientURL())
	gnc, _ := embeddedtest.Connect(t, env.Server.ClientURL())
	q1 := steertest.Questions("q1")
	// Before the count: writing the log opens env.Conn's publish replies,
	// and the View folded (here, by a projection worker that stops) spares
	// the late answer a read of the log, whose last fetch outlives the
	// read by up to its wait (sessionlog).
	last := steertest.NewSession(t, sessionlog.New(env.JS, env.Topology.Sessions), "s2").Continued("c1", q1)
	views := projection.NewStore(env.JS, env.Topology.Sessions, env.Topology.Questions)
	folding := opstest.Start(t, ops.Component{Name: "projection", Run: projection.NewWorker(views, inbox.NewReplies(env.JS, env.Topology.Sessions, views), projection.WorkerConfig{Logger: slog.New(slog.DiscardHandler)}).Run})
	projectiontest.Folded(t, env.Topology.Questions, "s2", last)
	require.NoError(t, folding.Stop())
	leaks := embeddedtest.Leaks(t, env.Conn, wnc, anc, gnc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)

	svc := worker.New(wnc, wjs, env.Topology, worker.Config{ReleaseBound: time.Second}, quiet)
	running, err := ops.Start(ctx, ops.Component{Name: "userQuestions", Run: svc.Run})
	require.NoError(t, err)
	agent, err := caller.New(ctx, anc, caller.Config{ReleaseBound: time.Second, Log: quiet})
	require.NoError(t, err)
	ans, err := answerer.New(gnc, answerer.Config{ReleaseBound: time.Second, Log: quiet})
	require.NoError(t, err)
	answering := &answerFirst{answers: steertest.Choose(q1), claims: make(chan *answerer.Claim, 1)}
	watch, err := ans.Watch(ctx, "s1", answering)
	require.NoError(t, err)

	epoch, err := svc.Roots().Register(ctx, "s1", "runtime-s1")
	require.NoError(t, err)
	ref := &holdover.AgentRef{Instance: "runtime-s1", Epoch: epoch}
	out, err := agent.AskTimed(ctx, holdover.AskTimedRequest{Session: "s1", CallID: "c1", Agent: ref, Questions: q1, TimeoutMs: 60_000})
	require.NoError(t, err)
	assert.False(t, out.Pending, "claimed and answered")
	out, err = agent.AskTimed(ctx, holdover.AskTimedRequest{Session: "s1", CallID: "c2", Agent: ref, Questions: q1, TimeoutMs: 1})
	require.NoError(t, err)
	assert.True(t, out.Pending)

	res, err := ans.Answer(ctx, holdover.AnswerRequest{Session: "s2", CallID: "c1", Answers: steertest.Choose(q1)})
	require.NoError(t, err)
	require.True(t, res.Accepted)

	// Letting go of the claim of the answered call is the answerer's, as
	// a gateway does once the request ended.
	require.NoError(t, (<-answering.claims).Release(ctx))
	require.NoError(t, watch.Close(ctx))
	ans.Close()
	require.NoError(t, agent.Close())
	require.NoError(t, running.Stop())
	goleak.VerifyNone(t, leaks...)
}

// answerFirst claims the request of call c1 and answers it.
type answerFirst struct {
	answers []holdover.Answer
	claims  chan *answerer.Claim
}

func (a *answerFirst) Request(d *answerer.Delivery) {
	if d.Wait == nil || d.Wait.CallID != "c1" {
		return // c2 goes pending
	}
	if claim, err := d.AttachWait(context.Background()); err == nil {
		a.claims <- claim
		_ = d.Settle(a.answers)
	}
}

func (a *answerFirst) Cancel(*answerer.Delivery, string) {}
