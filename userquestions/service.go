// Package userquestions is the UserQuestionService: the NATS micro service
// `userQuestions` that agents and gateways call to ask timed questions, to
// wait on them, and to answer them late. It also holds the typed Go client
// of that service.
//
// The service owns the wire: endpoints under the subject group
// streams.ServicePrefix, request decoding and the {code, message} error
// form. The question rules themselves live elsewhere (waiter/ for the
// foreground wait, steer/ and inbox/ for late answers, liveroot/ for M9);
// this package wires them to NATS and must never re-decide them.
package userquestions

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/streams"
)

// Name is the micro service name, as `nats micro ls` shows it.
const Name = "userQuestions"

// Version is the version the service announces.
const Version = "0.1.0"

// Description is the micro service description.
const Description = "Holdover timed user questions: foreground waits and claims, late answers, the question projection"

// queueGroup makes every worker one member of the same pool: a request
// goes to exactly one of them.
const queueGroup = "userQuestions"

// Config configures a Service. The zero value serves with defaults and
// registers no metrics.
type Config struct {
	// MaxConcurrent bounds the requests handled at once; further requests
	// wait in the subscription. 0 means 4096.
	MaxConcurrent int
	// Metrics receives the service's collectors; nil keeps them private.
	Metrics *ops.Metrics
	// ResumeTimeout bounds the wait for a runtime to take a resume request
	// (D7); 0 means DefaultResumeTimeout.
	ResumeTimeout time.Duration
	// Foreground configures waits and claims (ask.go).
	Foreground ForegroundConfig
	// Views is the projection store the process's projection worker
	// writes through, so late answers check the Views it wrote without
	// reading them back (projection.NewStore); nil reads them from the
	// bucket.
	Views *projection.Store
}

func (c Config) resumeTimeout() time.Duration {
	if c.ResumeTimeout <= 0 {
		return DefaultResumeTimeout
	}
	return c.ResumeTimeout
}

func (c Config) maxConcurrent() int {
	if c.MaxConcurrent <= 0 {
		return 4096
	}
	return c.MaxConcurrent
}

// Service is one worker's instance of the userQuestions micro service.
// Several workers may run against one NATS system; each request reaches one.
type Service struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	top   *streams.Topology
	cfg   Config
	log   *slog.Logger
	roots *liveroot.Registry

	// parts are the shares of the service's work. Each owns its endpoints
	// and background work (consumers, timers).
	parts []part

	mu     sync.Mutex // guards svc during Start and Stop
	svc    micro.Service
	ctx    context.Context
	cancel context.CancelFunc
	slots  chan struct{}

	// gate orders request admission against Stop: a request joins handled
	// under a read lock only while open is true, so Stop's Wait never
	// races an Add.
	gate    sync.RWMutex
	open    bool
	handled sync.WaitGroup
}

// part is one share of the service: the durable half (late answers, the
// view, reservations) or the foreground half (waits and claims). Each part
// is built in New from its own file and lists the endpoints it serves.
type part interface {
	// endpoints lists the operations the part serves.
	endpoints() []endpoint
	// start begins the part's background work; ctx ends with Stop.
	start(ctx context.Context) error
	// stop releases what start began, after the endpoints have stopped.
	stop()
}

// endpoint is one operation of the service, served at
// <streams.ServicePrefix>.<name>.
type endpoint struct {
	name string
	// serve handles one request. Its result is sent as the JSON reply and
	// its error as a {code, message} error reply. It runs on its own
	// goroutine, so a long wait never holds up other requests.
	serve func(ctx context.Context, req *request) (any, error)
	// fanOut serves each request on every worker instead of one, for an
	// operation whose answer is spread over the workers (inflight).
	fanOut bool
	// repliesLater marks an endpoint that, when serve succeeds, has taken
	// the reply over and sends it itself once its wait settles, so a long
	// wait holds no goroutine and no slot.
	repliesLater bool
}

// request is one incoming request as an endpoint sees it.
type request struct {
	subject string
	reply   string
	header  nats.Header
	data    []byte
}

// New builds a Service on nc and js over the provisioned topology. It
// serves nothing until Start.
func New(nc *nats.Conn, js jetstream.JetStream, top *streams.Topology, cfg Config, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = ops.NewMetrics()
	}
	s := &Service{
		nc:    nc,
		js:    js,
		top:   top,
		cfg:   cfg,
		log:   log.With("service", Name),
		roots: liveroot.New(top.Roots),
		slots: make(chan struct{}, cfg.maxConcurrent()),
	}
	// Each half of the service adds its part here: the durable half lives
	// in answer.go and view.go, the foreground half in ask.go.
	s.parts = []part{newDurable(s), newForeground(s)}
	return s
}

// metrics returns the collectors the service reports into.
func (s *Service) metrics() *ops.Metrics { return s.cfg.Metrics }

// Roots is the live-root registry the service checks callers against (M9).
func (s *Service) Roots() *liveroot.Registry { return s.roots }

