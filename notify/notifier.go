package notify

import (
	"cmp"
	"context"
	"errors"
	"hash/fnv"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// Defaults of [Config].
const (
	// DefaultDurable names the consumer notifier processes share.
	DefaultDurable = streams.NotifyDurable
	// DefaultAckWait is how long the events a notifier held wait after
	// it died before the server hands them to another.
	DefaultAckWait = 10 * time.Second
)

// Config configures a [Notifier]. Webhooks is required; the rest has
// defaults.
type Config struct {
	// Webhooks receive every notification.
	Webhooks []Webhook
	// WebURL is the web UI address card links start from; nil sends no link.
	WebURL *url.URL
	// Durable names the shared consumer; default [DefaultDurable].
	// Notifiers with the same name split the events between them; one
	// with another name sees every event again (other webhooks, say).
	Durable string
	// AckWait is how long an event may stay unacknowledged before the
	// server hands it out again; default [DefaultAckWait]. A held event is kept alive
	// meanwhile, so this bounds how long the events of a SIGKILLed
	// notifier wait before another process (or its restart) takes them.
	AckWait time.Duration
	// Lanes bounds the Sessions whose events are handled at once;
	// default 16. One Session's events always take one lane, in order.
	Lanes int
	// CacheSize bounds the Session Views kept in memory; default 10,000.
	CacheSize int
	// Retry bounds the attempts at one delivery; its back-off also paces
	// an event whose fold failed (the log unreadable, say).
	Retry RetryPolicy
	// HTTPClient posts the notifications; nil is a client that follows
	// no redirects.
	HTTPClient *http.Client
	// Clock paces the back-off; nil is the real clock.
	Clock clockwork.Clock
	// Metrics receives the notifier's counters; nil keeps them private.
	Metrics *ops.Metrics
	// Logger receives the notifier's logs; nil means slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.Durable = cmp.Or(c.Durable, DefaultDurable)
	c.AckWait = cmp.Or(c.AckWait, DefaultAckWait)
	c.Lanes = cmp.Or(c.Lanes, 16)
	c.CacheSize = cmp.Or(c.CacheSize, 10_000)
	c.Retry = c.Retry.withDefaults()
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.Metrics == nil {
		c.Metrics = ops.NewMetrics()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// laneQueue is how many delivered events wait for one lane.
const laneQueue = 64

// ConsumerConfig is the durable pull consumer notifiers share: the events
// stored after it was first created (turning notifications on does not
// announce every question ever asked), each acknowledged once its
// notifications are settled.
func (c Config) ConsumerConfig() jetstream.ConsumerConfig {
	c = c.withDefaults()
	return jetstream.ConsumerConfig{
		Durable:       c.Durable,
		Description:   "Holdover notifier: webhook notifications of new and pending questions",
		FilterSubject: streams.AllEvents, // the stream holds the inboxes too
		DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.AckWait,
		MaxAckPending: 4 * c.Lanes * laneQueue,
	}
}

// Notifier follows the SESSIONS stream and notifies webhooks of question
// transitions. For each delivered event it needs the Session's View just
// before it: kept in memory from the previous event (the event's
// Holdover-Prev-Seq names the View's LastSeq), or else folded afresh
// from the stored projection and the log. So every event's transitions
// are the same whichever process, or how many times, it is delivered to,
// and so is every notification's key.
type Notifier struct {
	cfg     Config
	log     *slog.Logger
	store   *projection.Store
	logs    *sessionlog.Log
	streams jetstream.Stream
	post    *poster
	metrics *notifyMetrics
	held    held
	running atomic.Bool
}

// New returns a notifier over the SESSIONS stream and the userQuestions
// bucket, which a question worker provisions. It starts nothing until
// [Notifier.Run].
func New(js jetstream.JetStream, sessions jetstream.Stream, questions jetstream.KeyValue, cfg Config) (*Notifier, error) {
	if len(cfg.Webhooks) == 0 {
		return nil, holdover.New(holdover.CodeBadRequest, "no webhook to notify: name at least one")
	}
	for _, h := range cfg.Webhooks {
		if h.URL == nil {
			return nil, holdover.New(holdover.CodeBadRequest, "a webhook has no URL")
		}
		if _, err := ParseFormat(string(h.Format)); err != nil {
			return nil, err
		}
	}
	if r := cfg.Retry; r.Attempts < 0 || r.First < 0 || r.Max < 0 || r.Timeout < 0 || cfg.AckWait < 0 {
		return nil, holdover.Newf(holdover.CodeBadRequest, "retry policy %+v and ack wait %v: none may be negative", r, cfg.AckWait)
	}
	cfg = cfg.withDefaults()
	logger := cfg.Logger.With("component", "notify", "consumer", cfg.Durable)
	metrics := newNotifyMetrics(cfg.Metrics)
	return &Notifier{
		cfg:     cfg,
		log:     logger,
		store:   projection.NewStore(js, sessions, questions),
		logs:    sessionlog.New(js, sessions),
		streams: sessions,
		post:    &poster{client: cfg.HTTPClient, clock: cfg.Clock, policy: cfg.Retry, metrics: metrics, errors: cfg.Metrics, log: logger},
		metrics: metrics,
		held:    held{msgs: map[jetstream.Msg]struct{}{}},
	}, nil
}

// Run notifies until ctx ends, then hands every event it holds back to
// the server and returns nil; a delivery cut short is made again from
// the redelivered event, under the same key. It calls ready once it
// consumes (the lifecycle of an ops.Component). When the consumer goes
// away under it (an operator deleted it) it creates it again; it fails
// when it cannot. A Notifier runs once at a time.
func (n *Notifier) Run(ctx context.Context, ready func()) error {
	if !n.running.CompareAndSwap(false, true) {
		return holdover.New(holdover.CodeConflict, "notifier is already running")
	}
	defer n.running.Store(false)
	ready = sync.OnceFunc(ready)
	for {
		err := n.consume(ctx, ready)
		if ctx.Err() != nil {
			return nil
		}
		if !errors.Is(err, errConsumerStopped) {
			return err
		}
		n.log.Warn("consumer stopped; creating it again")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(n.cfg.Retry.First):
		}
	}
}

var errConsumerStopped = errors.New("consumer stopped")

// consume creates the consumer and hands each delivered event to the
// lane of its Session until ctx ends or the consumer stops, calling
// consuming once it consumes.
func (n *Notifier) consume(ctx context.Context, consuming func()) error {
	cons, err := n.consumer(ctx)
	if err != nil {
		if stillClosing(err) {
			return errConsumerStopped
		}
		return holdover.Wrapf(err, holdover.CodeInternal, "create consumer %s on %s", n.cfg.Durable, streams.SessionsStream)
	}
	work, stopWork := context.WithCancel(ctx)
	defer stopWork()
	lanes := make([]*lane, n.cfg.Lanes)
	for i := range lanes {
		lanes[i] = &lane{n: n, queue: make(chan jetstream.Msg, laneQueue), views: map[string]*projection.View{}, max: max(1, n.cfg.CacheSize/n.cfg.Lanes)}
	}
	stopping := make(chan struct{})
	cc, err := cons.Consume(func(m jetstream.Msg) {
		n.held.add(m)
		select {
		case lanes[laneOf(m.Subject(), len(lanes))].queue <- m:
		case <-stopping: // held, so handed back once the consumption is closed
		}
	},
		jetstream.PullMaxMessages(256),
		jetstream.PullHeartbeat(streams.PullHeartbeat),
		jetstream.ConsumeErrHandler(func(cc jetstream.ConsumeContext, err error) {
			n.log.Warn("consumer trouble", ops.Err(err))
			if errors.Is(err, jetstream.ErrNoHeartbeat) {
				go streams.StopIfGone(work, n.streams, n.cfg.Durable, cc)
			}
		}))
	if err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "consume %s", n.cfg.Durable)
	}
	var wg sync.WaitGroup
	for _, l := range lanes {
		wg.Go(func() { l.run(work) })
	}
	wg.Go(func() { n.held.keepAlive(work, n.cfg.AckWait/3) })
	n.log.Info("notifying webhooks of question transitions", "webhooks", len(n.cfg.Webhooks))
	consuming()

	var stopped error
	select {
	case <-ctx.Done():
	case <-cc.Closed():
		stopped = errConsumerStopped
	}
	// Hand the held events back only once the consumption's subscription
	// is gone. The server redelivers a Nak'd event at once to a pull that
	// still has interest, and while this one's unsubscribe is on its way
	// that is this pull: the event would reach a subscription that drops
	// it, and wait out AckWait before anyone saw it again. Draining, not
	// stopping, hands what is already on its way to the callback, which
	// holds it too.
	close(stopping)
	stopWork()
	cc.Drain()
	<-cc.Closed()
	wg.Wait()
	n.held.handBack()
	return stopped
}

