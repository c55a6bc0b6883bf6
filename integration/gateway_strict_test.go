package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/gateway"
)

// Issue 24, item 1: a token for s1 and s2 cannot read or answer s3 by
// naming it under a key a case-folding decoder takes for "session". Each
// attack is refused BAD_REQUEST, and s3's wait is untouched: the one who
// may answer it still does.
func TestGatewayLookalikeSessionKeyReachesNoOtherSession(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	bo := w.dial(gwTokenBo) // every Session
	bo.welcome()
	bo.watchLive("w1", "s3")
	done := w.askTimed(context.Background(), w.agent, fgTimed("s3", "call-1", w.live("s3"), 5000))
	req := bo.take("the s3 request", gwType("request"))

	ana := w.dial(gwTokenAna) // s1 and s2 only
	ana.welcome()
	for i, params := range []string{
		`{"session":"s1","ſession":"s3"}`,
		`{"session":"s1","Session":"s3"}`,
		`{"session":"s1","\u017fession":"s3"}`,
		`{"session":"s1","session":"s3"}`,
	} {
		for _, method := range []string{"userQuestions.view", "userQuestions.answer"} {
			id := method + "-" + string(rune('a'+i))
			body := params[:len(params)-1]
			if method == "userQuestions.answer" {
				body += `,"callId":"call-1","answers":[{"id":"q1","selected":["yes"]}]`
			}
			ana.send([]byte(`{"type":"call","id":"` + id + `","method":"` + method + `","params":` + body + `}}`))
			f := ana.take(id+" refused", gwTypeID("error", id))
			assert.Equal(t, "BAD_REQUEST", f.Code, "%s %s: %s", method, params, f.Message)
		}
	}
	bo.settle(req.ID, fgAnswer("yes"))
	out := fgWait(t, done)
	require.NoError(t, out.err, "s3's wait was still open for bo to answer")
}
