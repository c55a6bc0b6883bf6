package integration

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
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
	"github.com/holdover-dev/holdover/worker"
)

// fgBound is the release bound of every claim and lease in these tests:
// the shortest the service accepts.
const fgBound = userquestions.MinReleaseBound

// fgPatience bounds every wait for something that must happen; it only
// turns a hang into a failure.
const fgPatience = 15 * time.Second

// fgWorld is one worker of the userQuestions service on a real embedded
// server with authentication on, its Host deadlines on a fake clock, and
// an agent Client on its own connection. Each part connects with its own
// role's credentials (worker, agent, gateway for answerers); conn is the
// test's own view (admin).
type fgWorld struct {
	t      testing.TB
	env    *embeddedtest.Env
	clock  *clockwork.FakeClock
	worker *runningWorker
	agent  *caller.Client
	log    *slog.Logger
}

func newFGWorld(t testing.TB) *fgWorld { return newFGWorldAuth(t, true) }

// newFGWorldAuth is newFGWorld with authentication on or off, for the
// benchmark that measures what it costs.
func newFGWorldAuth(t testing.TB, secure bool) *fgWorld {
	t.Helper()
	start := embeddedtest.Start
	if secure {
		start = func(t testing.TB, cfg streams.Config) *embeddedtest.Env { return embeddedtest.StartSecure(t, cfg) }
	}
	return newFGWorldOn(t, start(t, streams.Config{Memory: true}))
}

// newFGWorldOn is newFGWorld on a server the test configured itself.
func newFGWorldOn(t testing.TB, env *embeddedtest.Env) *fgWorld {
	t.Helper()
	w := &fgWorld{
		t:     t,
		env:   env,
		clock: clockwork.NewFakeClock(),
		log:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	}
	w.worker = w.startWorker(w.as(auth.Worker))
	w.agent = w.client()
	return w
}

// as opens a connection with role r's credentials, as a process of that
// role would.
func (w *fgWorld) as(r auth.Role) *nats.Conn {
	w.t.Helper()
	nc, _ := w.env.As(w.t, r)
	return nc
}

// creds is role r's credentials file, for a process of that role.
func (w *fgWorld) creds(r auth.Role) string { return w.env.Auth.Creds(w.env.Tenant, r) }

// runningWorker is a question service the test runs, with the methods of
// its worker; Stop ends it as its process's end would.
type runningWorker struct {
	*worker.Worker
	t       testing.TB
	running *ops.Started
}

// runWorker runs svc until Stop or the test's end.
func runWorker(t testing.TB, svc *worker.Worker) *runningWorker {
	t.Helper()
	return &runningWorker{Worker: svc, t: t, running: opstest.Start(t, ops.Component{Name: "userQuestions", Run: svc.Run})}
}

// Stop stops the service and waits until it has.
func (r *runningWorker) Stop() {
	r.t.Helper()
	require.NoError(r.t, r.running.Stop())
}

// startWorker runs a worker on nc (a worker's credentials), over the
// topology as nc sees it, stopped when the test ends.
func (w *fgWorld) startWorker(nc *nats.Conn) *runningWorker {
	w.t.Helper()
	js, err := jetstream.New(nc)
	require.NoError(w.t, err)
	top, err := streams.Open(context.Background(), js)
	require.NoError(w.t, err)
	svc := worker.New(nc, js, top, worker.Config{
		Clock: w.clock, ReleaseBound: fgBound,
	}, w.log)
	return runWorker(w.t, svc) // ready: the server knows its endpoints
}

// conn opens a connection of the test's own, with every right (admin).
func (w *fgWorld) conn() *nats.Conn { return w.as(auth.Admin) }

// client returns an agent Client on a connection of its own.
func (w *fgWorld) client() *caller.Client {
	w.t.Helper()
	return newCaller(w.t, w.as(auth.Agent), caller.Config{ReleaseBound: fgBound, Log: w.log})
}

// answerer returns an answerer (a gateway, say) on nc.
func (w *fgWorld) answerer(nc *nats.Conn) *answerer.Client {
	w.t.Helper()
	a, err := answerer.New(nc, answerer.Config{ReleaseBound: fgBound, Log: w.log})
	require.NoError(w.t, err)
	w.t.Cleanup(func() { require.NoError(w.t, a.Close()) })
	return a
}

// watch watches sid with a fresh answerer on a gateway's connection.
func (w *fgWorld) watch(sid string) *fgRecorder {
	w.t.Helper()
	return w.watchWith(w.answerer(w.as(auth.Gateway)), sid)
}

