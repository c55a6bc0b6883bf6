package projection

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// DefaultDurable names the pull consumer every projection worker shares.
const DefaultDurable = streams.ProjectionDurable

// maxAckPending bounds the events delivered to all workers and not yet
// acknowledged. It leaves room for several workers' full batches.
const maxAckPending = 20_000

// WorkerConfig tunes a [Worker]. The zero value is ready to use.
type WorkerConfig struct {
	// Durable names the shared consumer; default [DefaultDurable].
	Durable string
	// Batch is the most events folded together; default 1,024. Events of
	// one Session in a batch cost one KV write.
	Batch int
	// Parallel bounds the Sessions of one batch folded and written at
	// once; default 16.
	Parallel int
	// CacheSize bounds the Views kept in memory; default 10,000.
	CacheSize int
	// AckWait is how long a delivered event may stay unacknowledged before
	// the server hands it to a worker again; default 30 s. Every worker
	// must use the same value: it is part of the shared consumer.
	AckWait time.Duration
	// RetryDelay is how long a Session whose fold failed waits before its
	// events are delivered again; default 1 s. It doubles with each
	// further failure of the same events, up to 64 times.
	RetryDelay time.Duration
	// Metrics receives the worker's counters; nil keeps them private.
	Metrics *ops.Metrics
	// Logger receives the worker's logs; nil means slog.Default().
	Logger *slog.Logger
}

