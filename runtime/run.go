package runtime

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/runtime/model"
	"github.com/holdover-dev/holdover/runtime/ptc"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// Config configures a runtime process: its connection, its model and its
// tools. One Runtime serves any number of Sessions with them.
type Config struct {
	// Conn is the NATS connection; the topology must be provisioned.
	Conn *nats.Conn
	// Model answers the root agents' requests; ChildModel the children's
	// (nil: Model).
	Model      model.Model
	ChildModel model.Model
	// System is the system prompt of every request.
	System string
	// Ask configures ask_user_question (mode, default timeout); Questions is
	// the question service it calls, nil meaning a caller.Client on
	// Conn that the Runtime closes with Close.
	Ask       askuser.Config
	Questions askuser.Asker
	// Tools are extra tools, offered after the runtime's own.
	Tools []Tool
	// Instance names this process in the live-root registry and its root
	// lease; empty picks a random one. It is letters, digits, '-' and '_'.
	Instance string
	// ReleaseBound is how long the root lease outlives this process's
	// connection: the bound on an answer noticing that the process died
	// (D7). 0 means lease.DefaultReleaseBound; less than
	// lease.MinReleaseBound is raised to it.
	ReleaseBound time.Duration
	// MaxSteps bounds the steps of one Turn; 0 means 200.
	MaxSteps int
	// CodeTimeout bounds one run_code program; 0 means ptc.DefaultTimeout.
	CodeTimeout time.Duration
	// Clock stamps events and runs sleep and run_code limits; nil is the
	// real clock.
	Clock clockwork.Clock
	// Logger receives the runtime's logs; nil is slog.Default().
	Logger *slog.Logger
	// Metrics receives the runtime's collectors (the resume and discard
	// requests it refused for their origin); nil keeps them private.
	Metrics *ops.Metrics

	// Session and Prompt are for Run: the Session to serve, and the user
	// message that starts a Session whose log is empty.
	Session string
	Prompt  string
}

// Runtime is one runtime process: shared connections, registry and tools
// for the agents it runs.
type Runtime struct {
	cfg        Config
	nc         *nats.Conn
	js         jetstream.JetStream
	sessions   *sessionlog.Log
	stream     jetstream.Stream // SESSIONS: the logs and the inboxes
	inboxes    *inbox.Reader
	roots      *liveroot.Registry
	clock      clockwork.Clock
	log        *slog.Logger
	origins    *ops.Origins // admits resume and discard requests (auth.CheckOrigin)
	instance   string
	tools      *toolset
	childTools *toolset

	// lease is the root lease, held from New to Close; keepLease holds it
	// again after a reconnect that outlasted it, until stopped.
	leaseMu   sync.Mutex
	lease     *lease.Lease
	keepLease func()

	// close releases what the Runtime made for itself: its question client.
	close func() error
	// closing ends when Close is called; agents are the Sessions Start runs.
	closing    context.Context
	stopAgents context.CancelFunc
	agents     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	running map[string]*started
}

// started is a Session this process runs or is starting.
type started struct {
	ready chan struct{}
	agent *Agent
	err   error
}