// stillClosing says a create met the consumer of the same name while the
// server was still deleting it (a create error saying "consumer closed"): it
// succeeds when tried again.
func stillClosing(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeConsumerCreate && strings.Contains(api.Description, "consumer closed")
}

// consumer creates the consumer, or updates it to this notifier's
// configuration but for where it starts: JetStream cannot change that,
// and an operator who made it start at a seq (to replay a window) means it.
func (n *Notifier) consumer(ctx context.Context) (jetstream.Consumer, error) {
	want := n.cfg.ConsumerConfig()
	if c, err := n.streams.Consumer(ctx, want.Durable); err == nil {
		have := c.CachedInfo().Config
		want.DeliverPolicy, want.OptStartSeq, want.OptStartTime = have.DeliverPolicy, have.OptStartSeq, have.OptStartTime
	}
	return n.streams.CreateOrUpdateConsumer(ctx, want)
}

// laneOf spreads Sessions over the lanes by their log subject.
func laneOf(subject string, lanes int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(subject))
	return int(h.Sum32() % uint32(lanes))
}

// lane handles the events of its Sessions one at a time, in delivery
// order, and keeps their Views. Only its goroutine touches views.
type lane struct {
	n     *Notifier
	queue chan jetstream.Msg
	views map[string]*projection.View
	max   int
}