func (c WorkerConfig) withDefaults() WorkerConfig {
	c.Durable = cmp.Or(c.Durable, DefaultDurable)
	c.Batch = cmp.Or(c.Batch, 1024)
	c.Parallel = cmp.Or(c.Parallel, 16)
	c.CacheSize = cmp.Or(c.CacheSize, 10_000)
	c.AckWait = cmp.Or(c.AckWait, 30*time.Second)
	c.RetryDelay = cmp.Or(c.RetryDelay, time.Second)
	if c.Metrics == nil {
		c.Metrics = ops.NewMetrics()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// ConsumerConfig is the durable pull consumer the workers share: every
// Session event from the start of the log, each acknowledged once its
// fold is written.
func (c WorkerConfig) ConsumerConfig() jetstream.ConsumerConfig {
	c = c.withDefaults()
	return jetstream.ConsumerConfig{
		Durable:       c.Durable,
		Description:   "Holdover projection workers: fold Session logs into " + streams.QuestionsBucket,
		FilterSubject: streams.AllEvents, // the stream holds the inboxes too
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.AckWait,
		MaxAckPending: maxAckPending,
	}
}

// Worker folds the SESSIONS stream into the userQuestions bucket (D1). Any
// number of workers may run against one server: they share a durable
// consumer, so each event is delivered to one of them, and they write
// Views with compare-and-set, so the bucket only ever holds the fold of a
// prefix of each Session's log, whichever worker wrote it.
//
// A delivered event that directly follows the stored View's LastSeq is
// folded as it came; any other is preceded by a read of the Session's log
// from that seq (a catch-up). So redelivered, reordered or skipped
// deliveries never change the result, and a restart resumes from the
// consumer without refolding anything.
//
// It is the one follower of the Session logs: before each View write it
// also marks the reply reservations the folded events released or
// restored on their reply subjects (D8, see worker_reservations.go).
type Worker struct {
	store   *Store
	replies *inbox.Replies
	cfg     WorkerConfig
	log     *slog.Logger
	metrics *ops.Metrics
	cache   *sessionCache[entry]
	running atomic.Bool
	// rejected reports the events the fold could not use (reject.go).
	rejected rejectionReport

	folded, catchUps, conflicts prometheus.Counter
	lag                         prometheus.Observer
	marked                      *prometheus.CounterVec
}

// NewWorker returns a worker writing Views through store and the markers
// of the reply reservations to replies. It starts nothing until
// [Worker.Run].
func NewWorker(store *Store, replies *inbox.Replies, cfg WorkerConfig) *Worker {
	cfg = cfg.withDefaults()
	m := cfg.Metrics
	return &Worker{
		store:     store,
		replies:   replies,
		cfg:       cfg,
		log:       cfg.Logger.With("component", "projection", "consumer", cfg.Durable),
		metrics:   m,
		cache:     newSessionCache[entry](cfg.CacheSize),
		rejected:  rejectionReport{log: cfg.Logger.With("component", "projection", "consumer", cfg.Durable), counter: m.EventsRejected},
		folded:    m.EventsFolded.WithLabelValues(cfg.Durable),
		catchUps:  m.CatchUps.WithLabelValues(cfg.Durable),
		conflicts: m.KVConflicts.WithLabelValues(streams.QuestionsBucket),
		lag:       m.FoldLag.WithLabelValues(cfg.Durable),
		marked:    m.ReservationMarkers,
	}
}

// Run folds events until ctx ends, then hands every event it holds but
// has not written back to the server for redelivery and returns nil (the
// lifecycle of an ops.Component): it calls ready once it consumes. When
// the consumer goes away under it (an operator deleted it to replay the
// log, say) it creates it again, and while JetStream does not answer (a
// cluster without a quorum) it tries again with a growing delay; it
// fails when it is refused, or the connection is closed. A Worker runs
// once at a time.
func (w *Worker) Run(ctx context.Context, ready func()) error {
	if !w.running.CompareAndSwap(false, true) {
		return holdover.New(holdover.CodeConflict, "projection worker is already running")
	}
	defer w.running.Store(false)
	ready = sync.OnceFunc(ready)
	for unanswered := 0; ; {
		err := w.consume(ctx, ready)
		if ctx.Err() != nil {
			return nil
		}
		delay := w.cfg.RetryDelay
		switch {
		case errors.Is(err, errConsumerStopped):
			unanswered = 0
			w.log.Warn("consumer stopped; creating it again")
		case streams.Unavailable(err):
			delay = min(w.cfg.RetryDelay<<min(unanswered, 8), maxUnansweredDelay)
			unanswered++
			w.log.Warn("JetStream did not answer; creating the consumer again", ops.Err(err), "retry", delay)
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
}

// errConsumerStopped says the consumer ended without being asked to.
var errConsumerStopped = errors.New("consumer stopped")

// maxUnansweredDelay bounds the back-off of consumer creations JetStream
// did not answer, so a worker is folding within seconds of a cluster's
// quorum coming back.
const maxUnansweredDelay = 4 * time.Second

// consume creates the shared consumer and folds what it delivers until
// ctx ends or the consumer stops, calling consuming once it consumes.
func (w *Worker) consume(ctx context.Context, consuming func()) error {
	cons, err := w.store.sessions.CreateOrUpdateConsumer(ctx, w.cfg.ConsumerConfig())
	if err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "create consumer %s on %s", w.cfg.Durable, streams.SessionsStream)
	}
	delivered := make(chan jetstream.Msg, w.cfg.Batch)
	stopping := make(chan struct{})
	var late struct {
		sync.Mutex
		msgs []jetstream.Msg
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		select {
		case delivered <- m:
		case <-stopping: // handed back once the consumption is closed
			late.Lock()
			late.msgs = append(late.msgs, m)
			late.Unlock()
		}
	},
		jetstream.PullMaxMessages(2*w.cfg.Batch),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			w.log.Warn("consumer trouble", ops.Err(err))
		}))
	if err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "consume %s", w.cfg.Durable)
	}
	// What is left is handed back (Nak) only once the subscription is
	// gone: the server redelivers a Nak'd event at once to a pull that
	// still has interest, this one until its unsubscribe arrives, whose
	// subscription would then drop it until AckWait. Draining, not
	// stopping, hands what is already on its way to the callback.
	defer func() {
		close(stopping)
		cc.Drain()
		<-cc.Closed()
		for len(delivered) > 0 {
			_ = (<-delivered).Nak()
		}
		late.Lock()
		for _, m := range late.msgs {
			_ = m.Nak()
		}
		late.Unlock()
	}()
	w.log.Info("folding Session events")
	consuming()
	for {
		batch := make([]jetstream.Msg, 0, w.cfg.Batch)
		select {
		case <-ctx.Done():
			return nil
		case <-cc.Closed():
			return errConsumerStopped
		case m := <-delivered:
			batch = append(batch, m)
		}
	more:
		for len(batch) < w.cfg.Batch {
			select {
			case m := <-delivered:
				batch = append(batch, m)
			default:
				break more
			}
		}
		w.foldBatch(ctx, batch)
	}
}

