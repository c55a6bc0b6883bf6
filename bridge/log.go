package bridge

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/sessionlog"
)

// DefaultClaimBound is how long a claim of a late reply holds it for the
// deliverer that made it. A deliverer hands the reply over well within it
// (a hook's time limit is far shorter); a claim older than this, with no
// admission, was made by one that died, and the reply is claimed again.
const DefaultClaimBound = 15 * time.Second

// maxAttempts bounds how often one transaction reads and decides again
// after losing the log's fence to another writer of the same Session.
const maxAttempts = 16

// Log is one Session's log as the bridge writes it. Several processes of
// one host session write it (the MCP server and each hook), so every write
// is a short transaction: read and fold the log, decide what to append,
// append it fenced by the last seq read. A transaction that loses the fence
// reads again and decides again.
type Log struct {
	log        *sessionlog.Log
	stream     jetstream.Stream // SESSIONS: the log and the inbox
	sid        string
	clock      clockwork.Clock
	claimBound time.Duration

	// mu serializes this process's transactions on the log and guards
	// folded, the fold of the log as far as it was read: each read reads
	// only what was appended since, so a transaction costs the same on a
	// long log as on a short one.
	mu     sync.Mutex
	folded *folded
}

// NewLog returns Session sid's log in stream (SESSIONS), written through
// js. Its claims hold a reply for claimBound (0: DefaultClaimBound); clock
// stamps events and ages claims (nil: the real clock).
func NewLog(js jetstream.JetStream, stream jetstream.Stream, sid string, clock clockwork.Clock, claimBound time.Duration) *Log {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	if claimBound <= 0 {
		claimBound = DefaultClaimBound
	}
	return &Log{log: sessionlog.New(js, stream), stream: stream, sid: sid, clock: clock, claimBound: claimBound, folded: newFolded()}
}

// Session is the Session id.
func (l *Log) Session() string { return l.sid }

// folded is what the bridge needs of a Session log: where it ends, the
// inbox messages it spliced and how far each got, and the tool calls
// recorded without a result.
type folded struct {
	last     uint64
	inboxSeq uint64
	items    map[string]*item
	order    []*item
	open     []events.ToolCall
}

// item is one spliced inbox message.
type item struct {
	msg events.Message
	// claim is the seq of its latest agent/inbox/claimed, 0 for none, and
	// claimedAt when that claim was recorded.
	claim     uint64
	claimedAt time.Time
	// done: admitted, discarded, or released by a Turn end.
	done bool
}

func newFolded() *folded { return &folded{items: map[string]*item{}} }

// apply folds the events read after f.last into f.
func (f *folded) apply(evts []events.Event, bad []sessionlog.BadEvent) {
	for _, b := range bad {
		f.last = max(f.last, b.Seq)
	}
	for _, e := range evts {
		f.last = max(f.last, e.Seq)
		switch b := e.Body.(type) {
		case *events.ToolCall:
			f.open = append(f.open, *b)
		case *events.ToolResult:
			f.open = slices.DeleteFunc(f.open, func(c events.ToolCall) bool { return c.CallID == b.CallID })
		case *events.InboxSpliced:
			if f.items[b.Message.ID] == nil {
				it := &item{msg: b.Message}
				f.items[b.Message.ID] = it
				f.order = append(f.order, it)
			}
			f.inboxSeq = max(f.inboxSeq, b.InboxSeq)
		case *events.InboxClaimed:
			if it := f.items[b.MessageID]; it != nil && !it.done {
				it.claim, it.claimedAt = e.Seq, e.At
			}
		case *events.UserMessage:
			if it := f.items[b.Message.ID]; it != nil {
				it.done = true
			}
		case *events.InboxDiscarded:
			if it := f.items[b.MessageID]; it != nil {
				it.done = true
			}
		case *events.TurnEnd:
			// A Turn that ends releases what it did not admit (D8), as the
			// Go runtime records it for a Session it served before.
			for _, it := range f.order {
				it.done = true
			}
		}
	}
}

// read brings the fold up to the log as it is now. l.mu is held.
func (l *Log) read(ctx context.Context) (*folded, error) {
	evts, bad, err := l.log.Read(ctx, l.sid, l.folded.last)
	if err != nil {
		return nil, err
	}
	l.folded.apply(evts, bad)
	return l.folded, nil
}

// appended is one event a transaction appended.
type appended struct {
	seq  uint64
	body events.Body
}