func (l *lane) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-l.queue:
			if l.handle(ctx, m) {
				l.n.held.drop(m)
			}
		}
	}
}

// delivery is one delivered Session event.
type delivery struct {
	sid   string
	event events.Event // Body nil when the event does not decode
	// prev is the Session seq the event was appended after, when known.
	prev    uint64
	hasPrev bool
	stored  time.Time
	attempt uint64
}

// handle settles the notifications of one event, then acknowledges it,
// and reports whether it settled the event. A fold that fails (the log
// unreadable) hands the event back to be tried again after a back-off.
// A stop cuts it short and leaves the event held, for the consumption
// to hand back once it is closed.
func (l *lane) handle(ctx context.Context, m jetstream.Msg) bool {
	d, ok := l.n.receive(m)
	if !ok {
		return true
	}
	notes, err := l.notifications(ctx, d)
	if err != nil {
		delete(l.views, d.sid)
		if ctx.Err() != nil {
			return false
		}
		delay := l.n.cfg.Retry.Backoff(int(d.attempt))
		l.n.log.Error("fold failed; retrying later", "session", d.sid, "seq", d.event.Seq, "retry_in", delay, "code", holdover.CodeOf(err), ops.Err(err))
		l.n.cfg.Metrics.Error("notify", err)
		_ = m.NakWithDelay(delay)
		return true
	}
	if err := l.n.send(ctx, notes); err != nil {
		delete(l.views, d.sid) // folded past an event that goes back
		return false
	}
	if len(notes) > 0 {
		l.n.metrics.lag.Observe(time.Since(d.stored).Seconds())
	}
	_ = m.Ack()
	return true
}

// notifications folds d's event into its Session's View and describes
// the transitions it made.
func (l *lane) notifications(ctx context.Context, d delivery) ([]Notification, error) {
	v, err := l.view(ctx, d)
	if err != nil {
		return nil, err
	}
	changes := step(v, d.event)
	l.keep(d.sid, v)
	notes := make([]Notification, 0, len(changes))
	for _, c := range changes {
		note, err := notification(d.sid, d.event, c, cardLink(l.n.cfg.WebURL, d.sid))
		if err != nil { // a call id no key can name: over 128 bytes
			l.n.log.Error("passing over a question no notification can name", "session", d.sid, "seq", d.event.Seq, "code", holdover.CodeOf(err), ops.Err(err))
			l.n.cfg.Metrics.Error("notify", err)
			continue
		}
		notes = append(notes, note)
	}
	return notes, nil
}

// view returns Session d.sid's View just before d's event: the kept one
// when the event follows it, the empty View for a Session's first event,
// or else one caught up from the log.
func (l *lane) view(ctx context.Context, d delivery) (*projection.View, error) {
	v, ok := l.views[d.sid]
	switch {
	case ok && d.hasPrev && d.prev == v.LastSeq:
		return v, nil
	case !ok && d.hasPrev && d.prev == 0:
		fresh := projection.New()
		return &fresh, nil
	case !ok || v.LastSeq >= d.event.Seq:
		v = nil // nothing kept from before the event
	}
	return l.n.seed(ctx, d.sid, d.event.Seq, v)
}

// keep remembers v as sid's View. The lane keeps at most max Views and
// forgets an arbitrary one to make room: a forgotten Session costs one
// seed on its next event.
func (l *lane) keep(sid string, v *projection.View) {
	if _, ok := l.views[sid]; !ok && len(l.views) >= l.max {
		for other := range l.views {
			delete(l.views, other)
			break
		}
	}
	l.views[sid] = v
}