// delivery is one delivered Session event.
type delivery struct {
	msg jetstream.Msg
	// event has Seq set; its Body is nil when the type is unknown or the
	// message does not decode, and folding it then only advances LastSeq.
	event events.Event
	// prev is the Session seq the event was appended after, when known.
	prev    uint64
	hasPrev bool
	stored  time.Time
	// attempt counts deliveries of this event, 1 the first time.
	attempt uint64
	// rejection says why the fold cannot use the event, if it cannot; it
	// is reported when the delivery is acknowledged, so once per event.
	rejection *Rejection
}

// foldBatch groups a batch by Session and folds each group with one write.
// A batch that started is finished even when ctx ends meanwhile (its
// writes are safe to complete and cheaper than a redelivery), but not
// past AckWait, when the server hands its events out again anyway.
func (w *Worker) foldBatch(ctx context.Context, batch []jetstream.Msg) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.AckWait)
	defer cancel()
	groups := make(map[string][]delivery)
	var order []string
	for _, m := range batch {
		sid, d, ok := w.receive(m)
		if !ok {
			continue
		}
		if _, seen := groups[sid]; !seen {
			order = append(order, sid)
		}
		groups[sid] = append(groups[sid], d)
	}
	// Sessions are independent, so their folds and KV writes overlap: a
	// batch costs about one round trip per Parallel Sessions, not per Session.
	var wg sync.WaitGroup
	slots := make(chan struct{}, w.cfg.Parallel)
	for _, sid := range order {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			w.foldSession(ctx, sid, groups[sid])
		})
	}
	wg.Wait()
}

// receive decodes a delivered message. An event the fold cannot use is
// noted for reporting (Reject); one that does not decode is kept as a
// blank, so its Session moves past it (the log keeps it for a later
// version to read). A message that names no valid Session cannot be
// folded anywhere and is terminated.
func (w *Worker) receive(m jetstream.Msg) (string, delivery, bool) {
	sid, ok := streams.SessionFromSubject(m.Subject())
	if !ok || streams.CheckSession(sid) != nil {
		w.terminate(m, holdover.Newf(holdover.CodeBadRequest, "subject %q names no valid Session", m.Subject()))
		return "", delivery{}, false
	}
	meta, err := m.Metadata()
	if err != nil {
		w.terminate(m, holdover.Wrapf(err, holdover.CodeInternal, "message on %q has no JetStream metadata", m.Subject()))
		return "", delivery{}, false
	}
	e, err := events.Decode(m.Data())
	e.Seq = meta.Sequence.Stream
	d := delivery{msg: m, stored: meta.Timestamp, attempt: meta.NumDelivered}
	if r, rejected := Reject(e, err); rejected {
		d.rejection = &r
	}
	if err != nil {
		e = events.Event{Seq: e.Seq}
	}
	d.event = e
	d.prev, d.hasPrev = sessionlog.Prev(m.Headers())
	return sid, d, true
}

func (w *Worker) terminate(m jetstream.Msg, err error) {
	w.log.Error("dropping a message that is not a Session event", "subject", m.Subject(), ops.Err(err))
	w.metrics.Error("projection", err)
	_ = m.Term()
}