// Start starts every part and then announces the micro service, so no
// request arrives before the parts can serve it. ctx bounds the start
// only; the service runs until Stop.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.svc != nil {
		return holdover.New(holdover.CodeInternal, "userQuestions service already started")
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	started := 0
	fail := func(err error) error {
		s.setOpen(false)
		s.cancel()
		s.handled.Wait()
		for _, p := range s.parts[:started] {
			p.stop()
		}
		return err
	}
	for _, p := range s.parts {
		if err := p.start(s.ctx); err != nil {
			return fail(err)
		}
		started++
	}
	s.setOpen(true)
	svc, err := micro.AddService(s.nc, micro.Config{
		Name:        Name,
		Version:     Version,
		Description: Description,
		QueueGroup:  queueGroup,
	})
	if err != nil {
		return fail(holdover.Newf(holdover.CodeInternal, "announce %s service: %v", Name, err))
	}
	group := svc.AddGroup(streams.ServicePrefix)
	for _, p := range s.parts {
		for _, ep := range p.endpoints() {
			var opts []micro.EndpointOpt
			if ep.fanOut {
				opts = append(opts, micro.WithEndpointQueueGroupDisabled())
			}
			if err := group.AddEndpoint(ep.name, s.handler(ep), opts...); err != nil {
				_ = svc.Stop()
				return fail(holdover.Newf(holdover.CodeInternal, "add endpoint %s: %v", ep.name, err))
			}
		}
	}
	// The endpoints are live once the server has their subscriptions: a
	// request from another connection right after Start must find them.
	if err := s.nc.Flush(); err != nil {
		_ = svc.Stop()
		return fail(holdover.Newf(holdover.CodeInternal, "announce %s service: %v", Name, err))
	}
	s.svc = svc
	s.log.Info("service started", "id", svc.Info().ID, "subjects", streams.ServicePrefix+".>")
	return nil
}

// Stop stops taking requests, ends the ones in progress (their contexts
// are cancelled), waits for their replies, and stops every part.
func (s *Service) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.svc == nil {
		return
	}
	if err := s.svc.Stop(); err != nil {
		s.log.Warn("stop micro service", "err", err)
	}
	s.setOpen(false)
	s.cancel()
	s.handled.Wait()
	for _, p := range s.parts {
		p.stop()
	}
	s.svc = nil
}

func (s *Service) setOpen(open bool) {
	s.gate.Lock()
	s.open = open
	s.gate.Unlock()
}

// handler adapts ep to a micro handler. The work runs on its own goroutine
// (bounded by Config.MaxConcurrent) and replies straight on the
// connection: the micro request's Respond must only be called inside the
// handler, and this reply happens after it returns.
func (s *Service) handler(ep endpoint) micro.Handler {
	return micro.HandlerFunc(func(mr micro.Request) {
		req := &request{subject: mr.Subject(), reply: mr.Reply(), header: nats.Header(mr.Headers()), data: mr.Data()}
		select {
		case s.slots <- struct{}{}:
		case <-s.ctx.Done():
			s.refuse(req)
			return
		}
		s.gate.RLock()
		if !s.open {
			s.gate.RUnlock()
			<-s.slots
			s.refuse(req)
			return
		}
		s.handled.Add(1)
		s.gate.RUnlock()
		go func() {
			defer func() { <-s.slots; s.handled.Done() }()
			s.serve(ep, req)
		}()
	})
}

// refuse answers a request that arrived while the service stops, so the
// caller learns at once instead of waiting out its timeout.
func (s *Service) refuse(req *request) {
	if req.reply == "" {
		return
	}
	err := holdover.Newf(holdover.CodeInternal, "%s service is stopping; retry on another worker", Name)
	msg := errorMsg(req.reply, err)
	msg.Header.Set(headerOwnerStopped, "true") // a Client asks again elsewhere (ask_client.go)
	if perr := s.nc.PublishMsg(msg); perr != nil {
		s.log.Warn("send refusal", "err", perr)
	}
}

// serve runs one request and sends its reply.
func (s *Service) serve(ep endpoint, req *request) {
	start := time.Now()
	result, err := ep.serve(s.ctx, req)
	if ep.repliesLater && err == nil {
		return
	}
	msg, encErr := s.replyMsg(req.reply, result, err)
	if encErr != nil {
		err = encErr
		msg = errorMsg(req.reply, encErr)
	}
	if err != nil {
		level := slog.LevelDebug
		if code := holdover.CodeOf(err); code == "" || code == holdover.CodeInternal {
			level = slog.LevelError
		}
		s.log.Log(s.ctx, level, "request failed", "endpoint", ep.name, "code", holdover.Wire(err).Code, "err", err, "took", time.Since(start))
	}
	if req.reply == "" {
		return
	}
	if err := s.nc.PublishMsg(msg); err != nil {
		s.log.Warn("send reply", "endpoint", ep.name, "err", err)
	}
}

func (s *Service) replyMsg(subject string, result any, err error) (*nats.Msg, error) {
	if err != nil {
		return errorMsg(subject, err), nil
	}
	data, err := encode(result)
	if err != nil {
		return nil, err
	}
	return &nats.Msg{Subject: subject, Data: data}, nil
}
