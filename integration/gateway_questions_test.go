package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/gateway"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
)

// gwPayload is a forwarded question request's payload.
type gwPayload struct {
	RequestID string                 `json:"requestId"`
	Session   string                 `json:"session"`
	CallID    string                 `json:"callId"`
	Questions []holdover.Question    `json:"questions"`
	Wait      *userquestions.WaitRef `json:"wait"`
	Reply     *string                `json:"reply"`
}

func gwPayloadOf(t *testing.T, f gwFrame) gwPayload {
	t.Helper()
	var p gwPayload
	require.NoError(t, json.Unmarshal(f.Payload, &p))
	return p
}

// attach opens the attachWait claim stream of (sid, callID) as stream id
// and returns the Host's one remainingMs.
func (c *gwClient) attach(id, sid, callID string) int64 {
	c.t.Helper()
	c.send(map[string]any{"type": "open", "id": id, "method": "userQuestions.attachWait",
		"params": map[string]any{"session": sid, "callId": callID}})
	f := c.take("the claim's frame", gwTypeID("frame", id))
	var data struct {
		RemainingMs *int64 `json:"remainingMs"`
	}
	require.NoError(c.t, json.Unmarshal(f.Data, &data))
	require.NotNil(c.t, data.RemainingMs, "frame %s", f.Data)
	return *data.RemainingMs
}

// claims counts the claim consumers on the wait of (sid, callID).
func (w *gwWorld) claims(sid, callID string) int {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fgPatience)
	defer cancel()
	tok, err := streams.Token(callID)
	require.NoError(w.t, err)
	n := 0
	lister := w.env.Topology.Claims.ConsumerNames(ctx)
	for name := range lister.Name() {
		if strings.HasPrefix(name, "claim~"+sid+"~"+tok+"~") {
			n++
		}
	}
	require.NoError(w.t, lister.Err())
	return n
}

// gwAsked is a gateway world in which ana watches s1 live and the agent
// has asked the timed call-1 (5 s): ana's request frame and the agent's
// outcome to come.
func gwAsked(t *testing.T) (w *gwWorld, ana *gwClient, req gwFrame, done <-chan fgResult) {
	t.Helper()
	w = newGWWorld(t, gateway.Limits{})
	ana = w.dial(gwTokenAna)
	ana.welcome()
	ana.watchLive("w1", "s1")
	done = w.askTimed(context.Background(), w.agent, fgTimed("s1", "call-1", w.live("s1"), 5000))
	return w, ana, ana.take("the request", gwType("request")), done
}

// W3, W4, W8, C1: a timed request published by the worker reaches the
// watching Client as a request frame; its claim stream gets the
// Host-computed remainingMs and pauses the Host deadline; the settle reaches
// the agent; the Host then closes the claim and every Client gets cancel.
func TestGatewayRequestReachesTheClientAndItsSettleReachesTheAgent(t *testing.T) {
	t.Parallel()
	w, ana, req, done := gwAsked(t)
	assert.Equal(t, clientwire.QuestionRequestEvent, req.Event)
	assert.Equal(t, "s1", req.Session)
	p := gwPayloadOf(t, req)
	assert.Equal(t, req.ID, p.RequestID)
	assert.Equal(t, "call-1", p.CallID)
	assert.Equal(t, fgQuestions, p.Questions)
	assert.Equal(t, &userquestions.WaitRef{CallID: "call-1", Timed: true}, p.Wait)
	assert.Nil(t, p.Reply, "the reply subject is the gateway's business")

	w.clock.Advance(time.Second)
	assert.Equal(t, int64(4000), ana.attach("s1", "s1", "call-1"))
	require.Eventually(t, func() bool { return fgTimers(w.clock) == 0 }, fgPatience, time.Millisecond,
		"no Host timer runs while the Client holds its claim (W2)")

	ana.settle(req.ID, fgAnswer("yes"))
	r := fgWait(t, done)
	require.NoError(t, r.err)
	assert.Equal(t, holdover.Outcome{Answers: fgAnswer("yes")}, r.out)

	closed := ana.take("the claim's close", gwTypeID("close", "s1"))
	assert.Nil(t, closed.Error)
	cancel := ana.take("the cancel", gwTypeID("cancel", req.ID))
	assert.Equal(t, userquestions.ReasonAnswered, cancel.Reason)
	require.Eventually(t, func() bool { return w.claims("s1", "call-1") == 0 }, fgPatience, time.Millisecond)
}