// New checks cfg and connects to the topology.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	switch {
	case cfg.Conn == nil:
		return nil, holdover.New(holdover.CodeBadRequest, "the runtime needs a NATS connection")
	case cfg.Model == nil:
		return nil, holdover.New(holdover.CodeBadRequest, "the runtime needs a model")
	}
	if cfg.ChildModel == nil {
		cfg.ChildModel = cfg.Model
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 200
	}
	if cfg.CodeTimeout <= 0 {
		cfg.CodeTimeout = ptc.DefaultTimeout
	}
	if cfg.Instance == "" {
		cfg.Instance = newID("runtime")
	}
	rt := &Runtime{cfg: cfg, nc: cfg.Conn, clock: cfg.Clock, log: cfg.Logger, instance: cfg.Instance, running: map[string]*started{}}
	rt.closing, rt.stopAgents = context.WithCancel(context.Background())
	if rt.clock == nil {
		rt.clock = clockwork.NewRealClock()
	}
	if rt.log == nil {
		rt.log = slog.Default()
	}
	rt.log = rt.log.With("instance", rt.instance)
	if cfg.Metrics == nil {
		cfg.Metrics = ops.NewMetrics()
	}
	rt.origins = ops.NewOrigins(cfg.Metrics, rt.log)
	var err error
	if rt.js, err = jetstream.New(cfg.Conn); err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "open JetStream")
	}
	sessions, err := rt.js.Stream(ctx, streams.SessionsStream)
	if err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "open stream %s (is the topology provisioned?)", streams.SessionsStream)
	}
	// One reader for every Session this process runs: a consumer per
	// inbox.DefaultShardSize Sessions instead of one per Session.
	if rt.inboxes, err = inbox.NewReader(sessions, inbox.ReaderConfig{Name: rt.instance, Logger: rt.log}); err != nil {
		return nil, err
	}
	kv, err := rt.js.KeyValue(ctx, streams.RootsBucket)
	if err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "open bucket %s", streams.RootsBucket)
	}
	rt.sessions = sessionlog.New(rt.js, sessions)
	rt.stream = sessions
	rt.roots = liveroot.New(kv)
	// Before any Session is registered: a record naming this instance is
	// only believed while this lease exists.
	if rt.lease, err = liveroot.HoldLease(ctx, cfg.Conn, rt.js, rt.instance, cfg.ReleaseBound); err != nil {
		return nil, err
	}
	rt.keepLease = lease.OnReconnect(cfg.Conn, 0, rt.holdLeaseAgain)

	questions := cfg.Questions
	if questions == nil {
		client, err := caller.New(ctx, cfg.Conn, caller.Config{Log: rt.log})
		if err != nil {
			rt.Close()
			return nil, err
		}
		rt.close = client.Close
		questions = client
	}
	ask, err := NewAskTool(cfg.Ask, questions)
	if err != nil {
		rt.Close()
		return nil, err
	}
	own := []Tool{ask, runCodeTool{clock: rt.clock, timeout: cfg.CodeTimeout}, subagentTool{}, sleepTool{clock: rt.clock}}
	if rt.tools, err = newToolset(append(own, cfg.Tools...)...); err != nil {
		rt.Close()
		return nil, err
	}
	rt.childTools = rt.tools.without(SubagentTool)
	return rt, nil
}

// flushTimeout bounds the wait for the server to confirm a subscription.
const flushTimeout = 10 * time.Second

// Close stops the agents Start runs and waits until they have stopped
// (each releases its Session), closes the inbox reader, ends the root
// lease, then closes the question client the Runtime made; it returns
// once nothing of the Runtime runs. Agents opened with Open and run by
// the caller must be stopped first. After Close, Start fails. Close on a
// closed connection leaves the lease to NATS, which ends it within the
// release bound. Closing again does nothing.
func (rt *Runtime) Close() error {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil
	}
	rt.closed = true
	rt.mu.Unlock()
	rt.stopAgents()
	rt.agents.Wait()
	var errs []error
	if rt.inboxes != nil {
		errs = append(errs, rt.inboxes.Close())
	}
	if rt.keepLease != nil {
		rt.keepLease()
		// An agent may not delete consumers (package auth): NATS ends the
		// root lease the release bound after this. Every Session was
		// released above, so no answer waits on it meanwhile.
		rt.leaseMu.Lock()
		rt.lease.Drop()
		rt.leaseMu.Unlock()
	}
	if rt.close != nil {
		errs = append(errs, rt.close())
	}
	return errors.Join(errs...)
}

