package runtime_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/streams"
)

// BenchmarkTurn measures one whole Turn on a real embedded server, from
// steering a message to its turn/end: the message is spliced, the Turn
// starts, the message is claimed and admitted, one model request is
// recorded and answered with text, and the Turn ends — eight fenced
// appends, one inbox delivery and one live-root check.
func BenchmarkTurn(b *testing.B) {
	h := start(b, "")
	h.run("bench")
	subject, err := streams.EventsSubject("bench")
	require.NoError(b, err)
	appended := make(chan *nats.Msg, 1024)
	sub, err := h.env.Conn.ChanSubscribe(subject, appended)
	require.NoError(b, err)
	b.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(b, h.env.Conn.Flush())

	b.ResetTimer()
	for range b.N {
		h.steer("bench", "go")
		for ended := false; !ended; {
			select {
			case m := <-appended:
				e, err := events.Decode(m.Data)
				require.NoError(b, err)
				ended = e.Type == events.TypeTurnEnd
			case <-time.After(patience):
				b.Fatal("the Turn did not end")
			}
		}
	}
}