// W4: closing the socket releases every claim it held at once (not after
// the release bound) and delegates its requests: the Host deadline runs
// again from the original deadline and ends the call pending.
func TestGatewayClosingTheSocketReleasesClaimsAndDelegates(t *testing.T) {
	t.Parallel()
	w, ana, _, done := gwAsked(t)
	assert.Equal(t, int64(5000), ana.attach("s1", "s1", "call-1"))
	require.Equal(t, 1, w.claims("s1", "call-1"))

	// Listen on the request's reply subject, as the worker does.
	listed, err := w.agent.Inflight(context.Background(), "s1")
	require.NoError(t, err)
	require.Len(t, listed, 1)
	outcomes := make(chan *nats.Msg, 4)
	listener := w.conn()
	_, err = listener.ChanSubscribe(listed[0].Reply, outcomes)
	require.NoError(t, err)
	require.NoError(t, listener.Flush())

	require.NoError(t, ana.ws.CloseNow()) // the browser tab is gone, without a goodbye
	select {
	case m := <-outcomes:
		assert.JSONEq(t, `{"kind":"delegate"}`, string(m.Data))
	case <-time.After(fgPatience):
		t.Fatal("the request was not delegated")
	}
	// The claim was released before the delegation (W4).
	assert.Equal(t, 0, w.claims("s1", "call-1"))
	require.Eventually(t, func() bool { return fgTimers(w.clock) == 1 }, fgPatience, time.Millisecond,
		"the Host deadline runs again")
	fgPendingOnly(t, done)
	w.clock.Advance(5 * time.Second)
	r := fgWait(t, done)
	require.NoError(t, r.err)
	assert.True(t, r.out.Pending)
}

// W6, C1: a Client that starts watching while a request is in flight gets
// it too, and its answer goes through the same reply subject.
func TestGatewayLateClientGetsTheRequestInFlight(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	// Wait until the worker has published the request, which no Client
	// sees (the tap never answers), so it is in flight when ana joins.
	subject, err := streams.AskSubject("s1")
	require.NoError(t, err)
	tap, err := w.conn().SubscribeSync(subject)
	require.NoError(t, err)
	done := w.askTimed(context.Background(), w.agent, fgTimed("s1", "call-1", w.live("s1"), 5000))
	_, err = tap.NextMsg(fgPatience)
	require.NoError(t, err)
	require.NoError(t, tap.Unsubscribe())

	ana := w.dial(gwTokenAna)
	ana.welcome()
	ana.send(map[string]any{"type": "watch", "id": "w1", "session": "s1", "fromSeq": 1})
	req := ana.take("the request in flight", gwType("request"))
	assert.Equal(t, "call-1", gwPayloadOf(t, req).CallID)
	assert.Equal(t, int64(5000), ana.attach("s1", "s1", "call-1"))
	ana.settle(req.ID, fgAnswer("no"))
	r := fgWait(t, done)
	require.NoError(t, r.err)
	assert.Equal(t, fgAnswer("no"), r.out.Answers)
}

// §7, W8: two Clients of one Session; the first outcome wins, the other
// Client's copy is cancelled and a late settle from it finds nothing.
func TestGatewayTwoClientsOneAnswers(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	ana, bo := w.dial(gwTokenAna), w.dial(gwTokenBo)
	for _, c := range []*gwClient{ana, bo} {
		c.welcome()
		c.watchLive("w1", "s1")
	}
	done := w.askTimed(context.Background(), w.agent, fgTimed("s1", "call-1", w.live("s1"), 5000))
	reqA := ana.take("ana's request", gwType("request"))
	reqB := bo.take("bo's request", gwType("request"))
	require.Equal(t, reqA.ID, reqB.ID)
	ana.attach("s1", "s1", "call-1")
	bo.attach("s1", "s1", "call-1")
	assert.Equal(t, 2, w.claims("s1", "call-1"), "each Client holds a claim of its own")

	bo.settle(reqB.ID, fgAnswer("no"))
	r := fgWait(t, done)
	require.NoError(t, r.err)
	assert.Equal(t, fgAnswer("no"), r.out.Answers)
	ana.take("ana's cancel", gwTypeID("cancel", reqA.ID))
	ana.take("ana's claim closed", gwTypeID("close", "s1"))
	ana.settle(reqA.ID, fgAnswer("yes"))
	ana.take("NOT_FOUND for the late settle", gwError(reqA.ID, "NOT_FOUND"))
}

// A settle the answerer refuses (BAD_ANSWER) leaves the request with the
// Client, who can settle again; a countdown expiry rejects with
// ASK_TIMED_OUT, which the agent sees as pending (W5).
func TestGatewayRefusedSettleKeepsTheRequestAndRejectEndsIt(t *testing.T) {
	t.Parallel()
	_, ana, req, done := gwAsked(t)

	ana.settle(req.ID, []holdover.Answer{{ID: "other", Selected: []string{}}})
	ana.take("BAD_ANSWER", gwError(req.ID, "BAD_ANSWER"))
	ana.send(map[string]any{"type": "settle", "id": req.ID, "value": map[string]any{"questions": "no answers"}})
	ana.take("BAD_REQUEST", gwError(req.ID, "BAD_REQUEST"))
	fgPendingOnly(t, done)

	ana.send(map[string]any{"type": "reject", "id": req.ID, "error": map[string]any{"code": "ASK_TIMED_OUT", "message": "the countdown ran out"}})
	r := fgWait(t, done)
	require.NoError(t, r.err)
	assert.True(t, r.out.Pending)
	assert.Equal(t, userquestions.ReasonExpired, ana.take("the cancel", gwTypeID("cancel", req.ID)).Reason)
}