// holdLeaseAgain runs after every reconnect. A disconnect longer than the
// release bound ended the root lease, so the Sessions this instance runs
// look lost and an answer may resume them elsewhere, fencing them out
// here; until that happens they are still served, and holding the lease
// again makes them alive once more.
func (rt *Runtime) holdLeaseAgain(ctx context.Context) {
	rt.leaseMu.Lock()
	defer rt.leaseMu.Unlock()
	alive, err := rt.lease.Alive(ctx)
	switch {
	case err != nil:
		rt.log.Warn("check the root lease after a reconnect", "lease", rt.lease.Name(), ops.Err(err))
		return
	case alive:
		return
	}
	rt.log.Warn("the root lease ended while cut off from NATS; holding it again", "lease", rt.lease.Name())
	rt.lease.Drop()
	l, err := liveroot.HoldLease(ctx, rt.nc, rt.js, rt.instance, rt.cfg.ReleaseBound)
	if err != nil {
		rt.log.Error("hold the root lease again; an answer will resume this instance's Sessions elsewhere", "lease", rt.lease.Name(), ops.Err(err))
		return
	}
	rt.lease = l
}

// Instance is the process's instance id in the live-root registry.
func (rt *Runtime) Instance() string { return rt.instance }

// Run serves cfg.Session until ctx ends, the lifecycle of an
// ops.Component: it registers as the Session's live root, resumes it from
// its log, queues cfg.Prompt when the log is empty, calls ready, and runs
// the agent. It returns nil when ctx ends, and an error when the Session
// cannot be served, such as CALLER_NOT_LIVE once another instance took it
// over.
func Run(ctx context.Context, cfg Config, ready func()) error {
	rt, err := New(ctx, cfg)
	if err != nil {
		return err
	}
	defer rt.Close()
	a, err := rt.Open(ctx, cfg.Session)
	if err != nil {
		return err
	}
	if cfg.Prompt != "" && a.empty() {
		// A fixed id keeps a restart before the splice from queuing it twice.
		if _, err := Steer(ctx, rt.js, cfg.Session, "prompt-"+cfg.Session, cfg.Prompt); err != nil {
			return err
		}
	}
	ready()
	return a.Run(ctx)
}

// Open makes this process the live root of sid and resumes the Session
// from its log, repairing interrupted tool calls. Run the returned agent
// to serve it.
func (rt *Runtime) Open(ctx context.Context, sid string) (*Agent, error) {
	epoch, err := rt.roots.Register(ctx, sid, rt.instance)
	if err != nil {
		return nil, err
	}
	a := rt.newAgent(sid, holdover.AgentRef{Instance: rt.instance, Epoch: epoch}, rt.cfg.Model, rt.tools, false)
	if err := a.load(ctx); err != nil {
		return nil, err
	}
	a.log.Info("session resumed", "seq", a.last, "queued", len(a.st.queue), "turnOpen", a.st.turn != "")
	return a, nil
}

