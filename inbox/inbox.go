// Package inbox owns each Session's durable inbox and the reply
// reservations of late answers (D8).
//
// Steered messages are queued on the Session's inbox subject in the SESSIONS
// stream beside its log, late replies on a subject of their own call
// (holdover.session.<sid>.inbox.<call token>); a queued message is the
// durable reply. The agent runtime reads both (Open, IsMarker, DecodeMsg)
// and records in the Session log that it spliced, claimed, admitted (as
// user/message) or discarded each message.
//
// A call's reservation, which covers its one reply from queuing through
// claim to admission, is the last message on its reply subject as moved
// on by the Session events not yet marked there: a reply is published
// expecting the subject's last message (Replies.Queue), so of concurrent
// replies one is stored; the projection worker marks what the log does to
// it (Replies.Release, Replies.Restore); Logged.Step is the log's side of
// it and Check the one rule that reads both (hold.go).
//
// The package never decides whether a call may be answered otherwise
// (steer/ does) and never writes the Session log (the runtime does).
package inbox

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/streams"
)

// publishAttempts bounds how often one message is sent. Every attempt
// carries the same message id, so a retry after a lost acknowledgement
// stores nothing twice.
const publishAttempts = 3

// Publish queues msg durably in Session sid's inbox and returns its inbox
// stream sequence. Late replies go to their call's reply subject instead
// ([Replies.Queue]). The message id is the JetStream message id
// (Nats-Msg-Id): within the stream's duplicate window, publishing the same
// message again is acknowledged without storing a second copy.
func Publish(ctx context.Context, js jetstream.JetStream, sid string, msg events.Message) (uint64, error) {
	subject, err := streams.InboxSubject(sid)
	if err != nil {
		return 0, err
	}
	data, err := encode(msg)
	if err != nil {
		return 0, err
	}
	seq, err := publish(ctx, js, &nats.Msg{Subject: subject, Data: data}, jetstream.WithMsgID(msg.ID))
	if err != nil {
		return 0, holdover.Wrapf(err, holdover.CodeInternal, "queue message %s in the inbox of session %s", msg.ID, sid)
	}
	return seq, nil
}

// encode checks and encodes a message for the inbox.
func encode(msg events.Message) ([]byte, error) {
	if err := msg.Validate(); err != nil {
		return nil, err
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "encode inbox message %s", msg.ID)
	}
	if len(data) > events.MaxEventBytes {
		return nil, holdover.Newf(holdover.CodeBadRequest, "inbox message %s is %d bytes, over the %d byte limit", msg.ID, len(data), events.MaxEventBytes)
	}
	return data, nil
}

// publish sends m, again after a failure, and returns its stream
// sequence. A compare-and-set it loses is returned at once: sending the
// same expectation again cannot win.
func publish(ctx context.Context, js jetstream.JetStream, m *nats.Msg, opts ...jetstream.PublishOpt) (uint64, error) {
	for attempt := 1; ; attempt++ {
		ack, err := js.PublishMsg(ctx, m, opts...)
		if err == nil {
			return ack.Sequence, nil
		}
		if attempt == publishAttempts || ctx.Err() != nil || streams.IsConflict(err) {
			return 0, err
		}
	}
}

// Queued is one message read from a Session inbox.
type Queued struct {
	// Seq is the inbox stream sequence; the runtime records it in
	// agent/inbox/spliced so it can resume reading after it.
	Seq     uint64
	Message events.Message
}

// Decode parses one stored inbox message. Oversized, malformed or invalid
// messages are BAD_REQUEST.
func Decode(data []byte) (events.Message, error) {
	if len(data) > events.MaxEventBytes {
		return events.Message{}, holdover.Newf(holdover.CodeBadRequest, "inbox message is %d bytes, over the %d byte limit", len(data), events.MaxEventBytes)
	}
	var m events.Message
	if err := json.Unmarshal(data, &m); err != nil {
		return events.Message{}, holdover.Wrap(err, holdover.CodeBadRequest, "inbox message is not valid JSON")
	}
	if err := m.Validate(); err != nil {
		return events.Message{}, err
	}
	return m, nil
}

// DecodeMsg decodes a message delivered from an inbox subject. Pass over
// reservation markers first ([IsMarker]): they are no message.
func DecodeMsg(m jetstream.Msg) (Queued, error) {
	meta, err := m.Metadata()
	if err != nil {
		return Queued{}, holdover.Wrap(err, holdover.CodeInternal, "inbox message has no JetStream metadata")
	}
	msg, err := Decode(m.Data())
	return Queued{Seq: meta.Sequence.Stream, Message: msg}, err
}

// readerIdle is how long an inbox reader's consumer outlives its client.
const readerIdle = 30 * time.Second

// Open returns an ordered consumer of Session sid's inbox, its own subject
// and every call's reply subject, that starts after inbox stream sequence
// `after` (0: from the first message). A runtime consumes it (Consume,
// Messages or Fetch), passes over markers ([IsMarker]) and decodes the
// rest with DecodeMsg; it resumes after a restart from the InboxSeq of its
// last splice.
func Open(ctx context.Context, inbox jetstream.Stream, sid string, after uint64) (jetstream.Consumer, error) {
	subjects, err := streams.InboxSubjects(sid)
	if err != nil {
		return nil, err
	}
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects:    subjects,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: readerIdle,
	}
	if after > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = after + 1
	}
	cons, err := inbox.OrderedConsumer(ctx, cfg)
	if err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "open the inbox of session %s", sid)
	}
	return cons, nil
}
