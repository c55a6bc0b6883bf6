// Package worker is the question worker's side of the userQuestions
// service: the NATS micro service that agents call to ask timed questions
// and wait on them, and that gateways and terminal clients call to answer
// them late and to read the projection. Several workers serve it against
// one NATS system; each request reaches one of them (inflight reaches all).
//
// The package is a NATS adapter. Waits, their deadlines, claims and
// indexes belong to package waiter, which this drives; late answers to
// steer and inbox; the live-root rule (M9) to liveroot. What crosses NATS
// is defined in package userquestions, which the callers (package caller)
// and answerers (package answerer) speak too. This package must never
// re-decide a question rule.
package worker

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/schemas"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
)

// queueGroup makes every worker one member of the same pool: a request
// goes to exactly one of them.
const queueGroup = userquestions.Name

// The endpoints of the service, by the names this package serves them as.
const (
	opAsk      = userquestions.OpAsk
	opAskTimed = userquestions.OpAskTimed
	opInflight = userquestions.OpInflight
	opAnswer   = userquestions.OpAnswer
	opView     = userquestions.OpView
)

// DefaultReconcileEvery is how often a worker lists the claims stream to
// catch an advisory it missed while connected. Reconnects reconcile at once.
const DefaultReconcileEvery = 30 * time.Second

// Config configures a Worker. Its zero value is the defaults, filled in
// once by New.
type Config struct {
	// MaxConcurrent bounds the requests handled at once; further requests
	// wait in the subscription. 0 means 4096. A live wait takes no slot.
	MaxConcurrent int
	// Metrics receives the service's collectors; nil keeps them private.
	Metrics *ops.Metrics
	// ResumeTimeout bounds the wait for a runtime to take a resume request
	// (D7); 0 means DefaultResumeTimeout.
	ResumeTimeout time.Duration
	// ReplyAckWait is how long a worker may go unheard on a queued reply
	// it follows (D7) before the server hands the reply to another
	// worker; 0 means DefaultReplyAckWait. Every worker must use the same
	// value: it is part of the consumer they share.
	ReplyAckWait time.Duration
	// Clock is the time of the waits' deadlines; nil is the real clock.
	Clock clockwork.Clock
	// ReleaseBound is the InactiveThreshold of the worker's lease: how long
	// callers and answerers take to notice a dead worker. 0 means
	// userquestions.DefaultReleaseBound; values below
	// userquestions.MinReleaseBound are raised to it.
	ReleaseBound time.Duration
	// ReconcileEvery is the slow safety-net interval of claim
	// reconciliation; 0 means DefaultReconcileEvery, negative never.
	ReconcileEvery time.Duration
	// ConsumerIdle is how long a consumer on the topology's streams that
	// the server would not end soon after its last use may stay idle
	// before the worker deletes it (sweep.go); 0 means
	// DefaultConsumerIdle, negative never. SweepEvery is how often the
	// worker looks; 0 means DefaultSweepEvery.
	ConsumerIdle time.Duration
	SweepEvery   time.Duration
	// Views is the projection store the process's projection worker
	// writes through, so late answers check the Views it wrote without
	// reading them back (projection.NewStore); nil reads them from the
	// bucket.
	Views *projection.Store
}

// withDefaults fills in what c leaves zero.
func (c Config) withDefaults() Config {
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 4096
	}
	if c.Metrics == nil {
		c.Metrics = ops.NewMetrics()
	}
	if c.ResumeTimeout <= 0 {
		c.ResumeTimeout = DefaultResumeTimeout
	}
	if c.ReplyAckWait <= 0 {
		c.ReplyAckWait = DefaultReplyAckWait
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	c.ReleaseBound = leases.Bound(c.ReleaseBound)
	if c.ReconcileEvery == 0 {
		c.ReconcileEvery = DefaultReconcileEvery
	}
	if c.ConsumerIdle == 0 {
		c.ConsumerIdle = DefaultConsumerIdle
	}
	if c.SweepEvery <= 0 {
		c.SweepEvery = DefaultSweepEvery
	}
	return c
}

// Worker is one question worker (SPEC's Host): its instance of the
// userQuestions micro service.
type Worker struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	top   *streams.Topology
	cfg   Config
	log   *slog.Logger
	roots *liveroot.Registry
	// views is the projection both halves read: late answers check
	// against it (D6), timed asks that it tracks their call (W9).
	views *projection.Store

	// The two halves of the service's work: late answers, the view and
	// reservations (answer.go, view.go), and waits and claims (ask.go,
	// claims.go). Each owns its endpoints and background work (consumers,
	// timers).
	durable    *durable
	foreground *foregroundHalf
	// sweep deletes idle consumers that would outlive their readers
	// (sweep.go); it serves no endpoint.
	sweep *sweep

	// svc announces the service and counts its requests (micro.go).
	svc *announcement

	running atomic.Bool // a Worker runs once at a time
	// ctx is the requests' and the halves' background work's; it ends
	// when Run stops.
	ctx     context.Context
	cancel  context.CancelFunc
	slots   chan struct{}
	runners *runners

	// gate orders request admission against Stop: a request joins handled
	// under a read lock only while open is true, so Stop's Wait never
	// races an Add.
	gate    sync.RWMutex
	open    bool
	handled sync.WaitGroup

	// origins admits requests by their origin (auth.CheckOrigin).
	origins *ops.Origins
}

