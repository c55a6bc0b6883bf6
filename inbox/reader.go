package inbox

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

// DefaultShardSize is how many Sessions one consumer of a [Reader]
// follows. The server checks a consumer's filters pairwise on every
// update, so an update costs the square of its filters: 2 ms at 64
// Sessions (128 filters), 7 ms at 100 and 470 ms at 1,000 on the
// reference machine.
const DefaultShardSize = 64

// ReaderConfig configures a [Reader].
type ReaderConfig struct {
	// Name names the reader's consumers, inbox-<Name>-<n>: the runtime
	// instance. Letters, digits, '-' and '_'.
	Name string
	// ShardSize is how many Sessions one consumer follows; 0 means
	// [DefaultShardSize].
	ShardSize int
	// Logger receives the reader's logs; nil is slog.Default().
	Logger *slog.Logger
}

// Reader reads the inboxes of the Sessions one process runs through one
// consumer per ShardSize Sessions, instead of one consumer per Session,
// which costs the server tens of KiB each. Its consumers are named
// inbox-<name>-<n> on SESSIONS; each filters on the inbox subjects
// ([streams.InboxSubjects]) of the Sessions it follows, a set the reader
// updates as Sessions are followed and left. Messages are routed to their
// Session in memory and delivered in stream order, each Session's on a
// goroutine of its own while it has any, so one slow Session holds up no
// other.
//
// A Session followed from a position first reads what its consumer will
// not deliver, the messages stored before its filters joined, with direct
// gets (catch-up), and holds the consumer's deliveries until then: nothing
// is delivered twice or out of order. A consumer that vanishes (the server
// lost it, or it outlived a long disconnect) is created again, and every
// Session on it catches up from its last delivery.
//
// The reader never records anything: what a Session does with a message
// is its runtime's (the log's InboxSeq is where it resumes).
type Reader struct {
	stream jetstream.Stream
	cfg    ReaderConfig
	log    *slog.Logger
	// closing ends with Close; consumer updates run under it.
	closing context.Context
	close   context.CancelFunc

	mu       sync.Mutex
	closed   bool
	sessions map[string]*follower
	shards   []*shard
	// tasks are the reader's own goroutines (consumer updates, recoveries,
	// watches of a consumption's end), which Close waits for; once it
	// does, drained refuses more.
	tasks   sync.WaitGroup
	drained bool
}

// NewReader returns a reader of the inboxes in stream (SESSIONS).
func NewReader(stream jetstream.Stream, cfg ReaderConfig) (*Reader, error) {
	if err := streams.CheckSession(cfg.Name); err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeBadRequest, "inbox reader name %q", cfg.Name)
	}
	if cfg.ShardSize <= 0 {
		cfg.ShardSize = DefaultShardSize
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	r := &Reader{stream: stream, cfg: cfg, log: log, sessions: map[string]*follower{}}
	r.closing, r.close = context.WithCancel(context.Background())
	return r, nil
}

// follower is one followed Session. Every field is guarded by Reader.mu.
type follower struct {
	sid      string
	subjects []string
	deliver  func(Queued)
	shard    *shard
	// seen is the stream seq of the last message queued for delivery:
	// anything at or before it is passed over.
	seen uint64
	// caught is false while the Session catches up; the consumer's
	// deliveries are held meanwhile. catchUps counts the catch-ups begun:
	// only the last one may end it, since only it surely began after the
	// consumer last started following the Session.
	caught   bool
	catchUps int
	held     []stored
	queue    []stored
	// draining says a goroutine delivers the queue; drains waits for it.
	draining bool
	drains   sync.WaitGroup
	left     bool
}

// stored is one message of the stream, from the consumer or a direct get.
type stored struct {
	seq    uint64
	header nats.Header
	data   []byte
}

