package inbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/streams"
)

// Log is what the reservation rule needs of the Session log: a call's
// reservation as the log records it up to its last event now.
// *projection.Store is one.
type Log interface {
	Logged(ctx context.Context, sid, callID string) (Logged, error)
}

// Replies are the late replies of calls in the SESSIONS stream and their
// reservations (D8): one reply subject per call, whose last message is a
// reply queued there or a marker. Of the replies published to one call
// while none awaits admission, exactly one is stored: each is published
// expecting the subject's last message it read, so the others fail the
// compare-and-set. The projection worker writes the markers (Release,
// Restore) as it folds the Session events behind them.
type Replies struct {
	js      jetstream.JetStream
	stream  jetstream.Stream
	log     Log
	watches releaseWatches
}

// NewReplies returns the replies in stream (normally Topology.Sessions),
// published through js. log answers [Replies.Held]; it may be nil where
// nothing asks.
func NewReplies(js jetstream.JetStream, stream jetstream.Stream, log Log) *Replies {
	return &Replies{js: js, stream: stream, log: log}
}

// Last reads the last message on the reply subject of (sid, callID): one
// direct get, which nats.go answers on its shared reply subscription, so
// it costs one round trip beside any other read in flight.
func (r *Replies) Last(ctx context.Context, sid, callID string) (Last, error) {
	subject, err := streams.ReplySubject(sid, callID)
	if err != nil {
		return Last{}, err
	}
	m, err := r.stream.GetLastMsgForSubject(ctx, subject)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return Last{}, nil
	case err != nil:
		return Last{}, holdover.Wrapf(err, holdover.CodeInternal, "read the last message of %s", subject)
	}
	return lastOf(m.Sequence, m.Header), nil
}

// Stored returns the reply to (sid, callID) that its reply subject holds
// and the log has neither spliced nor released (logged, caught up): a
// reply queued for the agent that no runtime has read yet. It reports
// false when the subject holds no such reply.
func (r *Replies) Stored(ctx context.Context, sid, callID string, logged Logged) (Queued, bool, error) {
	subject, err := streams.ReplySubject(sid, callID)
	if err != nil {
		return Queued{}, false, err
	}
	m, err := r.stream.GetLastMsgForSubject(ctx, subject)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return Queued{}, false, nil
	case err != nil:
		return Queued{}, false, holdover.Wrapf(err, holdover.CodeInternal, "read the last message of %s", subject)
	}
	last := lastOf(m.Sequence, m.Header)
	if last.Marker != "" || logged.Held != "" || holder(logged, last) != last.MessageID {
		return Queued{}, false, nil
	}
	msg, err := Decode(m.Data)
	if err != nil {
		return Queued{}, false, err
	}
	return Queued{Seq: m.Sequence, Message: msg}, true, nil
}

// Queue publishes msg as the reply to callID of sid, provided the reply
// subject's last message is still the one at stream sequence expect (0:
// the subject is empty), and returns its stream sequence. This one write
// is both the reservation and the durable reply. When another message got
// there first it fails with CONFLICT: read again and decide again with
// [Check]. A retry after a lost acknowledgement meets its own reply and
// fails the same way; [Last] then names msg.ID.
func (r *Replies) Queue(ctx context.Context, sid, callID string, msg events.Message, expect uint64) (uint64, error) {
	subject, err := streams.ReplySubject(sid, callID)
	if err != nil {
		return 0, err
	}
	return r.queue(ctx, subject, callID, sid, msg, jetstream.WithExpectLastSequencePerSubject(expect),
		func() string { return fmt.Sprintf("%s moved past stream seq %d", subject, expect) })
}

// QueueAfter publishes msg as the reply to callID of sid, provided the
// last message of the whole Session (streams.SessionWildcard: its log, its
// inbox, every reply subject) is still the one at stream sequence
// sessionSeq, and returns its stream sequence. Stored, it proves that
// nothing happened in the Session since: no event (the View the caller
// decided from was current, D6) and no reply or marker (the reservation
// was as it saw it, D8), in one write. When anything moved it fails with
// CONFLICT, as a retry after a lost acknowledgement does too (the fence
// is checked before the message id): read, decide again with [Check] and
// queue with [Replies.Queue]; [Last] then names msg.ID if it was stored.
func (r *Replies) QueueAfter(ctx context.Context, sid, callID string, msg events.Message, sessionSeq uint64) (uint64, error) {
	subject, err := streams.ReplySubject(sid, callID)
	if err != nil {
		return 0, err
	}
	all, err := streams.SessionWildcard(sid)
	if err != nil {
		return 0, err
	}
	return r.queue(ctx, subject, callID, sid, msg, jetstream.WithExpectLastSequenceForSubject(sessionSeq, all),
		func() string { return fmt.Sprintf("session %s moved past stream seq %d", sid, sessionSeq) })
}

