package bench

import (
	"context"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/streams"
)

// Timed is one timed sample of a primitive or a path.
type Timed func(ctx context.Context) (time.Duration, error)

// RoundTrip returns one core request-reply, about a one-question
// request's size, from caller to responder on subject: the primitive the
// foreground path is built on. It subscribes responder to subject until
// the connection closes.
func RoundTrip(responder, caller *nats.Conn, subject string) (Timed, error) {
	if _, err := responder.Subscribe(subject, func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "subscribe the raw responder")
	}
	// The subscription is sent; a flush makes the server know it before
	// the other connection calls it.
	if err := responder.FlushTimeout(10 * time.Second); err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "subscribe the raw responder")
	}
	payload := make([]byte, 200)
	return func(ctx context.Context) (time.Duration, error) {
		start := time.Now()
		if _, err := caller.RequestWithContext(ctx, subject, payload); err != nil {
			return 0, holdover.Wrap(err, holdover.CodeInternal, "raw request-reply")
		}
		return time.Since(start), nil
	}, nil
}

// ReplyPublisher returns one synchronous JetStream publish of a reply
// like a late answer's (to questions qs, answered by answers) to the
// reply subject of call callID in Session sid, each under a message id of
// its own: the primitive the late answer is built on. The first publish
// on a subject costs more than the rest, so it is made here, untimed.
func ReplyPublisher(ctx context.Context, js jetstream.JetStream, sid, callID string, qs []holdover.Question, answers []holdover.Answer) (Timed, error) {
	msg, err := events.NewReply(sid, callID, qs, answers)
	if err != nil {
		return nil, err
	}
	data, err := events.Encode(events.New(time.Now(), &events.UserMessage{Message: msg}))
	if err != nil {
		return nil, err
	}
	subject, err := streams.ReplySubject(sid, callID)
	if err != nil {
		return nil, err
	}
	n := 0
	publish := func(ctx context.Context) (time.Duration, error) {
		n++
		m := &nats.Msg{Subject: subject, Data: data}
		start := time.Now()
		if _, err := js.PublishMsg(ctx, m, jetstream.WithMsgID("raw-"+sid+"-"+strconv.Itoa(n))); err != nil {
			return 0, holdover.Wrap(err, holdover.CodeInternal, "raw JetStream publish")
		}
		return time.Since(start), nil
	}
	if _, err := publish(ctx); err != nil {
		return nil, err
	}
	return publish, nil
}