// foldSession folds one Session's deliveries into its View, writes the
// reservation markers the fold owes and then the View, once, and
// acknowledges them. When another writer got there first it
// reloads and folds again; on any other failure the deliveries go back to
// the server to be retried after RetryDelay, and no other Session waits.
func (w *Worker) foldSession(ctx context.Context, sid string, ds []delivery) {
	slices.SortFunc(ds, func(a, b delivery) int { return cmp.Compare(a.event.Seq, b.event.Seq) })
	cur, ok := w.cache.get(sid)
	var err error
	if !ok {
		cur, err = w.load(ctx, sid)
	}
	for err == nil {
		from, before := cur.view.LastSeq, reservationsOf(cur.view)
		var n int
		n, err = w.advance(ctx, sid, &cur.view, ds)
		if err == nil && n > 0 {
			err = w.writeMarks(ctx, sid, before, from, cur.view)
		}
		if err == nil && n > 0 {
			var rev uint64
			if rev, err = w.store.save(ctx, sid, cur.rev, cur.view); err == nil {
				cur.rev = rev
				// After the write, which Clients wait for and the proof is
				// not part of: it is kept beside the View, never stored.
				if w.prove(ctx, sid, &cur.view) {
					w.store.keepProof(sid, cur.view)
				}
			}
		}
		if err == nil {
			w.cache.put(sid, cur)
			w.acknowledge(sid, ds, from, n)
			return
		}
		// The View was folded in place; it no longer matches the bucket.
		w.cache.drop(sid)
		if !holdover.HasCode(err, holdover.CodeConflict) {
			break
		}
		w.conflicts.Inc()
		cur, err = w.load(ctx, sid)
	}
	delay := w.retryDelay(ds)
	w.log.Error("fold failed; retrying later", "session", sid, "events", len(ds), "retry_in", delay, "code", holdover.CodeOf(err), ops.Err(err))
	w.metrics.Error("projection", err)
	for _, d := range ds {
		_ = d.msg.NakWithDelay(delay)
	}
}

// maxRetryDoublings caps the backoff of a Session that keeps failing at
// 64 × RetryDelay.
const maxRetryDoublings = 6

// retryDelay doubles RetryDelay with each delivery of the most retried
// event, so a Session that cannot be written (a View over the bucket's
// value limit, say) costs the worker less and less time.
func (w *Worker) retryDelay(ds []delivery) time.Duration {
	var attempt uint64 = 1
	for _, d := range ds {
		attempt = max(attempt, d.attempt)
	}
	return w.cfg.RetryDelay << min(attempt-1, maxRetryDoublings)
}

// load reads sid's stored View. An unreadable value is logged and
// replaced by a refold from the log, written over it.
func (w *Worker) load(ctx context.Context, sid string) (entry, error) {
	e, err := w.store.load(ctx, sid)
	if err == nil && e.unreadable != nil {
		w.log.Warn("stored View is unreadable; refolding the Session from its log", "session", sid, ops.Err(e.unreadable))
		w.metrics.Error("projection", e.unreadable)
	}
	return e, err
}

// advance folds deliveries ds (sorted by seq) into v and returns how many
// events it folded. Deliveries at or before v.LastSeq are already in v.
func (w *Worker) advance(ctx context.Context, sid string, v *View, ds []delivery) (int, error) {
	n := 0
	for _, d := range ds {
		seq := d.event.Seq
		switch {
		case seq <= v.LastSeq:
			continue
		case d.hasPrev && d.prev == v.LastSeq:
			v.Apply(d.event)
			n++
			continue
		}
		read, err := w.store.catchUp(ctx, sid, v)
		if err != nil {
			return n, err
		}
		w.catchUps.Inc()
		n += read
		if v.LastSeq < seq {
			return n, holdover.Newf(holdover.CodeInternal, "session %s log ends at seq %d, before delivered seq %d", sid, v.LastSeq, seq)
		}
	}
	return n, nil
}

// acknowledge acks every delivery of Session sid once its fold is
// written, records the lag of those this write folded (seq past from) and
// reports the rejected ones.
func (w *Worker) acknowledge(sid string, ds []delivery, from uint64, folded int) {
	w.folded.Add(float64(folded))
	now := time.Now()
	for _, d := range ds {
		if d.event.Seq > from {
			w.lag.Observe(now.Sub(d.stored).Seconds())
		}
		_ = d.msg.Ack()
		if d.rejection != nil {
			w.rejected.report(sid, *d.rejection)
		}
	}
}