// queue publishes msg on its reply subject under its id with the fence
// given; a lost compare-and-set is CONFLICT, saying what moved.
func (r *Replies) queue(ctx context.Context, subject, callID, sid string, msg events.Message, fence jetstream.PublishOpt, moved func() string) (uint64, error) {
	data, err := encode(msg)
	if err != nil {
		return 0, err
	}
	seq, err := publish(ctx, r.js, &nats.Msg{Subject: subject, Data: data}, jetstream.WithMsgID(msg.ID), fence)
	switch {
	case streams.IsConflict(err):
		return 0, holdover.Wrap(err, holdover.CodeConflict, moved())
	case err != nil:
		return 0, holdover.Wrapf(err, holdover.CodeInternal, "queue reply %s to call %s of session %s", msg.ID, callID, sid)
	}
	return seq, nil
}

// maxMarkerAttempts bounds how often a marker write reads the subject
// again after losing a compare-and-set to another writer of it.
const maxMarkerAttempts = 32

// Release marks the reply messageID to (sid, callID) released as of
// Session seq `at`, if the reply subject still holds the call for it;
// messageID "" releases whichever reply holds it (an admission settles the
// call). It reports whether it wrote a marker. It is idempotent: a reply
// already released, or superseded by a later one, is left alone, so a
// fold that is redelivered writes nothing twice.
func (r *Replies) Release(ctx context.Context, sid, callID, messageID string, at uint64) (bool, error) {
	return r.mark(ctx, sid, callID, Released, at, func(l Last) (string, bool) {
		h := l.Holder()
		return h, h != "" && (messageID == "" || h == messageID)
	})
}

// Restore marks the reply messageID to (sid, callID) held again as of
// Session seq `at`, when the agent claimed it after its release (D8:
// claiming a restored inbox reply re-creates its reservation), unless a
// reply already holds the call. It reports whether it wrote a marker and
// is idempotent like Release.
func (r *Replies) Restore(ctx context.Context, sid, callID, messageID string, at uint64) (bool, error) {
	return r.mark(ctx, sid, callID, Restored, at, func(l Last) (string, bool) {
		return messageID, l.Holder() == ""
	})
}

// mark writes marker after the subject's last message when due says so
// of it, naming the reply due returns, and retries when another write
// came between its read and its publish.
func (r *Replies) mark(ctx context.Context, sid, callID string, marker Marker, at uint64, due func(Last) (string, bool)) (bool, error) {
	subject, err := streams.ReplySubject(sid, callID)
	if err != nil {
		return false, err
	}
	for range maxMarkerAttempts {
		last, err := r.Last(ctx, sid, callID)
		if err != nil {
			return false, err
		}
		messageID, ok := due(last)
		if !ok || last.Marker != "" && last.SessionSeq > at {
			// Nothing to mark, or a fold of a later Session seq has marked
			// the subject already: a writer folding from a stale View must
			// not move it back.
			return false, nil
		}
		m := nats.NewMsg(subject)
		m.Header.Set(MarkerHeader, string(marker))
		m.Header.Set(MarkerMessageHeader, messageID)
		m.Header.Set(MarkerSeqHeader, strconv.FormatUint(at, 10))
		_, err = publish(ctx, r.js, m, jetstream.WithExpectLastSequencePerSubject(last.Seq))
		switch {
		case err == nil:
			return true, nil
		case !streams.IsConflict(err):
			return false, holdover.Wrapf(err, holdover.CodeInternal, "mark reply %s %s on %s", messageID, marker, subject)
		}
	}
	return false, holdover.Newf(holdover.CodeConflict, "%s kept changing under %d attempts to mark it %s", subject, maxMarkerAttempts, marker)
}