// Follow delivers Session sid's inbox messages after stream seq after (0:
// from the first) to deliver, one at a time and in order, passing over
// reservation markers and messages that do not decode. It returns once
// the Session's consumer follows it and its catch-up is queued; stop ends
// the delivery and waits for one in progress (never call it from
// deliver). A Session is followed once at a time (CONFLICT otherwise).
func (r *Reader) Follow(ctx context.Context, sid string, after uint64, deliver func(Queued)) (stop func(), err error) {
	subjects, err := streams.InboxSubjects(sid)
	if err != nil {
		return nil, err
	}
	f := &follower{sid: sid, subjects: subjects, deliver: deliver, seen: after}
	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		return nil, holdover.Newf(holdover.CodeInternal, "inbox reader %s is closed", r.cfg.Name)
	case r.sessions[sid] != nil:
		r.mu.Unlock()
		return nil, holdover.Newf(holdover.CodeConflict, "the inbox of session %s is followed already", sid)
	}
	r.sessions[sid] = f
	s := r.shardWithRoom()
	f.shard = s
	s.followers[sid] = f
	update := s.update()
	r.mu.Unlock()

	stop = func() { r.leave(f) }
	if err := update.wait(ctx); err != nil {
		stop()
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "follow the inbox of session %s", sid)
	}
	if err := r.catchUp(ctx, f); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// shardWithRoom returns the first shard that follows fewer than ShardSize
// Sessions, adding one when all are full. The caller holds r.mu.
func (r *Reader) shardWithRoom() *shard {
	for _, s := range r.shards {
		if len(s.followers) < r.cfg.ShardSize {
			return s
		}
	}
	s := &shard{r: r, name: "inbox-" + r.cfg.Name + "-" + strconv.Itoa(len(r.shards)), followers: map[string]*follower{}}
	r.shards = append(r.shards, s)
	return s
}

// catchUp queues the messages of f's subjects from f.seen on that the
// consumer will not deliver: every one stored until the stream's end as
// it reads it, which is past where the consumer started following f. Then
// it queues the deliveries it held past what it read.
func (r *Reader) catchUp(ctx context.Context, f *follower) error {
	r.mu.Lock()
	from := f.seen + 1
	f.catchUps++
	mine := f.catchUps
	f.caught = false
	r.mu.Unlock()
	err := readFrom(ctx, r.stream, f.subjects, from, func(m stored) {
		r.mu.Lock()
		r.queue(f, m)
		r.mu.Unlock()
	})
	if err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "read the inbox of session %s from stream seq %d", f.sid, from)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if f.catchUps != mine {
		return nil // a later catch-up ends it
	}
	f.caught = true
	for _, m := range f.held {
		r.queue(f, m)
	}
	f.held = nil
	return nil
}

// readFrom hands fn every message of subjects stored at stream seq from or
// later, in stream order, up to the stream's end as it reads it: one
// direct get per message and subject.
func readFrom(ctx context.Context, stream jetstream.Stream, subjects []string, from uint64, fn func(stored)) error {
	next := make([]*jetstream.RawStreamMsg, len(subjects))
	for {
		var first *jetstream.RawStreamMsg
		for i, subject := range subjects {
			if next[i] == nil || next[i].Sequence < from {
				m, err := stream.GetMsg(ctx, from, jetstream.WithGetMsgSubject(subject))
				switch {
				case errors.Is(err, jetstream.ErrMsgNotFound):
					m = &jetstream.RawStreamMsg{Sequence: 0}
				case err != nil:
					return err
				}
				next[i] = m
			}
			if m := next[i]; m.Sequence >= from && (first == nil || m.Sequence < first.Sequence) {
				first = m
			}
		}
		if first == nil {
			return nil
		}
		fn(stored{seq: first.Sequence, header: first.Header, data: first.Data})
		from = first.Sequence + 1
	}
}

