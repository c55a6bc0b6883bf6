package inbox

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// DefaultDurable names the consumer on SESSIONS every Tracker shares.
const DefaultDurable = streams.ReservationsDurable

// TrackerConfig tunes a Tracker. The zero value is ready to use.
type TrackerConfig struct {
	// Durable names the shared consumer; default DefaultDurable.
	Durable string
	// AckWait is how long an event may stay unacknowledged before the
	// server delivers it again; default 30 s. It is part of the shared
	// consumer, so every Tracker must use the same value.
	AckWait time.Duration
	// RetryDelay is how long a failed event waits before it is delivered
	// again; default 1 s.
	RetryDelay time.Duration
	// OnError, when set, is told of every event the Tracker failed on or
	// passed over, for metrics.
	OnError func(error)
	// Logger receives the Tracker's logs; nil means slog.Default().
	Logger *slog.Logger
}

// messageCacheSize bounds the message-to-call map a Tracker keeps from
// splices it has seen; past it the map starts over, and misses fall back
// to the bucket and the log.
const messageCacheSize = 10_000

// Tracker keeps the replyReservations bucket in step with the Session
// logs (D8): it moves a reservation on when its reply is spliced or
// claimed, deletes it when the reply is admitted, discarded, or dropped by
// a Turn that ended without admitting it, and re-creates it when the agent
// claims a reply it restored after a restart.
//
// Any number of Trackers may run: they share one durable consumer that
// hands out one event at a time (MaxAckPending 1), so every Session's
// events are applied in log order whichever Tracker gets them.
// Reservations.Held does not wait for a Tracker; the Tracker keeps the
// bucket tidy and restores reservations.
type Tracker struct {
	rs       *Reservations
	sessions jetstream.Stream
	log      *sessionlog.Log
	cfg      TrackerConfig
	logger   *slog.Logger

	mu      sync.Mutex
	calls   map[messageKey]string // splices seen: message → call ("" not a reply)
	done    uint64                // highest Session seq this Tracker handled
	changed chan struct{}         // closed and replaced whenever done grows
	cons    jetstream.Consumer
}

type messageKey struct{ sid, messageID string }

// NewTracker returns a Tracker over the SESSIONS stream that keeps rs.
func NewTracker(rs *Reservations, sessions jetstream.Stream, log *sessionlog.Log, cfg TrackerConfig) *Tracker {
	if cfg.Durable == "" {
		cfg.Durable = DefaultDurable
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = 30 * time.Second
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Tracker{
		rs: rs, sessions: sessions, log: log, cfg: cfg,
		logger:  cfg.Logger.With("component", "reservations", "consumer", cfg.Durable),
		calls:   map[messageKey]string{},
		changed: make(chan struct{}),
	}
}

// ConsumerConfig is the durable consumer the Trackers share.
func (t *Tracker) ConsumerConfig() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       t.cfg.Durable,
		Description:   "Holdover reply reservations: follow Session logs into " + streams.ReservationsBucket,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       t.cfg.AckWait,
		MaxAckPending: 1,
	}
}

// Run follows the Session logs until ctx ends. It fails when the consumer
// cannot be created or stops delivering on its own.
func (t *Tracker) Run(ctx context.Context) error {
	cons, err := t.sessions.CreateOrUpdateConsumer(ctx, t.ConsumerConfig())
	if err != nil {
		return holdover.Newf(holdover.CodeInternal, "create consumer %s: %v", t.cfg.Durable, err)
	}
	t.mu.Lock()
	t.cons = cons
	t.mu.Unlock()
	it, err := cons.Messages(jetstream.PullMaxMessages(1))
	if err != nil {
		return holdover.Newf(holdover.CodeInternal, "consume %s: %v", t.cfg.Durable, err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for {
		m, err := it.Next()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, jetstream.ErrMsgIteratorClosed):
			return holdover.Newf(holdover.CodeInternal, "consumer %s stopped delivering", t.cfg.Durable)
		case err != nil:
			t.logger.Warn("receive session event", "err", err)
			continue
		}
		t.receive(ctx, m)
	}
}

// receive handles one delivered event and acknowledges it, or asks for it
// again later when the bucket could not be written.
func (t *Tracker) receive(ctx context.Context, m jetstream.Msg) {
	sid, ok := streams.SessionFromSubject(m.Subject())
	e, seq, derr := sessionlog.DecodeMsg(m)
	if !ok || derr != nil {
		// Not a Session event this version reads: nothing to track.
		t.report(holdover.Newf(holdover.CodeBadRequest, "pass over %s seq %d: %v", m.Subject(), seq, derr))
		t.ack(m, seq)
		return
	}
	if err := t.apply(ctx, sid, e); err != nil {
		if ctx.Err() != nil {
			_ = m.Nak()
			return
		}
		t.report(err)
		t.logger.Warn("apply session event", "session", sid, "seq", seq, "type", e.Type, "err", err)
		_ = m.NakWithDelay(t.cfg.RetryDelay)
		return
	}
	t.ack(m, seq)
}

func (t *Tracker) ack(m jetstream.Msg, seq uint64) {
	if err := m.Ack(); err != nil {
		t.logger.Warn("acknowledge session event", "seq", seq, "err", err)
	}
	t.mu.Lock()
	if seq > t.done {
		t.done = seq
		close(t.changed)
		t.changed = make(chan struct{})
	}
	t.mu.Unlock()
}