// endpoint is one operation of the service, served at
// userquestions.Subject(name).
type endpoint struct {
	name string
	// serve handles one request. Its result is sent as the JSON reply and
	// its error as a {code, message} error reply. It runs on its own
	// goroutine, so a long call never holds up other requests.
	serve func(ctx context.Context, req *request) (any, error)
	// fanOut serves each request on every worker instead of one, for an
	// operation whose answer is spread over the workers (inflight).
	fanOut bool
	// repliesLater marks an endpoint that, when serve succeeds, has taken
	// the reply over and sends it itself (Worker.send): once its wait
	// settles, so a live wait holds no goroutine and no slot.
	repliesLater bool
}

// request is one incoming request as an endpoint sees it.
type request struct {
	op       string
	subject  string
	reply    string
	header   nats.Header
	data     []byte
	received time.Time
}

// New builds a Worker on nc and js over the provisioned topology. It
// serves nothing until Run.
func New(nc *nats.Conn, js jetstream.JetStream, top *streams.Topology, cfg Config, log *slog.Logger) *Worker {
	if log == nil {
		log = slog.Default()
	}
	cfg = cfg.withDefaults()
	w := &Worker{
		nc:      nc,
		js:      js,
		top:     top,
		cfg:     cfg,
		log:     log.With("service", userquestions.Name),
		roots:   liveroot.New(top.Roots),
		slots:   make(chan struct{}, cfg.MaxConcurrent),
		runners: newRunners(),
		views:   cfg.Views,
	}
	if w.views == nil {
		w.views = projection.NewStore(js, top.Sessions, top.Questions)
	}
	w.origins = ops.NewOrigins(cfg.Metrics, w.log)
	w.svc = newAnnouncement(nc, w.origins.Admit)
	w.durable = newDurable(nc, js, top.Sessions, w.views, w.roots, cfg, w.log)
	w.foreground = newForeground(nc, js, top.Claims, w.roots, w.views, cfg, w.log)
	w.foreground.send, w.foreground.admit, w.foreground.interrupted = w.send, w.origins.Admit, w.durable.interrupted
	w.sweep = newSweep(js, cfg, w.log)
	return w
}

// Roots is the live-root registry the service checks callers against (M9).
func (w *Worker) Roots() *liveroot.Registry { return w.roots }

// Run serves the service until ctx ends, the lifecycle of an
// [ops.Component]. It starts both halves and then announces the micro
// service, so no request arrives before they can serve it, and calls
// ready. When ctx ends it stops taking requests, ends the ones in
// progress (their contexts are cancelled), waits for their replies, and
// stops both halves: nothing it started outlives it. A failure to start
// is returned; a Worker runs once at a time.
func (w *Worker) Run(ctx context.Context, ready func()) error {
	if !w.running.CompareAndSwap(false, true) {
		return holdover.Newf(holdover.CodeInternal, "%s service already running", userquestions.Name)
	}
	defer w.running.Store(false)
	if err := w.start(ctx); err != nil {
		return err
	}
	ready()
	<-ctx.Done()
	w.stop()
	return nil
}

// start starts both halves and then announces the service.
func (w *Worker) start(ctx context.Context) error {
	w.ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	var stops []func() // of the halves started, in order
	fail := func(err error) error {
		w.setOpen(false)
		w.cancel()
		w.handled.Wait()
		w.runners.wait()
		for _, stop := range stops {
			stop()
		}
		return err
	}
	if err := w.durable.start(w.ctx); err != nil {
		return fail(err)
	}
	stops = append(stops, w.durable.stop)
	if err := w.foreground.start(w.ctx); err != nil {
		return fail(err)
	}
	stops = append(stops, w.foreground.stop)
	w.sweep.start(w.ctx)
	stops = append(stops, w.sweep.stop)
	w.setOpen(true)
	eps := append(w.durable.endpoints(), w.foreground.endpoints()...)
	if err := w.svc.start(ctx, eps, w.handler); err != nil {
		return fail(err)
	}
	w.log.Info("service started", "id", w.svc.id, "subjects", streams.ServicePrefix+".>")
	return nil
}