// Since reads Session sid's inbox once: every message stored after stream
// seq after, in order, passing over reservation markers. A runtime that
// does not follow the inbox (a short-lived host hook) reads it this way
// from the InboxSeq of its Session's last splice. A message that does not
// decode is returned in bad with its seq, never dropped silently.
func Since(ctx context.Context, stream jetstream.Stream, sid string, after uint64) (msgs []Queued, bad []uint64, err error) {
	subjects, err := streams.InboxSubjects(sid)
	if err != nil {
		return nil, nil, err
	}
	err = readFrom(ctx, stream, subjects, after+1, func(m stored) {
		if IsMarker(m.header) {
			return
		}
		msg, derr := Decode(m.data)
		if derr != nil {
			bad = append(bad, m.seq)
			return
		}
		msgs = append(msgs, Queued{Seq: m.seq, Message: msg})
	})
	if err != nil {
		return nil, nil, holdover.Wrapf(err, holdover.CodeInternal, "read the inbox of session %s after stream seq %d", sid, after)
	}
	return msgs, bad, nil
}

// Stored is one message of a Session's inbox as it is stored, not decoded.
type Stored struct {
	Seq  uint64
	Data []byte
}

// ReadStored returns every message of Session sid's inbox, its own subject
// and its reply subjects, in order and as stored, passing over reservation
// markers: for tools that check what a writer published rather than what a
// reader makes of it (`holdover check`).
func ReadStored(ctx context.Context, stream jetstream.Stream, sid string) ([]Stored, error) {
	subjects, err := streams.InboxSubjects(sid)
	if err != nil {
		return nil, err
	}
	var out []Stored
	err = readFrom(ctx, stream, subjects, 1, func(m stored) {
		if !IsMarker(m.header) {
			out = append(out, Stored{Seq: m.seq, Data: m.data})
		}
	})
	if err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "read the inbox of session %s", sid)
	}
	return out, nil
}

// route hands a message the consumer of s delivered to its Session.
func (r *Reader) route(s *shard, m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		r.log.Warn("passing over an inbox delivery without JetStream metadata", "consumer", s.name, "subject", m.Subject(), ops.Err(err))
		return
	}
	sid, _ := streams.SessionFromSubject(m.Subject())
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.sessions[sid]
	if f == nil || f.shard != s {
		// Left while the consumer's filters still named it: the message
		// stays in the stream for whoever runs the Session next.
		r.log.Debug("passing over a message of a session no longer followed", "session", sid, "seq", meta.Sequence.Stream)
		return
	}
	msg := stored{seq: meta.Sequence.Stream, header: m.Headers(), data: m.Data()}
	if !f.caught {
		f.held = append(f.held, msg)
		return
	}
	r.queue(f, msg)
}

// queue puts m on f's delivery queue unless it was queued already, and
// starts the goroutine that delivers it. The caller holds r.mu.
func (r *Reader) queue(f *follower, m stored) {
	if f.left || m.seq <= f.seen {
		return
	}
	f.seen = m.seq
	f.queue = append(f.queue, m)
	if !f.draining {
		f.draining = true
		f.drains.Add(1)
		go r.drain(f)
	}
}

// drain delivers f's queue until it is empty or f left.
func (r *Reader) drain(f *follower) {
	defer f.drains.Done()
	for {
		r.mu.Lock()
		if f.left || len(f.queue) == 0 {
			f.draining = false
			r.mu.Unlock()
			return
		}
		m := f.queue[0]
		f.queue = f.queue[1:]
		r.mu.Unlock()
		if IsMarker(m.header) {
			continue // a reply reservation's marker, for the question worker
		}
		msg, err := Decode(m.data)
		if err != nil {
			r.log.Warn("passing over an inbox message that does not decode", "session", f.sid, "seq", m.seq, ops.Err(err))
			continue
		}
		f.deliver(Queued{Seq: m.seq, Message: msg})
	}
}

// leave stops following f and waits for a delivery in progress.
func (r *Reader) leave(f *follower) {
	r.mu.Lock()
	if !f.left {
		f.left = true
		f.queue, f.held = nil, nil
		if r.sessions[f.sid] == f {
			delete(r.sessions, f.sid)
		}
		delete(f.shard.followers, f.sid)
		f.shard.update() // nobody waits: the routing passes over f meanwhile
	}
	r.mu.Unlock()
	f.drains.Wait()
}

