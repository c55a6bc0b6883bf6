package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/gateway"
)

// An oversized frame gets FRAME_TOO_LARGE and is dropped; the connection
// survives and the next frame is read from its start. Only a frame beyond
// the hard limit (4× the limit, at least 1 MiB) costs the connection.
func TestGatewayOversizedFrameGetsAnErrorAndTheConnectionSurvives(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{MaxFrameBytes: 1 << 10})
	c := w.dial(gwTokenAna)
	c.welcome()

	big := `{"type":"call","id":"big","method":"userQuestions.view","params":{"session":"s1","pad":"` + strings.Repeat("x", 4<<10) + `"}}`
	c.send([]byte(big))
	f := c.take("FRAME_TOO_LARGE", gwError("", "FRAME_TOO_LARGE"))
	assert.Contains(t, f.Message, "1024 byte limit")
	c.alive("c1")

	c.send(bytes.Repeat([]byte("x"), 2<<20))
	assert.Equal(t, websocket.StatusMessageTooBig, c.closed())
}

// Malformed frames get BAD_REQUEST, naming the frame's id when it has
// one; the connection survives. A frame type this version does not know is
// ignored (a newer Client may send more).
func TestGatewayMalformedFramesGetAnErrorAndTheConnectionSurvives(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	c := w.dial(gwTokenAna)
	c.welcome()

	for _, tc := range []struct {
		frame string
		id    string
	}{
		{frame: `not json`},
		{frame: `[1,2,3]`},
		{frame: `{"type":"watch","id":"w1"}{"type":"watch"}`},
		{frame: `{"id":"x1"}`, id: "x1"},
		{frame: `{"type":"watch","id":"w2"}`, id: "w2"},
		{frame: `{"type":"watch","id":"w3","session":"s1","fromSeq":-1}`, id: "w3"},
		{frame: `{"type":"watch","id":"w4","session":"bad.session"}`, id: "w4"},
		{frame: `{"type":"settle","id":"r1","value":[1]}`, id: "r1"},
		{frame: `{"type":"reject","id":"r2","error":{"message":"no code"}}`, id: "r2"},
		{frame: `{"type":"call","id":"c1","method":"userQuestions.view","params":"s1"}`, id: "c1"},
		{frame: `{"type":"call","id":"c2","method":"view","params":{"session":"s1"}}`, id: "c2"},
	} {
		c.send([]byte(tc.frame))
		c.take("BAD_REQUEST for "+tc.frame, gwError(tc.id, "BAD_REQUEST"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), fgPatience)
	defer cancel()
	require.NoError(t, c.ws.Write(ctx, websocket.MessageBinary, []byte(`{"type":"hello"}`)))
	c.take("BAD_REQUEST for a binary frame", gwError("", "BAD_REQUEST"))

	c.send(map[string]any{"type": "from-the-future", "id": "f1"})
	c.alive("c3")
	_, answered := c.find(func(f gwFrame) bool { return f.ID == "f1" })
	assert.False(t, answered, "an unknown frame type is ignored")

	for _, tc := range []struct{ method, code string }{
		{"nobody.view", "NOT_FOUND"},
		{"userQuestions.askTimed", "NOT_FOUND"}, // the agent's endpoint is not the Client's to call
	} {
		c.send(map[string]any{"type": "call", "id": "m-" + tc.method, "method": tc.method, "params": map[string]any{"session": "s1"}})
		c.take(tc.code+" for "+tc.method, gwError("m-"+tc.method, tc.code))
	}
}

// The frame rate is a token bucket per connection, and every frame takes
// its share. Frames that start work beyond it get RATE_LIMITED and are
// dropped; frames that only answer or end something wait for their share
// and are never dropped (a lost close would hold a claim).
func TestGatewayRateLimit(t *testing.T) {
	t.Parallel()
	// A burst of 4 and a refill of 5 a second: hello and three calls
	// pass, the fourth call is refused.
	w := newGWWorld(t, gateway.Limits{FramesPerSecond: 5, Burst: 4})
	c := w.dial(gwTokenAna)
	c.welcome()
	for _, id := range []string{"c1", "c2", "c3"} {
		c.alive(id)
	}
	c.send(map[string]any{"type": "call", "id": "c4", "method": "userQuestions.view", "params": map[string]any{"session": "s1"}})
	c.take("RATE_LIMITED for c4", gwError("c4", "RATE_LIMITED"))

	// The bucket is empty, and still a settle, a close and a delegate
	// are handled, each once its share has come.
	c.send(map[string]any{"type": "settle", "id": "r1", "value": map[string]any{"answers": []any{}}})
	c.take("NOT_FOUND for the settle", gwError("r1", "NOT_FOUND"))
	c.send(map[string]any{"type": "close", "id": "s1"})
	c.send(map[string]any{"type": "delegate", "id": "r2"})
	c.take("NOT_FOUND for the delegate", gwError("r2", "NOT_FOUND"))
	_, dropped := c.find(gwType("error"))
	assert.False(t, dropped, "no frame that ends or answers something is refused")
}

// A connection holds at most MaxWatches watches; unwatching makes room.
func TestGatewayWatchLimit(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{MaxWatches: 2})
	c := w.dial(gwTokenBo)
	c.welcome()
	c.send(map[string]any{"type": "watch", "id": "w1", "session": "s1", "fromSeq": 1})
	c.send(map[string]any{"type": "watch", "id": "w2", "session": "s2", "fromSeq": 1})
	c.send(map[string]any{"type": "watch", "id": "w3", "session": "s3", "fromSeq": 1})
	c.take("LIMIT_EXCEEDED for w3", gwError("w3", "LIMIT_EXCEEDED"))
	c.send(map[string]any{"type": "watch", "id": "w1", "session": "s4", "fromSeq": 1})
	c.take("BAD_REQUEST for a reused watch id", gwError("w1", "BAD_REQUEST"))

	c.send(map[string]any{"type": "unwatch", "id": "w2"})
	c.send(map[string]any{"type": "watch", "id": "w5", "session": "s3", "fromSeq": 1})
	c.alive("c1")
	_, refused := c.find(gwError("w5", "LIMIT_EXCEEDED"))
	assert.False(t, refused, "unwatch frees a slot")
}