func (w *fgWorld) watchWith(a *answerer.Client, sid string) *fgRecorder {
	w.t.Helper()
	rec := &fgRecorder{requests: make(chan *answerer.Delivery, 1000), cancels: make(chan fgCancel, 1000)}
	watch, err := a.Watch(context.Background(), sid, rec)
	require.NoError(w.t, err)
	w.t.Cleanup(func() { _ = watch.Close(context.Background()) })
	return rec
}

// live registers a live runtime root for sid, as its agent would, and
// returns its ref (M9).
func (w *fgWorld) live(sid string) *holdover.AgentRef {
	w.t.Helper()
	instance := "runtime-" + sid
	epoch, err := w.roots().Register(context.Background(), sid, instance)
	require.NoError(w.t, err)
	return &holdover.AgentRef{Instance: instance, Epoch: epoch}
}

// roots is the live-root registry as an agent runtime writes it.
func (w *fgWorld) roots() *liveroot.Registry {
	w.t.Helper()
	_, js := w.env.As(w.t, auth.Agent)
	kv, err := js.KeyValue(context.Background(), streams.RootsBucket)
	require.NoError(w.t, err)
	return liveroot.New(kv)
}

// waitsAre waits until the worker holds n live waits.
func (w *fgWorld) waitsAre(svc interface{ LiveWaits() int }, n int) {
	w.t.Helper()
	require.Eventually(w.t, func() bool { return svc.LiveWaits() == n }, fgPatience, time.Millisecond,
		"want %d live waits, have %d", n, svc.LiveWaits())
}

// fgResult is how one agent call ended.
type fgResult struct {
	out     holdover.Outcome
	answers []holdover.Answer
	err     error
	took    time.Duration
}

// askTimed starts an askTimed call and returns where its result lands.
func (w *fgWorld) askTimed(ctx context.Context, c *caller.Client, req holdover.AskTimedRequest) <-chan fgResult {
	done := make(chan fgResult, 1)
	go func() {
		start := time.Now()
		out, err := c.AskTimed(ctx, req)
		done <- fgResult{out: out, err: err, took: time.Since(start)}
	}()
	return done
}

// ask starts a blocking ask and returns where its result lands.
func (w *fgWorld) ask(ctx context.Context, c *caller.Client, req holdover.AskRequest) <-chan fgResult {
	done := make(chan fgResult, 1)
	go func() {
		start := time.Now()
		answers, err := c.Ask(ctx, req)
		done <- fgResult{answers: answers, err: err, took: time.Since(start)}
	}()
	return done
}

func fgWait(t testing.TB, done <-chan fgResult) fgResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(fgPatience):
		t.Fatal("the agent call did not end")
		return fgResult{}
	}
}

// fgPendingOnly asserts the call is still waiting.
func fgPendingOnly(t testing.TB, done <-chan fgResult) {
	t.Helper()
	select {
	case r := <-done:
		t.Fatalf("the agent call ended early: %+v", r)
	default:
	}
}

// fgRecorder is a Handler that hands every delivery and cancel to a channel.
type fgRecorder struct {
	requests chan *answerer.Delivery
	cancels  chan fgCancel
}

type fgCancel struct {
	requestID string
	reason    string
}

func (r *fgRecorder) Request(d *answerer.Delivery) { r.requests <- d }
func (r *fgRecorder) Cancel(d *answerer.Delivery, reason string) {
	r.cancels <- fgCancel{requestID: d.RequestID, reason: reason}
}

func (r *fgRecorder) next(t testing.TB) *answerer.Delivery {
	t.Helper()
	select {
	case d := <-r.requests:
		return d
	case <-time.After(fgPatience):
		t.Fatal("no request was delivered")
		return nil
	}
}

func (r *fgRecorder) cancel(t testing.TB) fgCancel {
	t.Helper()
	select {
	case c := <-r.cancels:
		return c
	case <-time.After(fgPatience):
		t.Fatal("no cancel notice")
		return fgCancel{}
	}
}

// claim attaches to d's wait and returns the claim with its one frame.
func fgClaim(t testing.TB, d *answerer.Delivery) (*answerer.Claim, time.Duration) {
	t.Helper()
	c, err := d.AttachWait(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), fgPatience)
	defer cancel()
	remaining, err := c.Remaining(ctx)
	require.NoError(t, err)
	return c, remaining
}

func fgClosed(t testing.TB, c *answerer.Claim) {
	t.Helper()
	select {
	case <-c.Closed():
	case <-time.After(fgPatience):
		t.Fatal("the worker did not close the claim")
	}
}

var fgQuestions = []holdover.Question{{
	ID: "deploy", Question: "Deploy to production now?",
	Options: []holdover.Option{{Label: "yes"}, {Label: "no"}},
}}

func fgAnswer(choice string) []holdover.Answer {
	return []holdover.Answer{{ID: "deploy", Selected: []string{choice}}}
}