// W3: attaching to a wait that has ended (or that this gateway has no live
// request of) yields no frame, just close.
func TestGatewayAttachToAnEndedWaitIsJustClosed(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	ana := w.dial(gwTokenAna)
	ana.welcome()
	ana.send(map[string]any{"type": "watch", "id": "w1", "session": "s1", "fromSeq": 1})
	ana.send(map[string]any{"type": "open", "id": "s1", "method": "userQuestions.attachWait",
		"params": map[string]any{"session": "s1", "callId": "gone"}})
	closed := ana.take("close", gwTypeID("close", "s1"))
	assert.Nil(t, closed.Error)
	_, framed := ana.find(gwTypeID("frame", "s1"))
	assert.False(t, framed)
	assert.Equal(t, 0, w.claims("s1", "gone"))
}

// The Client's claim stream ends when the Client closes it: the claim is
// released and the Host deadline runs again (W2), with no close frame back.
func TestGatewayClosingTheStreamReleasesTheClaim(t *testing.T) {
	t.Parallel()
	w, ana, req, done := gwAsked(t)
	ana.attach("s1", "s1", "call-1")
	require.Eventually(t, func() bool { return fgTimers(w.clock) == 0 }, fgPatience, time.Millisecond)

	ana.send(map[string]any{"type": "close", "id": "s1"})
	require.Eventually(t, func() bool { return w.claims("s1", "call-1") == 0 }, fgPatience, time.Millisecond)
	require.Eventually(t, func() bool { return fgTimers(w.clock) == 1 }, fgPatience, time.Millisecond)
	ana.send(map[string]any{"type": "delegate", "id": req.ID})
	ana.alive("c1")
	_, echoed := ana.find(gwTypeID("close", "s1"))
	assert.False(t, echoed, "a stream the Client closed gets no close frame back")
	fgPendingOnly(t, done)
}

// RPC calls reach the service's endpoints by rule and its errors cross
// with their code and message unchanged (§8).
func TestGatewayCallsReachTheServiceAndKeepItsErrors(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	ana := w.dial(gwTokenAna)
	ana.welcome()
	ana.send(map[string]any{"type": "call", "id": "c1", "method": "userQuestions.answer",
		"params": map[string]any{"session": "s1", "callId": "nope", "answers": fgAnswer("yes")}})
	res := ana.take("the answer result", gwTypeID("result", "c1"))
	var out holdover.AnswerResult
	require.NoError(t, json.Unmarshal(res.Result, &out))
	assert.False(t, out.Accepted, "an unknown call is not answerable (D6)")

	ana.send(map[string]any{"type": "call", "id": "c2", "method": "userQuestions.answer",
		"params": map[string]any{"session": "s1", "callId": "", "answers": fgAnswer("yes")}})
	f := ana.take("the service's error", gwTypeID("error", "c2"))
	direct := newUser(t, w.as(auth.Gateway), userquestions.DefaultCallTimeout)
	_, derr := direct.Answer(context.Background(), holdover.AnswerRequest{Session: "s1", CallID: "", Answers: fgAnswer("yes")})
	require.Error(t, derr)
	assert.Equal(t, string(holdover.CodeOf(derr)), f.Code)
	assert.Equal(t, holdover.Wire(derr).Message, f.Message)

	// With no worker up, a call is UNAVAILABLE, not a hang.
	w.worker.Stop()
	ana.send(map[string]any{"type": "call", "id": "c3", "method": "userQuestions.view", "params": map[string]any{"session": "s1"}})
	ana.take("UNAVAILABLE", gwError("c3", "UNAVAILABLE"))
}

// A gateway that dies takes its Clients' claims with it within the release
// bound: they are NATS consumers held through its connection, and no
// heartbeat is needed to notice (DESIGN, liveness without heartbeats).
func TestGatewayDeathReleasesItsClaimsWithinTheBound(t *testing.T) {
	t.Parallel()
	w := newGWWorld(t, gateway.Limits{})
	ana := w.dial(gwTokenAna)
	ana.welcome()
	ana.watchLive("w1", "s1")
	done := w.askTimed(context.Background(), w.agent, fgTimed("s1", "call-1", w.live("s1"), 5000))
	ana.take("the request", gwType("request"))
	ana.attach("s1", "s1", "call-1")
	require.Eventually(t, func() bool { return fgTimers(w.clock) == 0 }, fgPatience, time.Millisecond)

	lost := time.Now()
	w.gwConn.Close() // the gateway's NATS connection is gone, as if its process died
	require.Eventually(t, func() bool { return fgTimers(w.clock) == 1 }, fgPatience, time.Millisecond,
		"the Host deadline runs again once NATS has dropped the claim")
	assert.Less(t, time.Since(lost), fgBound+5*time.Second, "within the release bound, with slack for a loaded machine")
	fgPendingOnly(t, done)
}
