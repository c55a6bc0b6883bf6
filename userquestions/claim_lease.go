package userquestions

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/streams"
)

// Liveness without heartbeats (DESIGN.md), with the leases of package
// lease. A worker holds one for the waits it owns, so callers and Clients
// notice its death; an agent's Client holds one for the calls it waits on,
// so the worker notices the caller's death. What a lost lease means here
// is this package's to decide: a lost worker lease abandons its waits, a
// lost caller lease aborts them (W5, W7).

// The roles a lease name carries, for operators reading `nats consumer ls`.
const (
	roleWorker = streams.LeaseWorker
	roleCaller = streams.LeaseCaller
)

// flush waits until the server has processed everything sent on nc, so
// subscriptions are in place before what depends on them. ctx without a
// deadline gets DefaultCallTimeout.
func flush(ctx context.Context, nc *nats.Conn) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCallTimeout)
		defer cancel()
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		return holdover.Newf(holdover.CodeInternal, "flush subscriptions: %v", err)
	}
	return nil
}