// stop stops taking requests, ends the ones in progress (their contexts
// are cancelled), waits for their replies, and stops both halves.
func (w *Worker) stop() {
	w.svc.stop()
	w.setOpen(false)
	w.cancel()
	w.handled.Wait()
	w.runners.wait()
	w.durable.stop()
	w.foreground.stop()
	w.sweep.stop()
}

func (w *Worker) setOpen(open bool) {
	w.gate.Lock()
	w.open = open
	w.gate.Unlock()
}

// handler serves ep's requests. The work runs on a goroutine of its own,
// one of the runners (at most Config.MaxConcurrent at once), so the
// subscription, which delivers one message at a time, is never held up
// by a request.
func (w *Worker) handler(ep endpoint) nats.MsgHandler {
	return func(m *nats.Msg) {
		if !w.origins.Admit(ep.name, m) {
			return
		}
		req := &request{op: ep.name, subject: m.Subject, reply: m.Reply, header: m.Header, data: m.Data, received: time.Now()}
		select {
		case w.slots <- struct{}{}:
		case <-w.ctx.Done():
			w.refuse(req)
			return
		}
		w.gate.RLock()
		if !w.open {
			w.gate.RUnlock()
			<-w.slots
			w.refuse(req)
			return
		}
		w.handled.Add(1)
		w.gate.RUnlock()
		w.runners.run(w.ctx, func() {
			defer func() { <-w.slots; w.handled.Done() }()
			w.serve(ep, req)
		})
	}
}

// refuse answers a request that arrived while the service stops, so the
// caller learns at once instead of waiting out its timeout.
func (w *Worker) refuse(req *request) {
	err := holdover.Newf(holdover.CodeInternal, "%s service is stopping; retry on another worker", userquestions.Name)
	msg := userquestions.ErrorMsg(req.reply, err)
	msg.Header.Set(userquestions.HeaderOwnerStopped, "true") // a caller asks again elsewhere
	w.send(req, msg, err)
}

// serve runs one request and, unless its endpoint took the reply over,
// sends its reply.
func (w *Worker) serve(ep endpoint, req *request) {
	result, err := ep.serve(w.ctx, req)
	if ep.repliesLater && err == nil {
		return
	}
	if err != nil {
		level := slog.LevelDebug
		if code := holdover.CodeOf(err); code == "" || code == holdover.CodeInternal {
			level = slog.LevelError
		}
		w.log.Log(w.ctx, level, "request failed", "endpoint", ep.name, "code", holdover.Wire(err).Code, ops.Err(err), "took", time.Since(req.received))
	}
	w.reply(req, result, err)
}

// reply sends the reply to req: result as JSON, or err as an error reply.
func (w *Worker) reply(req *request, result any, err error) {
	msg, err := replyMsg(req.reply, result, err)
	w.send(req, msg, err)
}

// send publishes the reply msg of req, whose error err is, and counts it
// in the endpoint's stats: a request is counted once its reply has gone
// out, with the time from its arrival (`nats micro stats`).
func (w *Worker) send(req *request, msg *nats.Msg, err error) {
	if req.reply != "" {
		if perr := w.nc.PublishMsg(msg); perr != nil {
			w.log.Warn("send reply", "endpoint", req.op, ops.Err(perr))
			if err == nil {
				err = holdover.Wrap(perr, holdover.CodeInternal, "send reply")
			}
		}
	}
	w.svc.record(req.op, time.Since(req.received), err)
}

// replyMsg is the reply that carries result, or err when it is not nil.
// A result that cannot be encoded becomes that error.
func replyMsg(subject string, result any, err error) (*nats.Msg, error) {
	if err != nil {
		return userquestions.ErrorMsg(subject, err), err
	}
	data, err := userquestions.Encode(result)
	if err != nil {
		return userquestions.ErrorMsg(subject, err), err
	}
	return &nats.Msg{Subject: subject, Data: data}, nil
}

// decode reads an endpoint's request body: one JSON object of the
// request's shape, no field it does not know (userquestions.DecodeRequest).
func decode(data []byte, v any) error { return userquestions.DecodeRequest(data, v) }

// answerSchema is the late answer's request, whose answers are read as
// the fold and `holdover check` read them (schemas/common/questions.json).
const answerSchema = "requests/answer.json"

// decodeChecked is decode after a check of data against schema, so the
// service refuses, naming the problem, what the schema does (an answer
// without selected), where Go alone would read a default.
func decodeChecked(schema string, data []byte, v any) error {
	if err := decode(data, v); err != nil {
		return err
	}
	problems, err := schemas.Validate(schema, data)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return holdover.Newf(holdover.CodeBadRequest, "the request does not fit %s: %s", schema, problems[0])
	}
	return nil
}

// checkSession validates a Session id from a request: a bad id is
// BAD_REQUEST, never a wildcard in a subject or key.
func checkSession(sid string) error { return streams.CheckSession(sid) }