// Every frame type takes its share of the connection's rate (issue 24): a
// flood of any one type gets through at the rate at most. Frames that
// start something beyond it are refused with RATE_LIMITED; frames that
// only end or answer something are slowed to it, and none is refused. A
// settle behind each flood, read once the flood is, says when the gateway
// has handled all of it.
func TestGatewayRateLimitsAFloodOfEveryFrameType(t *testing.T) {
	t.Parallel()
	const rate, burst, flood = 100, 10, 110
	w := newGWWorld(t, gateway.Limits{FramesPerSecond: rate, Burst: burst, TokenFramesPerSecond: 1e6, TokenBurst: 1e6,
		SendQueue: 4 * flood, MaxWatches: flood})
	for _, tc := range []struct {
		name     string
		frame    string // %s is the frame's id
		releases bool
	}{
		{"settle", `{"type":"settle","id":"%s","value":{"answers":[]}}`, true},
		{"reject", `{"type":"reject","id":"%s","error":{"code":"X","message":"no"}}`, true},
		{"delegate", `{"type":"delegate","id":"%s"}`, true},
		{"close", `{"type":"close","id":"%s"}`, true},
		{"unwatch", `{"type":"unwatch","id":"%s"}`, true},
		{"call", `{"type":"call","id":"%s","method":"nothing.here","params":{"session":"s1"}}`, false},
		{"watch", `{"type":"watch","id":"%s","session":"s1"}`, false},
		{"open", `{"type":"open","id":"%s","method":"nothing.here","params":{"session":"s1"}}`, false},
		{"inbox", `{"type":"inbox","id":"%s"}`, false},
		{"hello", `{"type":"hello","id":"%s","protocol":2,"client":"again"}`, false},
		{"unknown", `{"type":"from-the-future","id":"%s"}`, false},
		{"malformed", `{"type":"watch","id":"%s","session":7}`, false},
	} {
		c := w.dial(gwTokenBo)
		c.welcome()
		start := time.Now()
		for i := range flood {
			c.send([]byte(fmt.Sprintf(tc.frame, fmt.Sprint("f", i))))
		}
		c.send(map[string]any{"type": "settle", "id": "end", "value": map[string]any{"answers": []any{}}})
		c.take("the settle behind the "+tc.name+" flood", gwError("end", "NOT_FOUND"))
		elapsed := time.Since(start)
		limited := 0
		for _, f := range c.framesSnapshot() {
			if f.Type == "error" && f.Code == "RATE_LIMITED" {
				limited++
			}
		}
		passed := flood - limited
		t.Logf("%-9s %d frames in %v: %d handled (%.0f a second), %d refused", tc.name, flood, elapsed.Round(time.Millisecond), passed, float64(passed)/elapsed.Seconds(), limited)
		// At most the burst and the refill since the flood began.
		assert.LessOrEqual(t, float64(passed), burst+rate*elapsed.Seconds()+1, tc.name)
		if tc.releases {
			assert.Zero(t, limited, "%s frames are slowed, never refused", tc.name)
			assert.GreaterOrEqual(t, elapsed, time.Duration(flood+1-burst)*time.Second/rate, "%s frames wait for their share", tc.name)
		} else {
			assert.Positive(t, limited, "%s frames beyond the rate are refused", tc.name)
		}
		_ = c.ws.CloseNow()
	}
}
