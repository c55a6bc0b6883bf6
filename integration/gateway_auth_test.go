package integration

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/gateway"
)

// A token the gateway does not know gets UNAUTHORIZED and close 4401, after
// which the web Client stops reconnecting (docs/protocol.md, Connecting).
func TestGatewayUnknownTokenIsRefused(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	for name, url := range map[string]string{
		"unknown token": w.url + "?token=guess",
		"no token":      w.url,
	} {
		t.Run(name, func(t *testing.T) {
			c := w.dialRaw(url)
			c.send(map[string]any{"type": "hello", "protocol": 1, "client": "test"})
			c.take("UNAUTHORIZED", gwError("", "UNAUTHORIZED"))
			assert.Equal(t, websocket.StatusCode(4401), c.closed())
			_, welcomed := c.find(gwType("welcome"))
			assert.False(t, welcomed)
		})
	}
}

// A token in the hello frame works as well as one in the address; two that
// disagree are refused.
func TestGatewayTokenInHello(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	c := w.dialRaw(w.url)
	c.send(map[string]any{"type": "hello", "protocol": 1, "client": "test", "token": gwTokenAna})
	welcome := c.welcome()
	assert.Equal(t, "ana", welcome.User)
	assert.NotEmpty(t, welcome.ClientID)

	mixed := w.dialRaw(w.url + "?token=" + gwTokenBo)
	mixed.send(map[string]any{"type": "hello", "protocol": 1, "client": "test", "token": gwTokenAna})
	mixed.take("UNAUTHORIZED", gwError("", "UNAUTHORIZED"))
	assert.Equal(t, websocket.StatusCode(4401), mixed.closed())
}

// Frames before hello are refused one by one; hello then works. A hello in
// a protocol the gateway does not speak closes the connection.
func TestGatewayHelloFirst(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	c := w.dialRaw(w.url + "?token=" + gwTokenAna)
	c.send(map[string]any{"type": "watch", "id": "w1", "session": "s1", "fromSeq": 1})
	c.take("UNAUTHORIZED for w1", gwError("w1", "UNAUTHORIZED"))
	c.send(map[string]any{"type": "hello", "protocol": clientwire.ProtocolVersion, "client": "test"})
	c.welcome()
	c.alive("c1")

	bad := w.dialRaw(w.url + "?token=" + gwTokenAna)
	bad.send(map[string]any{"type": "hello", "protocol": -1, "client": "test"})
	bad.take("BAD_REQUEST", gwError("", "BAD_REQUEST"))
	assert.Equal(t, websocket.StatusPolicyViolation, bad.closed())
}

// The welcome names the version spoken on the connection: the one hello
// named when the gateway speaks it, the gateway's newest for a Client
// newer than the gateway. A protocol 1 Client is still served, one frame
// per message (docs/protocol.md).
func TestGatewayProtocolVersions(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	for said, spoken := range map[int]int{1: 1, 2: 2, 99: clientwire.ProtocolVersion} {
		c := w.dialRaw(w.url + "?token=" + gwTokenAna)
		c.send(map[string]any{"type": "hello", "protocol": said, "client": "test"})
		welcome := c.welcome()
		assert.Equal(t, spoken, welcome.Protocol, "hello said protocol %d", said)
		c.alive("c1")
	}
}

// A connection that never says hello is closed after the hello timeout.
func TestGatewayHelloTimeout(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{HelloTimeout: 50 * time.Millisecond})
	c := w.dialRaw(w.url + "?token=" + gwTokenAna)
	c.take("UNAUTHORIZED", gwError("", "UNAUTHORIZED"))
	assert.Equal(t, websocket.StatusCode(4401), c.closed())
}

// A token without a Session is refused for everything that names it —
// watch, call, stream — with FORBIDDEN, and nothing of that Session is
// forwarded to it; the connection goes on.
func TestGatewayTokenWithoutTheSessionIsRefused(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	ana := w.dial(gwTokenAna) // s1 and s2 only
	ana.welcome()
	bo := w.dial(gwTokenBo) // every Session
	bo.welcome()

	ana.send(map[string]any{"type": "watch", "id": "w1", "session": "s3", "fromSeq": 1})
	ana.take("FORBIDDEN for the watch", gwError("w1", "FORBIDDEN"))
	ana.send(map[string]any{"type": "call", "id": "c1", "method": "userQuestions.answer",
		"params": map[string]any{"session": "s3", "callId": "call-1", "answers": []any{}}})
	ana.take("FORBIDDEN for the call", gwError("c1", "FORBIDDEN"))
	ana.send(map[string]any{"type": "open", "id": "s1", "method": "userQuestions.attachWait",
		"params": map[string]any{"session": "s3", "callId": "call-1"}})
	ana.take("FORBIDDEN for the stream", gwError("s1", "FORBIDDEN"))
	ana.send(map[string]any{"type": "call", "id": "c2", "method": "userQuestions.view", "params": map[string]any{}})
	ana.take("FORBIDDEN for a call naming no Session", gwError("c2", "FORBIDDEN"))
	// A second "session" key cannot sneak past the check: params that
	// name a member twice are refused (issue 24).
	ana.send([]byte(`{"type":"call","id":"c3","method":"userQuestions.view","params":{"session":"s1","session":"s3"}}`))
	ana.take("BAD_REQUEST for a doubled session", gwError("c3", "BAD_REQUEST"))

	// Nothing of s3 reaches ana: bo, who may watch it, sees the request;
	// ana, on the same gateway, does not.
	bo.watchLive("w1", "s3")
	done := w.askTimed(context.Background(), w.agent, fgTimed("s3", "call-1", w.live("s3"), 5000))
	req := bo.take("the s3 request", gwType("request"))
	assert.Equal(t, "s3", req.Session)
	ana.alive("c4")
	_, leaked := ana.find(gwType("request"))
	assert.False(t, leaked, "a request of a Session the token does not grant was forwarded")

	bo.settle(req.ID, fgAnswer("yes"))
	require.NoError(t, fgWait(t, done).err)
}
