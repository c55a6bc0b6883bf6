package runtime_test

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

	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/model"
	"github.com/holdover-dev/holdover/runtime/model/scripted"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
)

// harness is a real embedded NATS server with the topology, the real
// userQuestions service, and a runtime playing a script. The runtime's
// clock (sleep, run_code) and the service's clock (question deadlines)
// are fake and separate, so a test decides exactly when each moves.
type harness struct {
	t       testing.TB
	ctx     context.Context
	env     *embeddedtest.Env
	clock   *clockwork.FakeClock // the runtime's
	waits   *clockwork.FakeClock // the question service's
	log     *sessionlog.Log
	model   *spy
	client  *userquestions.Client
	rt      *runtime.Runtime
	service *userquestions.Service
	agents  sync.WaitGroup
}

type option func(*runtime.Config)

func timed(cfg *runtime.Config) { cfg.Ask = timedConfig() }

func start(t testing.TB, script string, opts ...option) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	h := &harness{
		t: t, ctx: ctx, env: env,
		clock: clockwork.NewFakeClock(), waits: clockwork.NewFakeClock(),
		log:    sessionlog.New(env.JS, env.Topology.Sessions),
		client: userquestions.NewClient(env.Conn, 0),
	}
	t.Cleanup(h.client.Close)
	h.service = userquestions.New(env.Conn, env.JS, env.Topology, userquestions.Config{
		Foreground: userquestions.ForegroundConfig{Clock: h.waits},
	}, quiet())
	require.NoError(t, h.service.Start(ctx))
	t.Cleanup(h.service.Stop)

	s, err := scripted.Parse(script)
	require.NoError(t, err)
	h.model = &spy{Model: s.Model()}
	cfg := runtime.Config{
		Conn: env.Conn, Model: h.model, ChildModel: s.Child(), Questions: h.client,
		Clock: h.clock, Logger: quiet(), Instance: "test-runtime",
	}
	for _, o := range opts {
		o(&cfg)
	}
	h.rt, err = runtime.New(ctx, cfg)
	require.NoError(t, err)
	// Cleanups run last-in first-out: the agents stop before the service
	// and the server they use.
	t.Cleanup(func() {
		cancel()
		h.agents.Wait()
	})
	return h
}

func timedConfig() askuser.Config { return askuser.Config{Mode: askuser.ModeTimed} }

// runAgent runs an opened agent until the test ends.
func (h *harness) runAgent(a *runtime.Agent) {
	h.agents.Go(func() {
		if err := a.Run(h.ctx); err != nil {
			h.t.Errorf("agent of %s stopped: %v", a.Session(), err)
		}
	})
}

func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(discard{}, &slog.HandlerOptions{Level: slog.LevelError}))
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// run starts Session sid on the harness's runtime until the test ends.
func (h *harness) run(sid string) *runtime.Agent {
	h.t.Helper()
	a, err := h.rt.Start(h.ctx, sid)
	require.NoError(h.t, err)
	return a
}

// steer queues an ordinary user message and returns its id.
func (h *harness) steer(sid, text string) string {
	h.t.Helper()
	id, err := runtime.Steer(h.ctx, h.env.JS, sid, "", text)
	require.NoError(h.t, err)
	return id
}

// events reads Session sid's whole log.
func (h *harness) events(sid string) []events.Event {
	h.t.Helper()
	evts, bad, err := h.log.Read(h.ctx, sid, 0)
	require.NoError(h.t, err)
	require.Empty(h.t, bad)
	return evts
}

// await waits until Session sid's log satisfies done, and returns it.
func (h *harness) await(sid string, what string, done func([]events.Event) bool) []events.Event {
	h.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		evts := h.events(sid)
		switch {
		case done(evts):
			return evts
		case time.Now().After(deadline):
			h.t.Fatalf("waited %s for %s; the log is:\n%s", patience, what, describe(evts))
		}
		time.Sleep(2 * time.Millisecond) // poll the log; JetStream reads are cheap
	}
}

// patience bounds every wait for something that must happen; it only
// turns a hang into a failure.
const patience = 10 * time.Second

// awaitCount waits until the log holds n events of type typ.
func (h *harness) awaitCount(sid string, typ events.Type, n int) []events.Event {
	h.t.Helper()
	return h.await(sid, fmt.Sprintf("%d %s events", n, typ), func(evts []events.Event) bool { return count(evts, typ) >= n })
}

func count(evts []events.Event, typ events.Type) int {
	n := 0
	for _, e := range evts {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// types lists the event types of a log, in order.
func types(evts []events.Event) []events.Type {
	out := make([]events.Type, len(evts))
	for i, e := range evts {
		out[i] = e.Type
	}
	return out
}

func describe(evts []events.Event) string {
	var b strings.Builder
	for _, e := range evts {
		fmt.Fprintf(&b, "  %d %s %s\n", e.Seq, e.Type, e.Data)
	}
	return b.String()
}

// last returns the last event of type typ.
func last[B events.Body](t *testing.T, evts []events.Event) B {
	t.Helper()
	for i := len(evts) - 1; i >= 0; i-- {
		if b, ok := evts[i].Body.(B); ok {
			return b
		}
	}
	var zero B
	t.Fatalf("no %T in the log:\n%s", zero, describe(evts))
	return zero
}

// spy is a model that remembers every request it answered. When hold is
// set (before the agent runs), each answer waits until hold is closed.
type spy struct {
	model.Model
	hold     chan struct{}
	mu       sync.Mutex
	requests []model.Request
}

func (s *spy) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	if s.hold != nil {
		select {
		case <-s.hold:
		case <-ctx.Done():
			return model.Response{}, ctx.Err()
		}
	}
	return s.Model.Complete(ctx, req)
}

func (s *spy) last() model.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[len(s.requests)-1]
}

func (s *spy) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// texts lists the texts of a request's messages with role.
func texts(req model.Request, role model.Role) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role == role {
			out = append(out, m.Text)
		}
	}
	return out
}

func toolNames(req model.Request) []string {
	out := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		out[i] = t.Name
	}
	return out
}