// Close stops following every Session still followed, stops every
// consumer and deletes them (each within consumerTimeout; one that is not
// deleted ends on its own when idle), and returns once none of the
// reader's goroutines runs. Closing again does nothing.
func (r *Reader) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	followers := slices.Collect(maps.Values(r.sessions))
	shards := slices.Clone(r.shards)
	r.mu.Unlock()
	for _, f := range followers {
		r.leave(f)
	}
	r.close()
	for _, s := range shards {
		s.stopConsuming()
	}
	r.mu.Lock()
	r.drained = true
	r.mu.Unlock()
	r.tasks.Wait()
	// Deleted by name, after the updates: one that was creating its
	// consumer as Close began may have made it.
	ctx, cancel := context.WithTimeout(context.Background(), consumerTimeout)
	defer cancel()
	var errs []error
	for _, s := range shards {
		errs = append(errs, s.delete(ctx))
	}
	return errors.Join(errs...)
}

// goLocked runs fn on a goroutine Close waits for, unless Close is past
// waiting. The caller holds r.mu.
func (r *Reader) goLocked(fn func()) {
	if !r.drained {
		r.tasks.Go(fn)
	}
}

// goTask is goLocked for a caller that does not hold r.mu.
func (r *Reader) goTask(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.goLocked(fn)
}

// shard is one consumer and the Sessions it follows. Its fields are
// guarded by Reader.mu, but for cons and the consumption, which only its
// update goroutine touches.
type shard struct {
	r         *Reader
	name      string
	followers map[string]*follower
	// next is the update that will carry the changes made since the
	// last one started; updating says a goroutine runs updates.
	next     *update
	updating bool
	cc       jetstream.ConsumeContext
}

// update is one change of a shard's consumer, shared by every change made
// before it started.
type update struct {
	done chan struct{}
	err  error
}

func (u *update) wait(ctx context.Context) error {
	select {
	case <-u.done:
		return u.err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// update returns the update that will carry the changes made so far and
// starts the goroutine that applies updates. The caller holds r.mu.
func (s *shard) update() *update {
	if s.next == nil {
		s.next = &update{done: make(chan struct{})}
	}
	u := s.next
	if !s.updating {
		s.updating = true
		s.r.goLocked(s.applyUpdates)
	}
	return u
}

// consumerTimeout bounds one update of a shard's consumer.
const consumerTimeout = 10 * time.Second

// applyUpdates applies updates until none is pending: each sets the
// consumer's filters to the Sessions followed when it starts.
func (s *shard) applyUpdates() {
	r := s.r
	for {
		r.mu.Lock()
		u := s.next
		s.next = nil
		if u == nil || r.closed {
			s.updating = false
			r.mu.Unlock()
			if u != nil {
				u.err = holdover.Newf(holdover.CodeInternal, "inbox reader %s is closed", r.cfg.Name)
				close(u.done)
			}
			return
		}
		var filters []string
		for _, f := range s.followers {
			filters = append(filters, f.subjects...)
		}
		r.mu.Unlock()
		slices.Sort(filters)
		ctx, cancel := context.WithTimeout(r.closing, consumerTimeout)
		u.err = s.apply(ctx, filters)
		cancel()
		close(u.done)
	}
}

// apply makes the consumer filter on filters: created and consumed when
// not consuming yet, updated, or deleted when filters is empty (a consumer
// without filters would deliver the whole stream). A consumer that
// vanished while consumed is not created again here, which would lose
// what was stored meanwhile: it is recovered ([shard.lost]).
func (s *shard) apply(ctx context.Context, filters []string) error {
	r := s.r
	if len(filters) == 0 {
		if s.stopConsuming() {
			if err := s.delete(ctx); err != nil {
				r.log.Warn("delete an inbox consumer nobody follows", ops.Err(err))
			}
		}
		return nil
	}
	cfg := jetstream.ConsumerConfig{
		Name:              s.name,
		FilterSubjects:    filters,
		DeliverPolicy:     jetstream.DeliverNewPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: readerIdle,
		// Where a Session is is in its log (InboxSeq), not here.
		Replicas:      1,
		MemoryStorage: true,
	}
	if cc := s.consumption(); cc != nil {
		_, err := r.stream.UpdateConsumer(ctx, cfg)
		if errors.Is(err, jetstream.ErrConsumerDoesNotExist) {
			s.lost(cc)
			return nil
		}
		return holdover.Wrapf(err, holdover.CodeInternal, "update inbox consumer %s to %d Sessions", s.name, len(filters)/2)
	}
	cons, err := r.stream.CreateOrUpdateConsumer(ctx, cfg)
	if err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "create inbox consumer %s for %d Sessions", s.name, len(filters)/2)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { r.route(s, m) },
		jetstream.PullHeartbeat(streams.PullHeartbeat),
		jetstream.ConsumeErrHandler(func(cc jetstream.ConsumeContext, err error) {
			if errors.Is(err, jetstream.ErrNoHeartbeat) {
				r.goTask(func() { streams.StopIfGone(r.closing, r.stream, s.name, cc) })
			}
		}))
	if err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "consume inbox consumer %s", s.name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed { // Close began meanwhile and missed this consumption
		cc.Stop()
		return holdover.Newf(holdover.CodeInternal, "inbox reader %s is closed", r.cfg.Name)
	}
	s.cc = cc
	r.goLocked(func() {
		<-cc.Closed()
		s.lost(cc)
	})
	return nil
}

