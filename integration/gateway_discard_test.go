package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/holdover-dev/holdover/gateway"
)

// A Client discards a queued late reply with the generic call verb
// (P5, D8): "session.discard" is a request on the Session's own discard
// subject, answered by its running agent. What cannot go through says why,
// with a stable code; the success path runs in the browser test
// TestBrowserDiscardingAQueuedReplyRestoresTheAnswerAction.
func TestGatewayDiscardIsASessionCallWithClearErrors(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	ana := w.dial(gwTokenAna)
	ana.welcome()
	discard := func(id string, params map[string]any) gwFrame {
		ana.send(map[string]any{"type": "call", "id": id, "method": "session.discard", "params": params})
		return ana.take("the outcome of "+id, func(f gwFrame) bool { return f.ID == id })
	}

	// No agent runs for s1: nothing answers, and the message says so.
	f := discard("c1", map[string]any{"session": "s1", "messageId": "m1"})
	assert.Equal(t, "UNAVAILABLE", f.Code, "%+v", f)
	assert.Contains(t, f.Message, "holdover.session.s1.discard")
	assert.Contains(t, f.Message, "agent is not running")

	// The token decides, as for every call.
	assert.Equal(t, "FORBIDDEN", discard("c2", map[string]any{"session": "s3", "messageId": "m1"}).Code)
	// Only the ops the binding opens to Clients.
	ana.send(map[string]any{"type": "call", "id": "c4", "method": "session.events", "params": map[string]any{"session": "s1"}})
	assert.Equal(t, "NOT_FOUND", ana.take("c4", gwTypeID("error", "c4")).Code)

	// A token of every Session must still name the Session whose agent answers.
	bo := w.dial(gwTokenBo)
	bo.welcome()
	bo.send(map[string]any{"type": "call", "id": "c5", "method": "session.discard", "params": map[string]any{"messageId": "m1"}})
	f = bo.take("c5", gwTypeID("error", "c5"))
	assert.Equal(t, "BAD_REQUEST", f.Code)
	assert.Contains(t, f.Message, "params.session")
	// A Session id that is no subject token is refused before anything is sent.
	bo.send(map[string]any{"type": "call", "id": "c3", "method": "session.discard", "params": map[string]any{"session": "s1.*", "messageId": "m1"}})
	assert.Equal(t, "BAD_REQUEST", bo.take("c3", gwTypeID("error", "c3")).Code)
	ana.alive("c6")
}
