package userquestions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/streams"
)

// DefaultCallTimeout bounds a short call (answer, view) whose context has
// no deadline of its own.
const DefaultCallTimeout = 10 * time.Second

// Client calls the userQuestions service. Agent runtimes and gateways use
// it; every error it returns carries the code the service sent, rebuilt as
// a *holdover.Error, so holdover.CodeOf works on this side too.
type Client struct {
	nc      *nats.Conn
	timeout time.Duration
	fg      callerSide // foreground calls: ask_client.go
}

// NewClient returns a client that calls the service over nc. timeout bounds
// short calls made with a context that has no deadline; 0 means
// DefaultCallTimeout.
func NewClient(nc *nats.Conn, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	return &Client{nc: nc, timeout: timeout}
}

// Answer sends a late answer to a continued call (D6). A result with
// Accepted false means the call is unknown or not continued; REPLY_QUEUED
// and BAD_ANSWER come back as errors with those codes.
func (c *Client) Answer(ctx context.Context, req holdover.AnswerRequest) (holdover.AnswerResult, error) {
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	var out holdover.AnswerResult
	err := c.call(ctx, opAnswer, req, &out)
	return out, err
}

// View returns the Session's userQuestions projection, caught up to the
// Session's last event.
func (c *Client) View(ctx context.Context, sid string) (projection.View, error) {
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	var out projection.View
	err := c.call(ctx, opView, ViewRequest{Session: sid}, &out)
	return out, err
}

// bounded gives ctx the client's call timeout unless it has a deadline.
func (c *Client) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.timeout)
}

// call sends in to the endpoint op and decodes its reply into out. It adds
// no timeout: a blocking ask waits as long as ctx lets it.
func (c *Client) call(ctx context.Context, op string, in, out any) error {
	data, err := encode(in)
	if err != nil {
		return err
	}
	msg, err := c.nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: Subject(op), Data: data})
	if err != nil {
		return transportError(ctx, op, err)
	}
	if err := replyError(msg); err != nil {
		return err
	}
	if err := decode(msg.Data, out); err != nil {
		return holdover.Newf(holdover.CodeInternal, "%s reply: %v", op, err)
	}
	return nil
}

// transportError describes a call that got no reply. It is INTERNAL (the
// caller's input was not judged) and still matches context.Canceled or
// context.DeadlineExceeded with errors.Is when ctx ended.
func transportError(ctx context.Context, op string, err error) error {
	if errors.Is(err, nats.ErrNoResponders) {
		return holdover.Newf(holdover.CodeInternal, "no %s service answers %s: is a question worker running?", Name, Subject(op))
	}
	coded := holdover.Newf(holdover.CodeInternal, "call %s: %v", Subject(op), err)
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", coded, ctx.Err())
	}
	return coded
}

// Subject is the subject of the service endpoint op.
func Subject(op string) string { return streams.ServicePrefix + "." + op }
