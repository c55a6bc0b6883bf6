package runtime_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/model"
	"github.com/holdover-dev/holdover/runtime/model/scripted"
	"github.com/holdover-dev/holdover/runtime/runtimetest"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/worker"
)

// harness is a real embedded NATS server with the topology, the real
// userQuestions service, and a runtime playing a script. The runtime's
// clock (sleep, run_code) and the service's clock (question deadlines)
// are fake and separate, so a test decides exactly when each moves.
type harness struct {
	*runtimetest.Logs // reads and awaits the Session logs
	t                 testing.TB
	ctx               context.Context
	env               *embeddedtest.Env
	clock             *clockwork.FakeClock // the runtime's
	waits             *clockwork.FakeClock // the question service's
	log               *sessionlog.Log
	model             *runtimetest.Spy
	client            *caller.Client
	rt                *runtime.Runtime
	service           *worker.Worker
	metrics           *ops.Metrics // the runtime's
	agents            sync.WaitGroup
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
		log:     sessionlog.New(env.JS, env.Topology.Sessions),
		client:  newCaller(t, env.Conn),
		metrics: ops.NewMetrics(),
	}
	h.Logs = runtimetest.NewLogs(t, ctx, h.log, patience)
	t.Cleanup(func() { require.NoError(t, h.client.Close()) })
	h.service = worker.New(env.Conn, env.JS, env.Topology, worker.Config{
		Clock: h.waits,
	}, quiet())
	opstest.Start(t, ops.Component{Name: "userQuestions", Run: h.service.Run})

	s, err := scripted.Parse(script)
	require.NoError(t, err)
	h.model = &runtimetest.Spy{Model: s.Model()}
	cfg := runtime.Config{
		Conn: env.Conn, Model: h.model, ChildModel: s.Child(), Questions: h.client,
		Clock: h.clock, Logger: quiet(), Instance: "test-runtime", Metrics: h.metrics,
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
	return slog.New(slog.DiscardHandler)
}

// run starts Session sid on the harness's runtime until the test ends.
func (h *harness) run(sid string) *runtime.Agent {
	h.t.Helper()
	a, err := h.rt.Start(h.ctx, sid)
	require.NoError(h.t, err)
	return a
}

// patience bounds every wait for something that must happen; it only
// turns a hang into a failure.
const patience = 10 * time.Second

// steer queues an ordinary user message and returns its id.
func (h *harness) steer(sid, text string) string {
	h.t.Helper()
	id, err := runtime.Steer(h.ctx, h.env.JS, sid, "", text)
	require.NoError(h.t, err)
	return id
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

// newCaller returns a caller Client on nc, closed with the test.
func newCaller(t testing.TB, nc *nats.Conn) *caller.Client {
	t.Helper()
	c, err := caller.New(context.Background(), nc, caller.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// counter reads the count of c under label.
func counter(t testing.TB, c *prometheus.CounterVec, label string) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.WithLabelValues(label).Write(&m))
	return m.GetCounter().GetValue()
}