// Held reports whether the reply messageID to (sid, callID) still awaits
// admission, reading the caught-up log and the reply subject together: a
// release the projection worker has not marked yet counts already.
func (r *Replies) Held(ctx context.Context, sid, callID, messageID string) (bool, error) {
	var logged Logged
	var logErr error
	var wg sync.WaitGroup
	wg.Go(func() { logged, logErr = r.log.Logged(ctx, sid, callID) })
	last, err := r.Last(ctx, sid, callID)
	wg.Wait()
	if err == nil {
		err = logErr
	}
	return err == nil && holder(logged, last) == messageID, err
}

// WatchRelease returns a channel that is closed once the reply subject of
// (sid, callID) no longer holds the call for reply messageID: the
// projection worker marked it released (after its admission, discard or
// Turn end), or a later reply replaced it; and the function that ends the
// watch. Every watch of r shares one subscription to the reply subjects,
// and each is checked against its subject's last message when it starts
// and on every [Replies.Recheck], so neither a release before the watch
// nor one published while the connection was down goes unnoticed.
func (r *Replies) WatchRelease(ctx context.Context, sid, callID, messageID string) (<-chan struct{}, func(), error) {
	subject, err := streams.ReplySubject(sid, callID)
	if err != nil {
		return nil, nil, err
	}
	w := &releaseWatch{sid: sid, callID: callID, messageID: messageID, released: make(chan struct{})}
	if err := r.watches.add(r.js.Conn(), subject, w); err != nil {
		return nil, nil, err
	}
	// The subscription is in place before this read on the same
	// connection, so a release is either read here or delivered there.
	r.check(ctx, subject, w)
	return w.released, func() { r.watches.remove(subject, w) }, nil
}

// Recheck reads the last message of every watched reply subject again.
// Run it after a reconnect: markers published while the connection was
// down never arrive.
func (r *Replies) Recheck(ctx context.Context) {
	for subject, ws := range r.watches.all() {
		for _, w := range ws {
			r.check(ctx, subject, w)
		}
	}
}

func (r *Replies) check(ctx context.Context, subject string, w *releaseWatch) {
	last, err := r.Last(ctx, w.sid, w.callID)
	if err != nil {
		return // undecided: the next Recheck decides
	}
	if last.Holder() != w.messageID {
		r.watches.release(subject, w)
	}
}

// releaseWatch is one WatchRelease.
type releaseWatch struct {
	sid, callID, messageID string
	released               chan struct{}
	once                   sync.Once
}

// releaseWatches are the watches of one Replies, by reply subject, and the
// subscription to every reply subject they share while there are any.
type releaseWatches struct {
	mu        sync.Mutex
	sub       *nats.Subscription
	bySubject map[string][]*releaseWatch
}

func (ws *releaseWatches) add(nc *nats.Conn, subject string, w *releaseWatch) error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.sub == nil {
		sub, err := nc.Subscribe(streams.ReplySubjects, ws.deliver)
		if err != nil {
			return holdover.Wrapf(err, holdover.CodeInternal, "follow %s", streams.ReplySubjects)
		}
		ws.sub, ws.bySubject = sub, map[string][]*releaseWatch{}
	}
	ws.bySubject[subject] = append(ws.bySubject[subject], w)
	return nil
}

// deliver ends the watches a new message on their reply subject releases.
func (ws *releaseWatches) deliver(m *nats.Msg) {
	holder := lastOf(0, m.Header).Holder()
	ws.mu.Lock()
	var released []*releaseWatch
	for _, w := range ws.bySubject[m.Subject] {
		if holder != w.messageID {
			released = append(released, w)
		}
	}
	ws.mu.Unlock()
	for _, w := range released {
		ws.release(m.Subject, w)
	}
}

func (ws *releaseWatches) release(subject string, w *releaseWatch) {
	w.once.Do(func() { close(w.released) })
	ws.remove(subject, w)
}

// remove ends w; the shared subscription ends with the last watch.
func (ws *releaseWatches) remove(subject string, w *releaseWatch) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	left := slices.DeleteFunc(ws.bySubject[subject], func(o *releaseWatch) bool { return o == w })
	if len(left) == 0 {
		delete(ws.bySubject, subject)
	} else {
		ws.bySubject[subject] = left
	}
	if len(ws.bySubject) == 0 && ws.sub != nil {
		_ = ws.sub.Unsubscribe()
		ws.sub = nil
	}
}

func (ws *releaseWatches) all() map[string][]*releaseWatch {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	out := make(map[string][]*releaseWatch, len(ws.bySubject))
	for subject, w := range ws.bySubject {
		out[subject] = slices.Clone(w)
	}
	return out
}
