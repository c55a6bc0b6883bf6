package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/userquestions"
)

// rawTimedAsk sends an askTimed request naming the caller lease, as a Go
// Client would, and returns the channel its frames arrive on.
func (f *fgTest) rawTimedAsk(lease, sid, call string, agent *holdover.AgentRef) <-chan *nats.Msg {
	f.t.Helper()
	nc, _ := embeddedtest.Connect(f.t, f.env.Server.ClientURL())
	frames := make(chan *nats.Msg, 4)
	inbox := nc.NewInbox()
	_, err := nc.ChanSubscribe(inbox, frames)
	require.NoError(f.t, err)
	body, err := json.Marshal(holdover.AskTimedRequest{Session: sid, CallID: call, Agent: agent, Questions: q1, TimeoutMs: 60_000})
	require.NoError(f.t, err)
	msg := nats.NewMsg(userquestions.Subject(opAskTimed))
	msg.Reply = inbox
	msg.Data = body
	msg.Header.Set(userquestions.HeaderCallerLease, lease)
	require.NoError(f.t, nc.PublishMsg(msg))
	return frames
}

// finalCode waits for the reply after the accepted frame and returns its
// error code.
func finalCode(t *testing.T, frames <-chan *nats.Msg) holdover.Code {
	t.Helper()
	for {
		select {
		case m := <-frames:
			if m.Header.Get(userquestions.HeaderFrame) == userquestions.FrameAccepted {
				continue
			}
			return holdover.CodeOf(userquestions.ReplyError(m))
		case <-time.After(10 * time.Second):
			t.Fatal("no reply")
			return ""
		}
	}
}

func (f *fgTest) callerKnown(name string) bool {
	return f.svc.foreground.callers.knows(name)
}

// W5, W7: a caller whose lease is gone before its request arrives has its
// wait aborted; a lease seen to exist is remembered, and forgotten when
// its deletion is advised, so a later request under the dead lease is
// looked up again and aborted, never left waiting.
func TestCallerLeaseIsLookedUpUntilKnownAndAgainOnceGone(t *testing.T) {
	f := newFGTest(t)
	ctx := context.Background()
	agent := f.live("s1")

	require.Equal(t, holdover.CodeAskAborted, finalCode(t, f.rawTimedAsk(leases.Name(userquestions.RoleCaller, "never-held"), "s1", "c0", agent)))

	nc, js := embeddedtest.Connect(t, f.env.Server.ClientURL())
	l, err := leases.Hold(ctx, nc, js, userquestions.RoleCaller, nuid.Next(), time.Second)
	require.NoError(t, err)
	first := f.rawTimedAsk(l.Name(), "s1", "c1", agent)
	require.Eventually(t, func() bool { return f.callerKnown(l.Name()) }, 10*time.Second, time.Millisecond)
	second := f.rawTimedAsk(l.Name(), "s1", "c2", agent) // no look-up: the lease is known
	require.Eventually(t, func() bool { return f.svc.LiveWaits() == 2 }, 10*time.Second, time.Millisecond)

	require.NoError(t, l.End(ctx))
	require.Equal(t, holdover.CodeAskAborted, finalCode(t, first))
	require.Equal(t, holdover.CodeAskAborted, finalCode(t, second))
	require.False(t, f.callerKnown(l.Name()))
	for i := range 3 {
		code := finalCode(t, f.rawTimedAsk(l.Name(), "s1", fmt.Sprintf("late-%d", i), agent))
		require.Equal(t, holdover.CodeAskAborted, code, "a request under the dead lease")
	}
	require.Eventually(t, func() bool { return f.svc.LiveWaits() == 0 }, 10*time.Second, time.Millisecond)
}

func TestSuccessfulReplyIsNoError(t *testing.T) {
	msg, err := replyMsg("r", map[string]bool{"accepted": true}, nil)
	require.NoError(t, err)
	require.NoError(t, userquestions.ReplyError(msg))
}
