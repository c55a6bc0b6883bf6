package integration

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/model"
	"github.com/holdover-dev/holdover/runtime/model/scripted"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
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
	t      *testing.T
	ctx    context.Context
	env    *embeddedtest.Env
	clock  *clockwork.FakeClock
	log    *sessionlog.Log
	store  *projection.Store
	worker *userquestions.Service
	user   *userquestions.Client
	model  *agentSpy
	script *scripted.Script
	agents sync.WaitGroup
}

func newAgentWorld(t *testing.T, script string) *agentWorld {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	s, err := scripted.Parse(script)
	require.NoError(t, err)
	w := &agentWorld{
		t: t, ctx: ctx, env: env, clock: clockwork.NewFakeClock(),
		log:    sessionlog.New(env.JS, env.Topology.Sessions),
		store:  projection.NewStore(env.JS, env.Topology.Sessions, env.Topology.Questions),
		model:  &agentSpy{Model: s.Model()},
		script: s,
	}
	quiet := slog.New(slog.DiscardHandler)

	nc, js := embeddedtest.Connect(t, env.Server.ClientURL())
	w.worker = userquestions.New(nc, js, env.Topology, userquestions.Config{}, quiet)
	require.NoError(t, w.worker.Start(ctx))
	t.Cleanup(w.worker.Stop)
	folder := projection.NewWorker(projection.NewStore(js, env.Topology.Sessions, env.Topology.Questions), projection.WorkerConfig{Logger: quiet})
	w.agents.Go(func() { _ = folder.Run(ctx) })

	userConn, _ := embeddedtest.Connect(t, env.Server.ClientURL())
	w.user = userquestions.NewClient(userConn, agentPatience)
	t.Cleanup(w.user.Close)
	t.Cleanup(func() { // first: stop the agents before what they use
		cancel()
		w.agents.Wait()
	})
	return w
}

// runtime starts a runtime process on a connection of its own.
func (w *agentWorld) runtime(instance string) *runtime.Runtime {
	w.t.Helper()
	nc, _ := embeddedtest.Connect(w.t, w.env.Server.ClientURL())
	questions := userquestions.NewClient(nc, agentPatience)
	w.t.Cleanup(questions.Close)
	rt, err := runtime.New(w.ctx, runtime.Config{
		Conn: nc, Model: w.model, ChildModel: w.script.Child(), Questions: questions,
		Ask:   askuser.Config{Mode: askuser.ModeTimed},
		Clock: w.clock, Logger: slog.New(slog.DiscardHandler), Instance: instance,
	})
	require.NoError(w.t, err)
	return rt
}

// start runs Session sid on a new runtime until ctx ends and starts its
// first Turn with prompt.
func (w *agentWorld) start(ctx context.Context, sid, prompt string) {
	w.t.Helper()
	rt := w.runtime("runtime-" + sid)
	a, err := rt.Open(ctx, sid)
	require.NoError(w.t, err)
	w.agents.Go(func() {
		if err := a.Run(ctx); err != nil {
			w.t.Errorf("agent of %s stopped: %v", sid, err)
		}
	})
	_, err = runtime.Steer(ctx, w.env.JS, sid, "", prompt)
	require.NoError(w.t, err)
}

func (w *agentWorld) events(sid string) []events.Event {
	w.t.Helper()
	evts, bad, err := w.log.Read(w.ctx, sid, 0)
	require.NoError(w.t, err)
	require.Empty(w.t, bad)
	return evts
}

// await waits until Session sid's log satisfies done.
func (w *agentWorld) await(sid, what string, done func([]events.Event) bool) []events.Event {
	w.t.Helper()
	deadline := time.Now().Add(agentPatience)
	for {
		evts := w.events(sid)
		switch {
		case done(evts):
			return evts
		case time.Now().After(deadline):
			w.t.Fatalf("waited %s for %s; the log is:\n%s", agentPatience, what, agentLog(evts))
		}
		time.Sleep(5 * time.Millisecond) // poll the log; JetStream reads are cheap
	}
}

// awaitTypes waits until the log holds n events of type typ.
func (w *agentWorld) awaitTypes(sid string, typ events.Type, n int) []events.Event {
	w.t.Helper()
	return w.await(sid, fmt.Sprintf("%d %s events", n, typ), func(evts []events.Event) bool { return countTypes(evts, typ) >= n })
}

// working waits until the agent is inside its sleep tool (doing
// independent work while a question is pending) on Session sid.
func (w *agentWorld) working(sid string) {
	w.t.Helper()
	w.await(sid, "a sleep call", func(evts []events.Event) bool { return sleeping(evts) })
	ctx, cancel := context.WithTimeout(w.ctx, agentPatience)
	defer cancel()
	require.NoError(w.t, w.clock.BlockUntilContext(ctx, 1), "the agent never started its independent work")
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

// agentSpy is the scripted model, remembering every request.
type agentSpy struct {
	model.Model
	mu       sync.Mutex
	requests []model.Request
}

func (s *agentSpy) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	return s.Model.Complete(ctx, req)
}

func (s *agentSpy) last() model.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[len(s.requests)-1]
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

func countTypes(evts []events.Event, typ events.Type) int {
	n := 0
	for _, e := range evts {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// lastOf returns the last event body of type B.
func lastOf[B events.Body](t *testing.T, evts []events.Event) B {
	t.Helper()
	for i := len(evts) - 1; i >= 0; i-- {
		if b, ok := evts[i].Body.(B); ok {
			return b
		}
	}
	var zero B
	t.Fatalf("no %T in the log:\n%s", zero, agentLog(evts))
	return zero
}

func agentLog(evts []events.Event) string {
	var b strings.Builder
	for _, e := range evts {
		data := string(e.Data)
		if e.Type == events.TypeRequestHeader {
			data = "…"
		}
		fmt.Fprintf(&b, "  %d %s %s\n", e.Seq, e.Type, data)
	}
	return b.String()
}
