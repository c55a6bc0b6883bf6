package userquestions

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/streams"
)

// DefaultInflightGather is how long an inflight listing waits for more
// workers after the last one answered: the endpoint fans out to every
// worker, and none knows how many others there are.
const DefaultInflightGather = 50 * time.Millisecond

// FetchInflight asks every worker for its live requests of sid and merges
// the answers: it waits for the first, then until gather passes with no
// more. With no worker up, nothing is in flight.
func FetchInflight(ctx context.Context, nc *nats.Conn, sid string, gather time.Duration) ([]WaterfallRequest, error) {
	if err := streams.CheckSession(sid); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCallTimeout)
		defer cancel()
	}
	data, err := Encode(InflightRequest{Session: sid})
	if err != nil {
		return nil, err
	}
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "subscribe for inflight")
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest(Subject(OpInflight), inbox, data); err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "request inflight")
	}
	var out []WaterfallRequest
	seen := make(map[string]bool)
	for first := true; ; first = false {
		wait := ctx
		if !first {
			var cancel context.CancelFunc
			wait, cancel = context.WithTimeout(ctx, gather)
			defer cancel()
		}
		m, err := sub.NextMsgWithContext(wait)
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			return nil, nil
		case err != nil && first:
			return nil, TransportError(ctx, OpInflight, err)
		case err != nil && ctx.Err() != nil:
			return nil, TransportError(ctx, OpInflight, err)
		case err != nil:
			return out, nil // gather passed: every worker that is up has answered
		}
		if err := ReplyError(m); err != nil {
			return nil, err
		}
		var part InflightResult
		if err := Decode(m.Data, &part); err != nil {
			return nil, holdover.Wrap(err, holdover.CodeInternal, "inflight reply")
		}
		for _, r := range part.Requests {
			if !seen[r.RequestID] {
				seen[r.RequestID] = true
				out = append(out, r)
			}
		}
	}
}
