package integration

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/logcheck"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/model"
	"github.com/holdover-dev/holdover/runtime/model/scripted"
	"github.com/holdover-dev/holdover/runtime/runtimetest"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/worker"
)

// agentPatience bounds every wait for something that must happen; it only
// turns a hang into a failure.
const agentPatience = 20 * time.Second

// agentWorld is the whole system but the UI, on one real embedded server:
// a question worker (the userQuestions service and the projection worker)
// on its own connection, a Go agent runtime on another, and the user's
// late-answer client on a third. Question deadlines run on real time; the
// runtime's clock, which paces the scripted agent's independent work
// (sleep), is fake, so a test decides when each step ends.
type agentWorld struct {
	*runtimetest.Logs // reads and awaits the Session logs
	t                 *testing.T
	ctx               context.Context
	env               *embeddedtest.Env
	clock             *clockwork.FakeClock
	store             *projection.Store
	worker            *runningWorker
	user              *answerer.Client
	model             *runtimetest.Spy
	script            *scripted.Script
	agents            sync.WaitGroup
}

func newAgentWorld(t *testing.T, script string) *agentWorld {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	env := embeddedtest.StartSecure(t, streams.Config{Memory: true})
	s, err := scripted.Parse(script)
	require.NoError(t, err)
	w := &agentWorld{
		t: t, ctx: ctx, env: env, clock: clockwork.NewFakeClock(),
		Logs:   runtimetest.NewLogs(t, ctx, sessionlog.New(env.JS, env.Topology.Sessions), agentPatience),
		store:  projection.NewStore(env.JS, env.Topology.Sessions, env.Topology.Questions),
		model:  &runtimetest.Spy{Model: s.Model()},
		script: s,
	}
	quiet := slog.New(slog.DiscardHandler)

	// Every part on its own role's credentials; the test's own reads and
	// its prompts (a user's messages) are an admin's.
	nc, js := env.As(t, auth.Worker)
	top, err := streams.Open(ctx, js)
	require.NoError(t, err)
	folder := projection.NewWorker(projection.NewStore(js, top.Sessions, top.Questions), inbox.NewReplies(js, top.Sessions, nil), projection.WorkerConfig{Logger: quiet})
	opstest.Start(t, ops.Component{Name: "projection", Run: folder.Run})
	w.worker = runWorker(t, worker.New(nc, js, top, worker.Config{}, quiet))

	userConn, _ := env.As(t, auth.Gateway)
	w.user = newUser(t, userConn, agentPatience)
	t.Cleanup(func() { // first: stop the agents before what they use
		cancel()
		w.agents.Wait()
	})
	return w
}

// asker returns a service client that asks as an agent does (asking is an
// agent's right), on a connection of its own.
func (w *agentWorld) asker() *caller.Client {
	w.t.Helper()
	nc, _ := w.env.As(w.t, auth.Agent)
	return newCaller(w.t, nc, caller.Config{CallTimeout: agentPatience})
}

// runtime starts a runtime process on a connection of its own.
func (w *agentWorld) runtime(instance string) *runtime.Runtime {
	w.t.Helper()
	nc, _ := w.env.As(w.t, auth.Agent)
	questions := newCaller(w.t, nc, caller.Config{CallTimeout: agentPatience})
	rt, err := runtime.New(w.ctx, runtime.Config{
		Conn: nc, Model: w.model, ChildModel: w.script.Child(), Questions: questions,
		Ask:   askuser.Config{Mode: askuser.ModeTimed},
		Clock: w.clock, Logger: slog.New(slog.DiscardHandler), Instance: instance,
	})
	require.NoError(w.t, err)
	return rt
}

// start runs Session sid's agent on a runtime of its own until ctx or the
// test ends, and starts its first Turn with prompt. The agent stops before
// the connections it uses close, wherever the test left it: a test may
// end with a question still open.
func (w *agentWorld) start(ctx context.Context, sid, prompt string) {
	w.t.Helper()
	rt := w.runtime("runtime-" + sid)
	ctx, cancel := context.WithCancel(ctx)
	a, err := rt.Open(ctx, sid)
	require.NoError(w.t, err)
	var running sync.WaitGroup
	running.Go(func() {
		if err := a.Run(ctx); err != nil {
			w.t.Errorf("agent of %s stopped: %v", sid, err)
		}
	})
	// Registered after w.runtime's connections, so it runs before they
	// close.
	w.t.Cleanup(func() {
		cancel()
		running.Wait()
	})
	_, err = runtime.Steer(ctx, w.env.JS, sid, "", prompt)
	require.NoError(w.t, err)
}

