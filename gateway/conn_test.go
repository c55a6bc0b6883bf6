package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/ops"
)

// queued is a connection speaking protocol with frames already waiting
// behind the one its writer has just taken.
func queued(protocol int, frames ...[]byte) *conn {
	c := &conn{s: &Server{lim: Limits{}.withDefaults(), m: newGatewayMetrics(ops.NewMetrics())}, out: make(chan []byte, 16)}
	c.protocol.Store(int32(protocol))
	for _, f := range frames {
		c.push(f, pushFinal)
	}
	return c
}

// A protocol 2 connection's writer takes every frame that waits into one
// message, a JSON array in queue order; a frame alone stays as it is; the
// close marker ends the batch; protocol 1 gets one frame a message.
func TestBatchCarriesWhatIsQueued(t *testing.T) {
	a, b, c := []byte(`{"type":"view","id":"w1"}`), []byte(`{"type":"request","id":"r1"}`), []byte(`{"type":"cancel","id":"r0"}`)

	msg, n, closing := queued(2, b, c).batch(a)
	assert.JSONEq(t, `[{"type":"view","id":"w1"},{"type":"request","id":"r1"},{"type":"cancel","id":"r0"}]`, string(msg.data))
	assert.Equal(t, 3, n)
	assert.False(t, closing)
	msg.release()
	assert.Equal(t, `{"type":"view","id":"w1"}`, string(a), "a shared frame is copied, never changed")

	msg, n, _ = queued(2).batch(a)
	assert.Equal(t, a, msg.data, "a frame alone goes out as it is")
	assert.Equal(t, 1, n)

	q := queued(2, b, closeAfterFlush, c)
	msg, n, closing = q.batch(a)
	assert.JSONEq(t, `[{"type":"view","id":"w1"},{"type":"request","id":"r1"}]`, string(msg.data))
	assert.Equal(t, 2, n)
	assert.True(t, closing, "what follows the close marker is never sent")
	assert.Len(t, q.out, 1)

	_, n, closing = queued(2).batch(closeAfterFlush)
	assert.Zero(t, n)
	assert.True(t, closing)

	q = queued(1, b, c)
	msg, n, _ = q.batch(a)
	assert.Equal(t, a, msg.data, "protocol 1: one frame per message")
	assert.Equal(t, 1, n)
	assert.Len(t, q.out, 2)
}

// A batch stops taking frames once it holds maxBatchBytes; what is left
// goes in the next message, and a frame larger than the bound still goes.
func TestBatchIsBounded(t *testing.T) {
	big := []byte(`{"type":"events","pad":"` + string(bytes.Repeat([]byte("x"), maxBatchBytes)) + `"}`)
	small := []byte(`{"type":"ready","id":"w1"}`)
	q := queued(2, small, small)
	msg, n, _ := q.batch(big)
	var frames []json.RawMessage
	require.NoError(t, json.Unmarshal(msg.data, &frames))
	assert.Equal(t, 1, n)
	assert.Len(t, q.out, 2, "the rest waits for the next message")

	msg, n, _ = q.batch(<-q.out)
	require.NoError(t, json.Unmarshal(msg.data, &frames))
	assert.Equal(t, 2, n)
	assert.Len(t, frames, 2)
}

// The send queue is bounded in frames and in bytes: a frame that finds
// either bound reached is refused; the frame itself may go past the byte
// bound. A history takes only half of each bound, and waits for room
// there, going on as soon as the writer takes a frame.
func TestSendQueueIsBoundedInFramesAndBytes(t *testing.T) {
	c := queued(2)
	c.s.lim.SendQueue, c.s.lim.SendQueueBytes = 4, 100
	c.out = make(chan []byte, c.s.lim.SendQueue)
	frame := func(n int) []byte { return bytes.Repeat([]byte("x"), n) }
	drain := func() {
		for len(c.out) > 0 {
			c.took(<-c.out)
		}
	}

	require.True(t, c.push(frame(300), pushLive), "a frame over the byte bound goes when less waits")
	require.False(t, c.push(frame(1), pushLive), "and nothing goes behind it")
	drain()

	for range 4 {
		require.True(t, c.push(frame(10), pushLive))
	}
	require.False(t, c.push(frame(10), pushLive), "the frame bound")
	require.Equal(t, 40, c.qbytes)
	drain()
	require.True(t, c.push(frame(60), pushLive))
	require.True(t, c.push(frame(60), pushLive), "60 bytes wait: room for one more")
	require.False(t, c.push(frame(1), pushLive), "the byte bound")
	require.True(t, c.push(frame(60), pushFinal), "the last frames before a close skip the byte bound")
	drain()

	for range 2 {
		require.True(t, c.push(frame(10), pushBulk))
	}
	require.False(t, c.push(frame(10), pushBulk), "a history takes half the frames")
	require.True(t, c.push(frame(10), pushLive), "and leaves the rest to live frames")
	drain()
	require.True(t, c.push(frame(50), pushBulk))
	require.False(t, c.push(frame(10), pushBulk), "a history takes half the bytes")
	require.True(t, c.push(frame(40), pushLive))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.ctx = ctx
	sent := make(chan bool)
	go func() { sent <- c.sendWait(frame(40)) }()
	c.took(<-c.out)
	c.took(<-c.out)
	require.True(t, <-sent, "a waiting history goes once the writer took frames")
	require.Equal(t, 40, c.qbytes)
	require.True(t, c.push(frame(10), pushBulk))

	go func() { sent <- c.sendWait(frame(40)) }()
	cancel()
	require.False(t, <-sent, "and gives up when the connection ends")
}