func (t *Tracker) report(err error) {
	if t.cfg.OnError != nil {
		t.cfg.OnError(err)
	}
}

// apply brings the reservations of Session sid up to event e.
func (t *Tracker) apply(ctx context.Context, sid string, e events.Event) error {
	switch b := e.Body.(type) {
	case *events.InboxSpliced:
		t.remember(sid, b.Message)
		if !b.Message.Source.IsQuestionReply() {
			return nil
		}
		return t.advanceOrRestore(ctx, sid, b.Message.Source.CallID, b.Message.ID, StateSpliced, e)
	case *events.InboxClaimed:
		callID, err := t.callOf(ctx, sid, b.MessageID)
		if err != nil || callID == "" {
			return err
		}
		return t.advanceOrRestore(ctx, sid, callID, b.MessageID, StateClaimed, e)
	case *events.InboxDiscarded:
		return t.advanceAll(ctx, sid, e, func(r Reservation) bool { return r.MessageID == b.MessageID })
	case *events.UserMessage:
		t.forget(sid, b.Message.ID)
		if src := b.Message.Source; src.IsQuestionReply() {
			_, err := t.rs.advance(ctx, sid, src.CallID, e)
			return err
		}
		return nil
	case *events.TurnEnd:
		return t.advanceAll(ctx, sid, e, func(r Reservation) bool { return r.State != StateQueued })
	}
	return nil
}

// advanceOrRestore moves the reservation of callID on by e, or, when none
// is stored for it, restores one for a reply the agent took after a
// restart (D8: claiming a restored inbox reply re-creates it). A splice of
// such a reply restores it too: the reply is queued again from then on.
func (t *Tracker) advanceOrRestore(ctx context.Context, sid, callID, messageID string, state State, e events.Event) error {
	matched, err := t.rs.advance(ctx, sid, callID, e)
	if err != nil || matched {
		return err
	}
	if _, held, err := t.rs.Held(ctx, sid, callID); err != nil || held {
		return err // another reply of this call holds the reservation
	}
	created, err := t.rs.restore(ctx, sid, Reservation{CallID: callID, MessageID: messageID, State: state, Seq: e.Seq})
	if created {
		t.logger.Info("restored reply reservation", "session", sid, "call", callID, "message", messageID, "state", state)
	}
	return err
}

// advanceAll applies e to every stored reservation of Session sid that
// match selects.
func (t *Tracker) advanceAll(ctx context.Context, sid string, e events.Event, match func(Reservation) bool) error {
	rs, err := t.rs.session(ctx, sid)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if !match(r) {
			continue
		}
		t.forget(sid, r.MessageID)
		if _, err := t.rs.advance(ctx, sid, r.CallID, e); err != nil {
			return err
		}
	}
	return nil
}

// callOf finds the call a message answers: from the splices this Tracker
// saw, else from a stored reservation, else from the splice in the log.
// "" means the message is not a question reply.
func (t *Tracker) callOf(ctx context.Context, sid, messageID string) (string, error) {
	t.mu.Lock()
	callID, ok := t.calls[messageKey{sid, messageID}]
	t.mu.Unlock()
	if ok {
		return callID, nil
	}
	stored, err := t.rs.session(ctx, sid)
	if err != nil {
		return "", err
	}
	for _, r := range stored {
		if r.MessageID == messageID {
			return r.CallID, nil
		}
	}
	evts, _, err := t.log.Read(ctx, sid, 0)
	if err != nil {
		return "", err
	}
	for i := len(evts) - 1; i >= 0; i-- {
		if s, ok := evts[i].Body.(*events.InboxSpliced); ok && s.Message.ID == messageID {
			t.remember(sid, s.Message)
			if s.Message.Source.IsQuestionReply() {
				return s.Message.Source.CallID, nil
			}
			return "", nil
		}
	}
	return "", nil
}

func (t *Tracker) remember(sid string, m events.Message) {
	callID := ""
	if m.Source.IsQuestionReply() {
		callID = m.Source.CallID
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.calls) >= messageCacheSize {
		clear(t.calls)
	}
	t.calls[messageKey{sid, m.ID}] = callID
}

func (t *Tracker) forget(sid, messageID string) {
	t.mu.Lock()
	delete(t.calls, messageKey{sid, messageID})
	t.mu.Unlock()
}

// Wait returns once every Session event up to stream seq has been
// applied, by this Tracker or another sharing its consumer, or when ctx
// ends. The consumer hands out one event at a time, so its acknowledgement
// floor is exactly how far the reservations have come.
func (t *Tracker) Wait(ctx context.Context, seq uint64) error {
	for {
		t.mu.Lock()
		done, changed, cons := t.done, t.changed, t.cons
		t.mu.Unlock()
		if done >= seq {
			return nil
		}
		if cons != nil {
			info, err := cons.Info(ctx)
			if err == nil && info.AckFloor.Stream >= seq {
				return nil
			}
		}
		select {
		case <-changed:
		case <-time.After(20 * time.Millisecond): // another Tracker may be the one moving
		case <-ctx.Done():
			return holdover.Newf(holdover.CodeInternal, "reservations did not reach seq %d: %v", seq, ctx.Err())
		}
	}
}