// transact appends what decide returns after the log it is handed, fenced
// by that log's last seq, and returns what it appended, over every attempt:
// after losing the fence part way, decide runs again on the log as it is
// then, which holds what this transaction appended already.
func (l *Log) transact(ctx context.Context, decide func(*folded) ([]events.Body, error)) ([]appended, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var done []appended
	for range maxAttempts {
		f, err := l.read(ctx)
		if err != nil {
			return done, err
		}
		bodies, err := decide(f)
		if err != nil || len(bodies) == 0 {
			return done, err
		}
		last, lost := f.last, false
		for _, b := range bodies {
			e := events.New(l.clock.Now(), b)
			seq, err := l.log.Append(ctx, l.sid, last, e)
			if holdover.HasCode(err, holdover.CodeConflict) {
				lost = true
				break
			}
			if err != nil {
				return done, err
			}
			done = append(done, appended{seq: seq, body: b})
			last = seq
			// The fence held: the event follows the fold's last directly,
			// so folding it in leaves nothing to read back.
			e.Seq = seq
			l.folded.apply([]events.Event{e}, nil)
		}
		if !lost {
			return done, nil
		}
	}
	return done, holdover.Newf(holdover.CodeConflict, "session %s kept moving under %d attempts to append to it", l.sid, maxAttempts)
}

// Append records body as the next event of the log.
func (l *Log) Append(ctx context.Context, body events.Body) error {
	_, err := l.transact(ctx, func(*folded) ([]events.Body, error) { return []events.Body{body}, nil })
	return err
}

// Delivery is a late reply (or another queued user message) claimed for
// handing over to the host's model.
type Delivery struct {
	Message events.Message
	claim   uint64
}

// Text is what the model reads: the message's text, for a late answer the
// answer_to_pending_question JSON.
func (d Delivery) Text() string { return events.JoinText(d.Message.Content) }

// Claim splices what the inbox holds past the log's last splice and claims
// every queued message that no live deliverer holds, in splice order: one
// fenced transaction, so of two deliverers racing for a reply one claims
// it. Hand each Delivery over, then Admit it.
func (l *Log) Claim(ctx context.Context) ([]Delivery, error) {
	now := l.clock.Now()
	var news map[string]events.Message
	done, err := l.transact(ctx, func(f *folded) ([]events.Body, error) {
		queued, bad, err := inbox.Since(ctx, l.stream, l.sid, f.inboxSeq)
		if err != nil {
			return nil, err
		}
		if len(bad) > 0 {
			return nil, holdover.Newf(holdover.CodeBadRequest, "the inbox of session %s holds messages that do not decode at stream seqs %v; they are left there", l.sid, bad)
		}
		news = map[string]events.Message{}
		var bodies []events.Body
		for _, it := range f.order {
			if !it.done && (it.claim == 0 || now.Sub(it.claimedAt) > l.claimBound) {
				bodies = append(bodies, &events.InboxClaimed{MessageID: it.msg.ID})
			}
		}
		for _, q := range queued {
			if f.items[q.Message.ID] != nil || news[q.Message.ID].ID != "" {
				continue
			}
			news[q.Message.ID] = q.Message
			bodies = append(bodies,
				&events.InboxSpliced{Message: q.Message, InboxSeq: q.Seq},
				&events.InboxClaimed{MessageID: q.Message.ID})
		}
		return bodies, nil
	})
	if len(done) == 0 {
		return nil, err
	}
	// What this transaction claimed and nobody claimed again since.
	l.mu.Lock()
	defer l.mu.Unlock()
	f, rerr := l.read(ctx)
	if rerr != nil {
		return nil, rerr
	}
	var out []Delivery
	for _, a := range done {
		c, ok := a.body.(*events.InboxClaimed)
		if !ok {
			continue
		}
		if it := f.items[c.MessageID]; it != nil && !it.done && it.claim == a.seq {
			out = append(out, Delivery{Message: it.msg, claim: a.seq})
		}
	}
	return out, err
}

// Admit records the admission of each delivery still claimed by its own
// claim (user/message with the message's id and source, D5) and returns
// the ones it admitted: only those may reach the model. A delivery claimed
// again meanwhile by another deliverer (its claim outlived the claim
// bound) is left to that one.
func (l *Log) Admit(ctx context.Context, ds []Delivery) ([]Delivery, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	done, err := l.transact(ctx, func(f *folded) ([]events.Body, error) {
		var bodies []events.Body
		for _, d := range ds {
			if it := f.items[d.Message.ID]; it != nil && !it.done && it.claim == d.claim {
				bodies = append(bodies, &events.UserMessage{Message: it.msg})
			}
		}
		return bodies, nil
	})
	var out []Delivery
	for _, a := range done {
		m := a.body.(*events.UserMessage) // transact appends only what decide returned
		for _, d := range ds {
			if d.Message.ID == m.Message.ID {
				out = append(out, d)
			}
		}
	}
	return out, err
}

// Deliver claims and admits what waits, for a deliverer that hands it over
// in the same reply (a tool result): the admitted messages.
func (l *Log) Deliver(ctx context.Context) ([]Delivery, error) {
	ds, err := l.Claim(ctx)
	if err != nil {
		return nil, err
	}
	return l.Admit(ctx, ds)
}
