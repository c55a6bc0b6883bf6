package liveroot

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/nats-io/nats.go"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

// ResumeQueue is the queue group runtime instances join on
// streams.ResumeSubject, so each resume request reaches exactly one of them.
const ResumeQueue = "runtimes"

// ResumeRequest asks the runtime pool to resume Session as a live root (D7).
type ResumeRequest struct {
	Session string `json:"session"`
}

// ResumeReply is a runtime's answer to a resume request: the instance that
// took the Session, or the error that stopped it.
type ResumeReply struct {
	Instance string          `json:"instance,omitempty"`
	Error    *holdover.Error `json:"error,omitempty"`
}

// RequestResume asks one runtime instance of the pool to resume sid and
// waits, within ctx, for the instance that took it. No runtime listening is
// an INTERNAL error naming the subject, so an operator knows what to start.
func RequestResume(ctx context.Context, nc *nats.Conn, sid string) (string, error) {
	if err := streams.CheckSession(sid); err != nil {
		return "", err
	}
	data, err := json.Marshal(ResumeRequest{Session: sid})
	if err != nil {
		return "", holdover.Wrap(err, holdover.CodeInternal, "encode resume request")
	}
	msg, err := nc.RequestWithContext(ctx, streams.ResumeSubject, data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return "", holdover.Newf(holdover.CodeInternal, "no agent runtime listens on %s to resume session %s", streams.ResumeSubject, sid)
	case err != nil:
		return "", holdover.Wrapf(err, holdover.CodeInternal, "resume session %s", sid)
	}
	var reply ResumeReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return "", holdover.Wrapf(err, holdover.CodeInternal, "resume reply for session %s is not JSON", sid)
	}
	if reply.Error != nil {
		return "", reply.Error
	}
	return reply.Instance, nil
}

// Resumer is what a runtime instance does with a resume request: bring sid
// back as a live root (registering it) and return its instance id.
type Resumer func(ctx context.Context, sid string) (instance string, err error)

// ResumeEndpoint names resume requests in the count of requests refused
// for their origin (ops.Origins).
const ResumeEndpoint = "resume"

// ServeResume subscribes resume to the pool's resume requests in the
// ResumeQueue group. Each request runs on its own goroutine with ctx; a
// malformed request or a bad Session id is answered with BAD_REQUEST. A
// request origins refuses (one a role other than the worker's sent, or a
// stored message that JetStream replayed onto the subject, with no reply
// or $JS.ACK's) takes no Session and gets no reply.
// Unsubscribe the returned subscription to leave the pool.
func ServeResume(ctx context.Context, nc *nats.Conn, origins *ops.Origins, resume Resumer) (*nats.Subscription, error) {
	sub, err := nc.QueueSubscribe(streams.ResumeSubject, ResumeQueue, func(m *nats.Msg) {
		if !origins.Admit(ResumeEndpoint, m) {
			return
		}
		go func() {
			reply := serveResume(ctx, m.Data, resume)
			data, _ := json.Marshal(reply) // strings and a code only
			_ = m.Respond(data)            // the requester times out if this is lost
		}()
	})
	if err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "subscribe to %s", streams.ResumeSubject)
	}
	return sub, nil
}

func serveResume(ctx context.Context, data []byte, resume Resumer) ResumeReply {
	var req ResumeRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return ResumeReply{Error: holdover.Wire(holdover.Wrap(err, holdover.CodeBadRequest, "resume request is not JSON"))}
	}
	if err := streams.CheckSession(req.Session); err != nil {
		return ResumeReply{Error: holdover.Wire(err)}
	}
	instance, err := resume(ctx, req.Session)
	if err != nil {
		return ResumeReply{Error: holdover.Wire(err)}
	}
	return ResumeReply{Instance: instance}
}
