package runtime

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/nats-io/nats.go"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/streams"
)

// DiscardSubject is the core subject where the live root of sid takes
// requests to discard a queued inbox message (the Client's "discard the
// queued reply", P5). It is not part of any stream.
func DiscardSubject(sid string) (string, error) {
	return streams.SessionSubject(sid, streams.DiscardSuffix)
}

// DiscardRequest names the queued message to drop. Session, when given,
// must be the Session whose subject the request came on: a Client's call
// through the gateway names it, since the gateway routes by it.
type DiscardRequest struct {
	Session   string `json:"session,omitempty"`
	MessageID string `json:"messageId"`
	Reason    string `json:"reason,omitempty"`
}

// DiscardReply is the agent's answer: empty on success.
type DiscardReply struct {
	Error *holdover.Error `json:"error,omitempty"`
}

// Discard asks the live root of sid to discard a queued message. Its
// errors keep the agent's code: NOT_FOUND, CONFLICT for a message already
// admitted or dropped, INTERNAL when no live root listens.
func Discard(ctx context.Context, nc *nats.Conn, sid, messageID, reason string) error {
	subject, err := DiscardSubject(sid)
	if err != nil {
		return err
	}
	data, err := json.Marshal(DiscardRequest{Session: sid, MessageID: messageID, Reason: reason})
	if err != nil {
		return holdover.Wrap(err, holdover.CodeInternal, "encode discard request")
	}
	msg, err := nc.RequestWithContext(ctx, subject, data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return holdover.Newf(holdover.CodeInternal, "session %s has no running agent to discard %q", sid, messageID)
	case err != nil:
		return holdover.Wrapf(err, holdover.CodeInternal, "discard %q in session %s", messageID, sid)
	}
	var reply DiscardReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return holdover.Wrap(err, holdover.CodeInternal, "discard reply is not JSON")
	}
	if reply.Error != nil {
		return reply.Error
	}
	return nil
}

// DiscardEndpoint names discard requests in the count of requests
// refused for their origin (ops.Origins).
const DiscardEndpoint = "discard"

// serveDiscard answers discard requests for the agent's Session. A
// request whose origin the runtime refuses (a role that may not send it,
// a stored message JetStream replayed onto the subject, or a reply
// subject that is not an inbox, where the agent's answer would land in a
// stream) discards nothing and gets no reply.
func (a *Agent) serveDiscard(ctx context.Context) (*nats.Subscription, error) {
	subject, err := DiscardSubject(a.sid)
	if err != nil {
		return nil, err
	}
	sub, err := a.rt.nc.Subscribe(subject, func(m *nats.Msg) {
		if !a.rt.origins.Admit(DiscardEndpoint, m) {
			return
		}
		var req DiscardRequest
		err := json.Unmarshal(m.Data, &req)
		switch {
		case err != nil || req.MessageID == "":
			err = holdover.New(holdover.CodeBadRequest, `a discard request is {"session"?: "…", "messageId": "…", "reason"?: "…"}`)
		case req.Session != "" && req.Session != a.sid:
			err = holdover.Newf(holdover.CodeBadRequest, "a discard request on %s names session %q", subject, req.Session)
		default:
			err = a.Discard(ctx, req.MessageID, req.Reason)
		}
		var reply DiscardReply
		if err != nil {
			reply.Error = holdover.Wire(err)
		}
		data, _ := json.Marshal(reply) // a code and a message always encode
		_ = m.Respond(data)            // a lost reply times the requester out; the discard stands
	})
	if err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "subscribe to %s", subject)
	}
	// Flush, so the server has the subscription by the time the agent runs.
	if err := a.rt.nc.FlushTimeout(flushTimeout); err != nil {
		_ = sub.Unsubscribe()
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "subscribe to %s", subject)
	}
	return sub, nil
}
