package worker

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

// The follow-up of an accepted late answer (D7) is durable: the reply
// stored on its call's reply subject is the work, not the request that
// stored it. Every message of the reply subjects reaches one worker
// through the durable consumer the workers share (streams.RepliesDurable),
// and that worker acknowledges a reply only once it no longer awaits
// admission (inbox.Replies.Held: admitted, discarded or replaced). Until
// then it makes sure a runtime reads it: it resumes the Session when no
// live root serves it, and follows a live root's lease so that a root
// that dies first is resumed from. A worker killed on the way leaves the
// reply unacknowledged, and the server hands it to a worker again after
// the AckWait; a resume the pool could not take is tried again later, so
// a Session resumes once a runtime comes back.

// DefaultReplyAckWait is how long a worker may go unheard on a reply it
// follows before the server hands the reply to another worker.
const DefaultReplyAckWait = 30 * time.Second

// followAfter is how long after its store a reply's first follow-up
// starts: after the answer that stored it has replied, so the follow-up's
// reads do not compete with that reply for the connection and the server
// while the person waits (issue 11).
const followAfter = 100 * time.Millisecond

// maxFollowed bounds the replies all workers follow at once: each is a
// reply that awaits admission.
const maxFollowed = 20_000

// Retries of a reply whose Session could not be resumed (no runtime in
// the pool, or one that failed) double from the first to the last delay.
const (
	firstRetry = time.Second
	lastRetry  = 30 * time.Second
)

// followConfig is the durable consumer the workers share over the reply
// subjects, from the first message: a worker that starts on a store that
// holds replies never followed finds them too.
func (c Config) followConfig() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       streams.RepliesDurable,
		Description:   "Holdover workers: make sure a runtime reads each late reply queued on a call's reply subject (D7)",
		FilterSubject: streams.ReplySubjects,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.ReplyAckWait,
		MaxAckPending: maxFollowed,
		MaxDeliver:    -1,
		// The subject names the Session and the call, Nats-Msg-Id the
		// reply: the body would only cost the late answer's connection.
		HeadersOnly: true,
	}
}

// followReplies starts consuming the reply subjects; ctx ends every
// follow-up, and the replies they followed go back to the server at once.
func (d *durable) followReplies(ctx context.Context) (jetstream.ConsumeContext, error) {
	cons, err := d.sessions.CreateOrUpdateConsumer(ctx, d.cfg.followConfig())
	if err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "create the %s consumer", streams.RepliesDurable)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { d.follow(ctx, m) })
	if err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "consume %s", streams.RepliesDurable)
	}
	return cc, nil
}

// follow takes one message of a reply subject: a marker is no work; a
// reply is followed on its own goroutine until it needs no follow-up.
func (d *durable) follow(ctx context.Context, m jetstream.Msg) {
	if inbox.IsMarker(m.Headers()) {
		_ = m.Ack()
		return
	}
	sid, callID, err := streams.ParseReplySubject(m.Subject())
	messageID := m.Headers().Get(nats.MsgIdHdr)
	if err == nil && messageID == "" {
		err = holdover.New(holdover.CodeBadRequest, "no Nats-Msg-Id: no late reply")
	}
	if err != nil {
		// Nothing a runtime would admit as a reply to a call.
		d.log.Warn("pass over a message on a reply subject", "subject", m.Subject(), ops.Err(err))
		_ = m.Term()
		return
	}
	if !d.goBackground(func() {
		if meta, err := m.Metadata(); err == nil && meta.NumDelivered == 1 {
			select {
			case <-time.After(followAfter - time.Since(meta.Timestamp)):
			case <-ctx.Done():
			}
		}
		d.followReply(ctx, m, sid, callID, messageID)
	}) {
		_ = m.Nak() // the worker stops: another takes it now
	}
}

// followReply runs the follow-up of the reply messageID to (sid, callID)
// and settles its delivery: acknowledged once the reply needs none,
// handed back at once when the worker stops, and delivered again later
// when its Session could not be resumed.
func (d *durable) followReply(ctx context.Context, m jetstream.Msg, sid, callID, messageID string) {
	stop := keepInProgress(m, d.cfg.ReplyAckWait/3)
	defer stop()
	done := d.resumeIfIdle(ctx, sid, callID, messageID)
	switch {
	case done:
		_ = m.Ack()
	case ctx.Err() != nil:
		_ = m.Nak() // the worker stops: another takes it now
	default:
		_ = m.NakWithDelay(retryDelay(m))
	}
}

// keepInProgress tells the server every interval that m is still being
// worked on, so a follow-up that waits for a live root to read its reply
// is not handed to another worker meanwhile; the returned function stops.
func keepInProgress(m jetstream.Msg, every time.Duration) func() {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				_ = m.InProgress()
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}

// retryDelay is how long a reply whose Session could not be resumed waits
// before it is delivered again: firstRetry, doubled with each delivery,
// up to lastRetry.
func retryDelay(m jetstream.Msg) time.Duration {
	delay := firstRetry
	if meta, err := m.Metadata(); err == nil {
		for n := uint64(1); n < meta.NumDelivered && delay < lastRetry; n++ {
			delay *= 2
		}
	}
	return min(delay, lastRetry)
}
