package auth_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/auth"
)

// A request passes by its reply subject: an inbox of a role that may send
// it, or of a connection with no role; never JetStream's ack subject, no
// reply at all, or the inbox of a role that may not send it.
func TestCheckOrigin(t *testing.T) {
	for _, c := range []struct {
		subject, reply string
		ok             bool
	}{
		{"holdover.q.answer", "_INBOX.gateway.abc.1", true},
		{"holdover.q.answer", "_INBOX.admin.abc.1", true},
		{"holdover.q.answer", "_INBOX.abc123.1", true}, // no authentication: nats.go's own prefix
		{"holdover.q.answer", "_INBOX.agent.abc.1", false},
		{"holdover.q.answer", "_INBOX.operator.abc.1", false},
		{"holdover.q.askTimed", "_INBOX.agent.abc.1", true},
		{"holdover.q.askTimed", "_INBOX.gateway.abc.1", false},
		{"holdover.q.wait.lease~worker~w1.abort", "_INBOX.agent.abc.1", true},
		{"holdover.q.wait.lease~worker~w1.abort", "_INBOX.notifier.abc.1", false},
		{"holdover.q.answer", "$JS.ACK.SESSIONS.backdoor.1.1.1.1.0", false},
		{"holdover.q.answer", "", false},
		{"holdover.q.answer", "holdover.q.view", false},
	} {
		err := auth.CheckOrigin(c.subject, c.reply)
		if c.ok {
			assert.NoError(t, err, "%s from %q", c.subject, c.reply)
			continue
		}
		assert.True(t, holdover.HasCode(err, holdover.CodeBadRequest), "%s from %q: %v", c.subject, c.reply, err)
	}
}