func (s *shard) consumption() jetstream.ConsumeContext {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	return s.cc
}

// stopConsuming ends the consumption, and reports whether there was one.
func (s *shard) stopConsuming() bool {
	r := s.r
	r.mu.Lock()
	cc := s.cc
	s.cc = nil
	r.mu.Unlock()
	if cc == nil {
		return false
	}
	cc.Stop()
	return true
}

// delete deletes the consumer, if it exists; one it cannot delete ends
// on its own once idle (readerIdle).
func (s *shard) delete(ctx context.Context) error {
	if err := s.r.stream.DeleteConsumer(ctx, s.name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return holdover.Wrapf(err, holdover.CodeInternal, "delete inbox consumer %s (it ends when idle for %v)", s.name, readerIdle)
	}
	return nil
}

// lost recovers the shard when the consumption cc ended without stop, or
// its consumer is gone: it vanished, and what was stored since is read
// again.
func (s *shard) lost(cc jetstream.ConsumeContext) {
	r := s.r
	r.mu.Lock()
	if s.cc != cc || r.closed {
		r.mu.Unlock()
		return
	}
	s.cc = nil
	r.mu.Unlock()
	cc.Stop()
	r.log.Warn("an inbox consumer vanished; creating it again", "consumer", s.name)
	r.goTask(s.recover)
}

// recover creates the consumer again and catches every Session on it up
// from its last delivery, retrying until it succeeds or the reader closes.
func (s *shard) recover() {
	r := s.r
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return
		}
		var followers []*follower
		for _, f := range s.followers {
			// Hold deliveries until caught up, and let no catch-up begun
			// before the consumer came back end it.
			f.caught = false
			f.catchUps++
			followers = append(followers, f)
		}
		u := s.update()
		r.mu.Unlock()
		err := u.wait(r.closing)
		for _, f := range followers {
			if err == nil {
				err = r.catchUp(r.closing, f)
			}
		}
		if err == nil || r.closing.Err() != nil {
			return
		}
		r.log.Warn("recover an inbox consumer; trying again", "consumer", s.name, ops.Err(err))
		select {
		case <-r.closing.Done():
			return
		case <-time.After(time.Second):
		}
	}
}
