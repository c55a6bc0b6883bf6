package gateway

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
)

// target is what a call or open frame names, checked: its service and op,
// and its params as authorized, with the Session they name ("" for none).
type target struct {
	svc    *Service
	op     string
	params json.RawMessage
	sid    string
}

// resolve finds the service of a "<service>.<op>" method, for params
// the token was checked against (s).
func (c *conn) resolve(method string, s scope) (target, error) {
	name, op, ok := splitMethod(method)
	if !ok {
		return target{}, holdover.Newf(holdover.CodeBadRequest, "method %q is not <service>.<op>", method)
	}
	svc, ok := c.s.service(name)
	if !ok {
		return target{}, holdover.Newf(holdover.CodeNotFound, "no service %q is served here", name)
	}
	return target{svc: svc, op: op, params: s.params, sid: s.session}, nil
}

// onCall forwards an RPC call: "<service>.<op>" becomes a NATS request on
// the service's subject for op, with the params as the body. The reply is
// the result, or, when it carries the service's error, an error frame
// with the service's code and message unchanged.
func (c *conn) onCall(f clientwire.CallFrame, s scope) {
	t, err := c.resolve(f.Method, s)
	if err != nil {
		c.fail(f.ID, err)
		return
	}
	subject, err := t.svc.callSubject(t.op, t.sid)
	if err != nil {
		c.fail(f.ID, err)
		return
	}
	c.mu.Lock()
	if c.calls >= c.s.lim.MaxCalls {
		c.mu.Unlock()
		c.fail(f.ID, holdover.Newf(clientwire.CodeLimit, "%d calls are already in progress on this connection, the limit", c.s.lim.MaxCalls))
		return
	}
	c.calls++
	c.mu.Unlock()
	done := func() {
		c.mu.Lock()
		c.calls--
		c.mu.Unlock()
	}
	started := c.goTask(func() {
		defer done()
		c.send(c.request(f.ID, t.svc, subject, t.params))
	})
	if !started {
		done()
	}
}

// request makes one call and renders its outcome as a frame.
func (c *conn) request(id string, svc *Service, subject string, params json.RawMessage) []byte {
	ctx, cancel := context.WithTimeout(c.ctx, c.s.lim.CallTimeout)
	defer cancel()
	// Every call says on whose behalf it is made; a service that records
	// who did what (a late answer's source) reads it from there.
	req := nats.NewMsg(subject)
	req.Data = params
	req.Header.Set(holdover.UserHeader, c.grant.User)
	msg, err := c.s.cfg.NATS.RequestMsgWithContext(ctx, req)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		why := svc.Unanswered
		if why == "" {
			why = "try again shortly"
		}
		return errorOf(id, holdover.Newf(clientwire.CodeUnavailable, "nothing answers %s right now: %s", subject, why))
	case err != nil:
		return errorOf(id, holdover.Newf(clientwire.CodeUnavailable, "call %s: %v", subject, err))
	}
	if e := replyError(svc, msg); e != nil {
		return encodeFrame(clientwire.ErrorFrame{Type: clientwire.TypeError, ID: id, Code: e.Code, Message: e.Message})
	}
	result := json.RawMessage(msg.Data)
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	if !json.Valid(result) {
		return errorOf(id, holdover.Newf(holdover.CodeInternal, "%s replied with something that is not JSON", subject))
	}
	return encodeFrame(clientwire.ResultFrame{Type: clientwire.TypeResult, ID: id, Result: result})
}

// replyError is the error a reply carries: in the micro-service error
// headers, or in its body as the service reads it.
func replyError(svc *Service, msg *nats.Msg) *holdover.Error {
	if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" {
		var w holdover.Error
		if json.Unmarshal(msg.Data, &w) != nil || w.Code == "" {
			w = holdover.Error{Code: holdover.Code(code), Message: msg.Header.Get(micro.ErrorHeader)}
		}
		return &w
	}
	if svc.ReplyError != nil {
		return svc.ReplyError(msg.Data)
	}
	return nil
}

// onOpen starts a Remote stream: "<service>.<op>" runs the service's
// Opener for op. Its frames go to the Client as they come; when it ends
// by itself the Client gets a close frame, with the error if it failed.
func (c *conn) onOpen(f clientwire.OpenFrame, s scope) {
	t, err := c.resolve(f.Method, s)
	if err != nil {
		c.fail(f.ID, err)
		return
	}
	opener, ok := t.svc.Streams[t.op]
	if !ok {
		c.fail(f.ID, holdover.Newf(holdover.CodeNotFound, "service %s has no stream %q", t.svc.Name, t.op))
		return
	}
	c.stream(f.ID, func(ctx context.Context) error {
		return opener(ctx, t.params, func(data json.RawMessage) {
			if ctx.Err() == nil {
				c.send(encodeFrame(clientwire.StreamFrame{Type: clientwire.TypeFrame, ID: f.ID, Data: data}))
			}
		})
	})
}

// stream runs body as the connection's stream id: it counts toward the
// open streams, its context ends when the Client closes it or goes, and
// when body returns by itself the Client gets a close frame, with the
// error if it failed.
func (c *conn) stream(id string, body func(ctx context.Context) error) {
	c.mu.Lock()
	if err := admit(c.streams, id, c.s.lim.MaxStreams, "stream", "open streams"); err != nil {
		c.mu.Unlock()
		c.fail(id, err)
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	c.streams[id] = cancel
	c.mu.Unlock()

	run := func() {
		err := body(ctx)
		c.mu.Lock()
		_, mine := c.streams[id]
		delete(c.streams, id)
		c.mu.Unlock()
		cancel()
		if !mine {
			return // the Client closed it, or the connection is gone
		}
		frame := clientwire.ClosedFrame{Type: clientwire.TypeClose, ID: id}
		if err != nil {
			frame.Error = holdover.Wire(err)
		}
		c.send(encodeFrame(frame))
	}
	if !c.goTask(run) {
		cancel()
	}
}

// onClose ends a Remote stream or inbox feed the Client opened. An id
// that is not open is ignored: the stream may have ended a moment ago.
func (c *conn) onClose(f clientwire.CloseFrame, _ scope) {
	c.mu.Lock()
	cancel := c.streams[f.ID]
	delete(c.streams, f.ID)
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
