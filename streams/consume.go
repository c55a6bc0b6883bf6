package streams

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// PullHeartbeat is how often the server shows a waiting pull of a
// long-lived consumption is alive; two missed say the pull went unheard.
const PullHeartbeat = time.Second

// StopIfGone stops cc when consumer name of stream no longer exists. A
// consumer deleted while a pull waits on it ends the pull with a status
// and so the consumption, but one deleted between pulls leaves the next
// pull unanswered, with only missed heartbeats to show for it: call this
// on jetstream.ErrNoHeartbeat, so that its owner creates the consumer
// again instead of pulling from nothing.
func StopIfGone(ctx context.Context, stream jetstream.Stream, name string, cc jetstream.ConsumeContext) {
	if _, err := stream.Consumer(ctx, name); errors.Is(err, jetstream.ErrConsumerNotFound) {
		cc.Stop()
	}
}
