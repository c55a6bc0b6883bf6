package gateway

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/holdover-dev/holdover"
)

// call forwards an RPC call: "<service>.<op>" becomes a NATS request on
// the service's subject for op, with the params as the body. The reply is
// the result, or, when it carries the micro-service error headers, an
// error frame with the service's code and message unchanged.
func (c *conn) call(f inFrame) {
	svc, op, err := c.method(f.Method)
	if err != nil {
		c.fail(f.ID, err)
		return
	}
	subject, ok := svc.callSubject(op)
	if !ok {
		c.fail(f.ID, holdover.Newf(holdover.CodeNotFound, "service %s has no call %q that Clients may make", svc.Name, op))
		return
	}
	params, err := c.authorizeParams(f.Params)
	if err != nil {
		c.fail(f.ID, err)
		return
	}
	c.mu.Lock()
	if c.calls >= c.s.lim.MaxCalls {
		c.mu.Unlock()
		c.fail(f.ID, holdover.Newf(CodeLimit, "%d calls are already in progress on this connection, the limit", c.s.lim.MaxCalls))
		return
	}
	c.calls++
	c.mu.Unlock()
	started := c.goTask(func() {
		defer func() {
			c.mu.Lock()
			c.calls--
			c.mu.Unlock()
		}()
		c.send(c.request(f.ID, subject, params))
	})
	if !started {
		c.mu.Lock()
		c.calls--
		c.mu.Unlock()
	}
}

// request makes one call and renders its outcome as a frame.
func (c *conn) request(id, subject string, params json.RawMessage) []byte {
	ctx, cancel := context.WithTimeout(c.ctx, c.s.lim.CallTimeout)
	defer cancel()
	msg, err := c.s.cfg.NATS.RequestWithContext(ctx, subject, params)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return errorOf(id, holdover.Newf(CodeUnavailable, "nothing answers %s right now; try again shortly", subject))
	case err != nil:
		return errorOf(id, holdover.Newf(CodeUnavailable, "call %s: %v", subject, err))
	}
	if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" {
		var w holdover.Error
		if json.Unmarshal(msg.Data, &w) != nil || w.Code == "" {
			w = holdover.Error{Code: holdover.Code(code), Message: msg.Header.Get(micro.ErrorHeader)}
		}
		return encodeFrame(errorFrame{Type: typeError, ID: id, Code: w.Code, Message: w.Message})
	}
	result := json.RawMessage(msg.Data)
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	if !json.Valid(result) {
		return errorOf(id, holdover.Newf(holdover.CodeInternal, "%s replied with something that is not JSON", subject))
	}
	return encodeFrame(resultFrame{Type: typeResult, ID: id, Result: result})
}

// open starts a Remote stream: "<service>.<op>" runs the service's
// Opener for op. Its frames go to the Client as they come; when it ends
// by itself the Client gets a close frame, with the error if it failed.
func (c *conn) open(f inFrame) {
	svc, op, err := c.method(f.Method)
	if err != nil {
		c.fail(f.ID, err)
		return
	}
	opener, ok := svc.Streams[op]
	if !ok {
		c.fail(f.ID, holdover.Newf(holdover.CodeNotFound, "service %s has no stream %q", svc.Name, op))
		return
	}
	params, err := c.authorizeParams(f.Params)
	if err != nil {
		c.fail(f.ID, err)
		return
	}
	c.mu.Lock()
	if _, dup := c.streams[f.ID]; dup {
		c.mu.Unlock()
		c.fail(f.ID, holdover.Newf(holdover.CodeBadRequest, "stream id %q is already open on this connection", f.ID))
		return
	}
	if len(c.streams) >= c.s.lim.MaxStreams {
		c.mu.Unlock()
		c.fail(f.ID, holdover.Newf(CodeLimit, "%d streams are already open on this connection, the limit", c.s.lim.MaxStreams))
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	c.streams[f.ID] = cancel
	c.mu.Unlock()

	send := func(data json.RawMessage) {
		if ctx.Err() == nil {
			c.send(encodeFrame(streamFrame{Type: typeFrame, ID: f.ID, Data: data}))
		}
	}
	run := func() {
		err := opener(ctx, params, send)
		c.mu.Lock()
		_, mine := c.streams[f.ID]
		delete(c.streams, f.ID)
		c.mu.Unlock()
		cancel()
		if !mine {
			return // the Client closed it, or the connection is gone
		}
		frame := closeFrame{Type: typeClose, ID: f.ID}
		if err != nil {
			frame.Error = holdover.Wire(err)
		}
		c.send(encodeFrame(frame))
	}
	if !c.goTask(run) {
		cancel()
	}
}

// closeStream ends a Remote stream the Client opened. An id that is not
// open is ignored: the stream may have ended a moment ago.
func (c *conn) closeStream(id string) {
	c.mu.Lock()
	cancel := c.streams[id]
	delete(c.streams, id)
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// method finds the service of "<service>.<op>".
func (c *conn) method(method string) (*Service, string, error) {
	name, op, ok := splitMethod(method)
	if !ok {
		return nil, "", holdover.Newf(holdover.CodeBadRequest, "method %q is not <service>.<op>", method)
	}
	svc, ok := c.s.service(name)
	if !ok {
		return nil, "", holdover.Newf(holdover.CodeNotFound, "no service %q is served here", name)
	}
	return svc, op, nil
}