// seed folds Session sid's View just before seq from the log: onto
// kept, a View of it before seq that this lane kept (another process
// took the events in between), else onto the stored projection when it
// is behind seq, else from the empty View (the stored one is usually a
// little ahead: the projection worker folds the same events).
func (n *Notifier) seed(ctx context.Context, sid string, seq uint64, kept *projection.View) (*projection.View, error) {
	n.metrics.seeds.Inc()
	v := projection.New()
	if kept != nil {
		v = *kept
	} else if stored, found, err := n.store.Get(ctx, sid); err == nil && found && stored.LastSeq < seq {
		v = stored
	}
	evts, bad, err := n.logs.Read(ctx, sid, v.LastSeq)
	if err != nil {
		return nil, err
	}
	// An event that no longer decodes still moves LastSeq past it, as
	// it does in the projection, so the next event's Prev-Seq matches.
	for _, b := range bad {
		evts = append(evts, events.Event{Seq: b.Seq})
	}
	slices.SortFunc(evts, func(a, b events.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, e := range evts {
		if e.Seq >= seq {
			break
		}
		v.Apply(e)
	}
	return &v, nil
}

// receive reads a delivered message. One that names no valid Session is
// terminated; one that does not decode is passed as a blank event, which
// moves its Session's View past it and notifies nothing.
func (n *Notifier) receive(m jetstream.Msg) (delivery, bool) {
	sid, ok := streams.SessionFromSubject(m.Subject())
	meta, err := m.Metadata()
	if !ok || streams.CheckSession(sid) != nil || err != nil {
		err := holdover.Newf(holdover.CodeBadRequest, "message on %q is not a Session event", m.Subject())
		n.log.Error("dropping a message that is not a Session event", "subject", m.Subject(), ops.Err(err))
		n.cfg.Metrics.Error("notify", err)
		_ = m.Term()
		return delivery{}, false
	}
	e, _, err := sessionlog.DecodeMsg(m)
	if err != nil {
		n.log.Warn("passing over an event that does not decode", "session", sid, "seq", e.Seq, "code", holdover.CodeOf(err), ops.Err(err))
		n.cfg.Metrics.Error("notify", err)
		e = events.Event{Seq: e.Seq}
	}
	prev, hasPrev := sessionlog.Prev(m.Headers())
	return delivery{sid: sid, event: e, prev: prev, hasPrev: hasPrev, stored: meta.Timestamp, attempt: meta.NumDelivered}, true
}

// send delivers every note to every webhook at once and returns when
// each delivery is settled, or ctx's error when ctx ended first.
func (n *Notifier) send(ctx context.Context, notes []Notification) error {
	var wg sync.WaitGroup
	var stopped atomic.Bool
	for _, note := range notes {
		for _, h := range n.cfg.Webhooks {
			data, err := body(note, h.Format)
			if err != nil {
				n.post.deadLetter(h, note, err, 0)
				continue
			}
			wg.Go(func() {
				if n.post.deliver(ctx, h, note, data) != nil {
					stopped.Store(true)
				}
			})
		}
	}
	wg.Wait()
	if stopped.Load() {
		return context.Cause(ctx)
	}
	return nil
}

// held is the set of delivered events not yet acknowledged or handed
// back: queued for a lane or being notified. Each is kept alive
// (InProgress) so the server does not hand it out again while a slow
// webhook is retried.
type held struct {
	mu   sync.Mutex
	msgs map[jetstream.Msg]struct{}
}

func (h *held) add(m jetstream.Msg) {
	h.mu.Lock()
	h.msgs[m] = struct{}{}
	h.mu.Unlock()
}

func (h *held) drop(m jetstream.Msg) {
	h.mu.Lock()
	delete(h.msgs, m)
	h.mu.Unlock()
}

// handBack gives every held event back to the server (Nak), to be
// delivered again at once to another pull.
func (h *held) handBack() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for m := range h.msgs {
		_ = m.Nak()
		delete(h.msgs, m)
	}
}

// keepAlive tells the server every period that each held event is in
// progress, until ctx ends. It runs on real time: AckWait does.
func (h *held) keepAlive(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		msgs := make([]jetstream.Msg, 0, len(h.msgs))
		for m := range h.msgs {
			msgs = append(msgs, m)
		}
		h.mu.Unlock()
		for _, m := range msgs {
			_ = m.InProgress()
		}
	}
}
