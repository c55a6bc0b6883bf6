package worker

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/streams"
)

// fgTest is a worker on a real embedded server, with a fake clock for its
// deadlines, an agent's caller Client and an answerer on their own connections.
type fgTest struct {
	t       *testing.T
	env     *embeddedtest.Env
	svc     *Worker
	running *ops.Started
	clock   *clockwork.FakeClock
	agent   *caller.Client
	ans     *answerer.Client
}

func newFGTest(t *testing.T) *fgTest { return newFGTestOn(t, nil, nil) }

// newFGTestOn is newFGTest with the worker on the connection connect
// makes to env's server (nil: env's own), set up by prepare before it
// starts (nil: as New made it).
func newFGTestOn(t *testing.T, connect func(env *embeddedtest.Env) (*nats.Conn, jetstream.JetStream), prepare func(*Worker)) *fgTest {
	t.Helper()
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	clock := clockwork.NewFakeClock()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	nc, js := env.Conn, env.JS
	if connect != nil {
		nc, js = connect(env)
	}
	svc := New(nc, js, env.Topology, Config{Clock: clock, ReleaseBound: time.Second}, log)
	if prepare != nil {
		prepare(svc)
	}
	running := opstest.Start(t, ops.Component{Name: "userQuestions", Run: svc.Run})

	agentNC, _ := embeddedtest.Connect(t, env.Server.ClientURL())
	agent, err := caller.New(context.Background(), agentNC, caller.Config{ReleaseBound: time.Second, Log: log})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, agent.Close()) })

	ansNC, _ := embeddedtest.Connect(t, env.Server.ClientURL())
	ans, err := answerer.New(ansNC, answerer.Config{ReleaseBound: time.Second, Log: log})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ans.Close()) })
	return &fgTest{t: t, env: env, svc: svc, running: running, clock: clock, agent: agent, ans: ans}
}

// live registers a live root for sid and returns its ref (M9).
func (f *fgTest) live(sid string) *holdover.AgentRef {
	f.t.Helper()
	epoch, err := f.svc.Roots().Register(context.Background(), sid, "runtime-"+sid)
	require.NoError(f.t, err)
	return &holdover.AgentRef{Instance: "runtime-" + sid, Epoch: epoch}
}

// recorder is a Handler that hands deliveries and cancels to channels.
type recorder struct {
	requests chan *answerer.Delivery
	cancels  chan string
}

func newRecorder() *recorder {
	return &recorder{requests: make(chan *answerer.Delivery, 100), cancels: make(chan string, 100)}
}

func (r *recorder) Request(d *answerer.Delivery) { r.requests <- d }
func (r *recorder) Cancel(d *answerer.Delivery, reason string) {
	r.cancels <- d.RequestID + ":" + reason
}

func (r *recorder) next(t *testing.T) *answerer.Delivery {
	t.Helper()
	select {
	case d := <-r.requests:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no request delivered")
		return nil
	}
}

func (f *fgTest) watch(sid string) *recorder {
	f.t.Helper()
	rec := newRecorder()
	w, err := f.ans.Watch(context.Background(), sid, rec)
	require.NoError(f.t, err)
	f.t.Cleanup(func() { _ = w.Close(context.Background()) })
	return rec
}

var q1 = []holdover.Question{{ID: "q1", Question: "Ship it?", Options: []holdover.Option{{Label: "yes"}, {Label: "no"}}}}

// askTimed starts an askTimed call of sid/call on f's agent.
func (f *fgTest) askTimed(c *caller.Client, sid, call string, ms int64) <-chan error {
	f.t.Helper()
	agent := f.live(sid)
	done := make(chan error, 1)
	go func() {
		out, err := c.AskTimed(context.Background(), holdover.AskTimedRequest{Session: sid, CallID: call, Agent: agent, Questions: q1, TimeoutMs: ms})
		if err == nil && !out.Pending {
			err = holdover.Newf(holdover.CodeInternal, "answered: %v", out.Answers)
		}
		done <- err // nil: pending
	}()
	return done
}

func ended(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end")
		return nil
	}
}

func frame(t *testing.T, c *answerer.Claim) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := c.Remaining(ctx)
	require.NoError(t, err)
	return d
}