// working waits until the agent is inside its sleep tool (doing
// independent work while a question is pending) on Session sid.
func (w *agentWorld) working(sid string) {
	w.t.Helper()
	w.Await(sid, "a sleep call", func(evts []events.Event) bool { return sleeping(evts) })
	ctx, cancel := context.WithTimeout(w.ctx, agentPatience)
	defer cancel()
	require.NoError(w.t, w.clock.BlockUntilContext(ctx, 1), "the agent never started its independent work")
}

// answerFirst makes a Client watching sid settle the first request it
// sees with answers; the channel gets the outcome of that settle.
func (w *agentWorld) answerFirst(sid string, answers []holdover.Answer) <-chan error {
	w.t.Helper()
	return answerFirstOn(w.t, w.env.Conn, sid, answers)
}

// answerFirstOn makes a Client on nc watching sid settle the first request
// it sees with answers; the channel gets the outcome of that settle.
func answerFirstOn(t testing.TB, nc *nats.Conn, sid string, answers []holdover.Answer) <-chan error {
	t.Helper()
	client := settleFirst{answers: answers, errs: make(chan error, 1)}
	a, err := answerer.New(nc, answerer.Config{Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	watch, err := a.Watch(context.Background(), sid, client)
	require.NoError(t, err)
	t.Cleanup(func() { _ = watch.Close(context.Background()) })
	return client.errs
}

// answer sends a late answer as the user's Client does (D6).
func (w *agentWorld) answer(sid, callID string, answers ...holdover.Answer) (holdover.AnswerResult, error) {
	return w.user.Answer(w.ctx, holdover.AnswerRequest{Session: sid, CallID: callID, Answers: answers})
}

// projected waits until the stored userQuestions projection of sid equals
// the fold of its log, as `holdover inspect` checks, and returns it.
func (w *agentWorld) projected(sid string) projection.View {
	w.t.Helper()
	var stored, folded projection.View
	require.Eventually(w.t, func() bool {
		var equal bool
		var err error
		stored, folded, equal, err = w.store.Check(w.ctx, sid)
		return err == nil && equal
	}, agentPatience, 5*time.Millisecond, "the projection of %s never equalled the fold of its log:\nstored %+v\nfolded %+v", sid, stored, folded)
	return stored
}

// fitsSchemas checks that every event the Go runtime recorded in sid fits
// the protocol's schemas and reaches the fold (issue 8): what Holdover
// writes is what it tells other runtimes to write.
func (w *agentWorld) fitsSchemas(sid string) {
	w.t.Helper()
	log, err := sessionlog.New(w.env.JS, w.env.Topology.Sessions).ReadStored(w.ctx, sid, 0)
	require.NoError(w.t, err)
	require.NotEmpty(w.t, log)
	report, err := logcheck.Check(log)
	require.NoError(w.t, err)
	require.Empty(w.t, report.Problems, "session %s", sid)
	require.Empty(w.t, report.Unread, "the runtime records only types Holdover reads")
}

// lateReplies returns the late answers a request showed the model: user
// messages whose text is an answer_to_pending_question.
func lateReplies(req model.Request) []events.Reply {
	var out []events.Reply
	for _, m := range req.Messages {
		if r, err := events.ParseReply(m.Text); m.Role == model.User && err == nil {
			out = append(out, r)
		}
	}
	return out
}

// sleeping reports whether the log's last tool call is a sleep that has no
// result yet.
func sleeping(evts []events.Event) bool {
	for i := len(evts) - 1; i >= 0; i-- {
		switch b := evts[i].Body.(type) {
		case *events.ToolResult:
			return false
		case *events.ToolCall:
			return b.Name == runtime.SleepTool
		}
	}
	return false
}