// Start runs sid in the background unless this process runs it already,
// and returns its agent once it is registered and resumed. The agent runs
// until ctx ends, Close is called, or it is fenced out.
func (rt *Runtime) Start(ctx context.Context, sid string) (*Agent, error) {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil, holdover.Newf(holdover.CodeInternal, "runtime %s is closed; it starts no Session", rt.instance)
	}
	s, ok := rt.running[sid]
	if !ok {
		s = &started{ready: make(chan struct{})}
		rt.running[sid] = s
	}
	rt.mu.Unlock()
	if ok {
		select {
		case <-s.ready:
			return s.agent, s.err
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	s.agent, s.err = rt.Open(ctx, sid)
	close(s.ready)
	if s.err != nil {
		rt.forget(sid, s)
		return nil, s.err
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed { // Close began while the Session was opening
		delete(rt.running, sid)
		release, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		_ = rt.roots.Release(release, sid, s.agent.ref) // nobody will serve it here
		return nil, holdover.Newf(holdover.CodeInternal, "runtime %s is closed; it starts no Session", rt.instance)
	}
	ctx, cancel := context.WithCancel(ctx)
	unlink := context.AfterFunc(rt.closing, cancel)
	rt.agents.Go(func() {
		defer rt.forget(sid, s)
		defer unlink()
		defer cancel()
		if err := s.agent.Run(ctx); err != nil {
			s.agent.log.Warn("session stopped", "err", err)
		}
	})
	return s.agent, nil
}

func (rt *Runtime) forget(sid string, s *started) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.running[sid] == s {
		delete(rt.running, sid)
	}
}

// ServePool joins the resume pool: until ctx ends or stop is called, any
// instance of the pool takes a request to resume a Session that has no
// live root (D7) and runs that Session until ctx ends. It returns once this
// instance is listening.
func (rt *Runtime) ServePool(ctx context.Context) (stop func(), err error) {
	sub, err := liveroot.ServeResume(ctx, rt.nc, rt.origins, func(ctx context.Context, sid string) (string, error) {
		if _, err := rt.Start(ctx, sid); err != nil {
			return "", err
		}
		return rt.instance, nil
	})
	if err != nil {
		return nil, err
	}
	// A subscription is live once the server has it: flush, so a request
	// sent right after ServePool returns finds this instance.
	if err := rt.nc.FlushTimeout(flushTimeout); err != nil {
		_ = sub.Unsubscribe()
		return nil, holdover.Wrap(err, holdover.CodeInternal, "join the resume pool")
	}
	rt.log.Info("joined the resume pool", "subject", streams.ResumeSubject, "lease", liveroot.LeaseName(rt.instance))
	leave := context.AfterFunc(ctx, func() { _ = sub.Unsubscribe() })
	return func() {
		leave()
		_ = sub.Unsubscribe() // a closed connection has nothing left to unsubscribe
	}, nil
}

// Run serves the Session until ctx ends. A writer that appended to the log
// meanwhile (a stale instance before it noticed) makes the agent rebuild
// from the log and go on, as long as it is still the live root; an agent
// that is no longer the live root stops. Whenever it stops it releases the
// live root, so the next answer for the Session resumes it in the pool (D7).
func (a *Agent) Run(ctx context.Context) error {
	defer func() {
		// Without it the registry would name a root that no longer runs
		// until the root lease ends with Close or the connection; with it
		// an answer resumes the Session at once. Releasing a registration
		// that is no longer current changes nothing.
		if a.rt.nc.IsClosed() {
			a.log.Debug("connection closed; the root lease ends within the release bound instead of a release")
			return
		}
		release, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		if err := a.rt.roots.Release(release, a.sid, a.ref); err != nil && !a.rt.nc.IsClosed() {
			a.log.Warn("release the live root", ops.Err(err))
		}
	}()
	for {
		err := a.serve(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if !holdover.HasCode(err, holdover.CodeConflict) {
			return err
		}
		if live := a.rt.roots.Check(ctx, a.sid, a.ref); live != nil {
			return live
		}
		a.log.Warn("another writer appended to the Session log; rebuilding from it", "err", err)
		if err := a.load(ctx); err != nil {
			return err
		}
	}
}

// serve reads the inbox and runs Turns until ctx ends or an append fails.
func (a *Agent) serve(ctx context.Context) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	a.mu.Lock()
	after := a.st.inboxSeq
	a.mu.Unlock()
	stopReading, err := a.rt.inboxes.Follow(ctx, a.sid, after, func(q inbox.Queued) {
		if err := a.splice(ctx, q); err != nil {
			stop(err)
		}
	})
	if err != nil {
		return err
	}
	defer stopReading()
	discards, err := a.serveDiscard(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = discards.Unsubscribe() }()
	return a.loop(ctx)
}

// empty reports whether the Session log had no events when it was loaded.
func (a *Agent) empty() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last == 0
}

// Steer queues an ordinary user message in Session sid's inbox; the agent
// admits it at its next step boundary, or starts a Turn with it when idle.
// An empty id picks a random one; the same id queues the message once.
func Steer(ctx context.Context, js jetstream.JetStream, sid, id, text string) (string, error) {
	if id == "" {
		id = newID("msg")
	}
	msg := events.Message{ID: id, Role: string(model.User), Content: events.Text(text), Source: events.Source{Kind: events.SourceUser}}
	if _, err := inbox.Publish(ctx, js, sid, msg); err != nil {
		return "", err
	}
	return id, nil
}
