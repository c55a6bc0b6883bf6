package worker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/userquestions"
)

// request sends body to endpoint op as one raw NATS request, naming the
// agent's caller lease when leased, and returns the reply's error (nil for
// a result); the accepted frame of an ask is skipped.
func (f *fgTest) request(op, body string, leased bool) error {
	f.t.Helper()
	nc := f.env.Conn
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	require.NoError(f.t, err)
	defer func() { _ = sub.Unsubscribe() }()
	msg := nats.NewMsg(userquestions.Subject(op))
	msg.Reply, msg.Data = inbox, []byte(body)
	if leased {
		msg.Header.Set(userquestions.HeaderCallerLease, f.agent.Lease())
	}
	require.NoError(f.t, nc.PublishMsg(msg))
	for {
		m, err := sub.NextMsg(10 * time.Second)
		require.NoError(f.t, err, "no reply from %s", op)
		if m.Header.Get(userquestions.HeaderFrame) != userquestions.FrameAccepted {
			return userquestions.ReplyError(m)
		}
	}
}

// Issue 8: every ask and askTimed names its caller's lease; one that does
// not is refused with BAD_REQUEST naming the header and saying why, before
// any wait exists or any Client sees it.
func TestCallsWithoutACallerLeaseAreRefused(t *testing.T) {
	f := newFGTest(t)
	rec := f.watch("s1")
	agent := f.live("s1")
	ref, err := json.Marshal(agent)
	require.NoError(t, err)
	for op, body := range map[string]string{
		opAsk:      `{"session":"s1","callId":"keyed","agent":` + string(ref) + `,"questions":[{"id":"q1","question":"Ship it?"}]}`,
		opAskTimed: `{"session":"s1","callId":"timed","agent":` + string(ref) + `,"timeoutMs":60000,"questions":[{"id":"q1","question":"Ship it?"}]}`,
	} {
		err := f.request(op, body, false)
		assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), op)
		assert.ErrorContains(t, err, "no Holdover-Caller-Lease header", op)
		assert.ErrorContains(t, err, "how the worker learns that its caller is gone", op)
	}
	assert.Equal(t, 0, f.svc.LiveWaits())
	select {
	case d := <-rec.requests:
		t.Fatalf("a refused call reached a Client: %+v", d.WaterfallRequest)
	default:
	}
}

// Issue 8: every endpoint refuses a request field it does not know,
// naming where it is, and says what is wrong with a timeout: a missing
// one is missing, and integers print as integers.
func TestRequestsSayWhatIsWrong(t *testing.T) {
	f := newFGTest(t)
	agent := f.live("s1")
	ref, err := json.Marshal(agent)
	require.NoError(t, err)
	const qs = `"questions":[{"id":"q1","question":"Ship it?"}]`
	agentWithSession := `{"instance":"` + agent.Instance + `","epoch":1,"session":"s1"}`
	for _, tc := range []struct {
		op, body string
		code     holdover.Code
		says     string
	}{
		{opAsk, `{"session":"s1","agent":` + agentWithSession + `,` + qs + `}`, holdover.CodeBadRequest, `unknown field "agent.session"`},
		{opAskTimed, `{"session":"s1","callId":"c1","agent":` + agentWithSession + `,"timeoutMs":1000,` + qs + `}`, holdover.CodeBadRequest, `unknown field "agent.session"`},
		{opAskTimed, `{"session":"s1","callId":"c1","agent":` + string(ref) + `,"timeout":1000,` + qs + `}`, holdover.CodeBadRequest, `unknown field "timeout"`},
		{opAskTimed, `{"session":"s1","callId":"c1","agent":` + string(ref) + `,` + qs + `}`, holdover.CodeBadTimeout, "timeoutMs is missing"},
		{opAskTimed, `{"session":"s1","callId":"c1","agent":` + string(ref) + `,"timeoutMs":2147483648,` + qs + `}`, holdover.CodeBadTimeout, "timeout 2147483648 ms is outside 1..2147483647 ms"},
		{opInflight, `{"session":"s1","sessions":["s2"]}`, holdover.CodeBadRequest, `unknown field "sessions"`},
		{opAnswer, `{"session":"s1","callId":"c1","answers":[{"id":"q1","selected":[],"comment":"x"}]}`, holdover.CodeBadRequest, `unknown field "answers[0].comment"`},
		{opView, `{"session":"s1","since":4}`, holdover.CodeBadRequest, `unknown field "since"`},
	} {
		err := f.request(tc.op, tc.body, true)
		assert.Equal(t, tc.code, holdover.CodeOf(err), "%s %s: %v", tc.op, tc.body, err)
		assert.ErrorContains(t, err, tc.says, tc.op)
	}
	assert.Equal(t, 0, f.svc.LiveWaits())
}

// stats reads the service's micro stats as `nats micro stats` does.
func (f *fgTest) stats() map[string]*micro.EndpointStats {
	f.t.Helper()
	subject, err := micro.ControlSubject(micro.StatsVerb, userquestions.Name, "")
	require.NoError(f.t, err)
	m, err := f.env.Conn.Request(subject, nil, 10*time.Second)
	require.NoError(f.t, err)
	var stats micro.Stats
	require.NoError(f.t, json.Unmarshal(m.Data, &stats))
	require.Equal(f.t, micro.StatsResponseType, stats.Type)
	out := map[string]*micro.EndpointStats{}
	for _, ep := range stats.Endpoints {
		out[ep.Name] = ep
	}
	return out
}

// Issue 11: `nats micro stats userQuestions` counts every request once its
// reply has gone out, its errors, and its time from arrival to reply: for
// an askTimed, how long its agent waited, not how long the handler took
// to hand the wait over.
func TestMicroStatsCountWhatCallersSaw(t *testing.T) {
	f := newFGTest(t)
	for name, st := range f.stats() {
		assert.Zero(t, st.NumRequests, name)
	}
	rec := f.watch("s1")
	require.Error(t, f.request(opView, `{"session":"a.b"}`, false))
	_, err := f.agent.View(context.Background(), "s1")
	require.NoError(t, err)
	require.Error(t, f.request(opAskTimed, `{"session":"s1"}`, false))

	sent := time.Now()
	done := f.askTimed(f.agent, "s1", "call-1", 5000)
	rec.next(t)
	// The wait is live at least from here until the clock passes its
	// deadline, and a view round trip stands between the two.
	live := time.Now()
	_, err = f.agent.View(context.Background(), "s1")
	require.NoError(t, err)
	held := time.Since(live)
	f.clock.Advance(5 * time.Second)
	require.NoError(t, ended(t, done), "pending")
	waited := time.Since(sent)

	var st map[string]*micro.EndpointStats
	require.Eventually(t, func() bool {
		st = f.stats()
		return st[opAskTimed].NumRequests == 2
	}, 10*time.Second, time.Millisecond, "the pending reply is counted once it has gone out")
	view, timed := st[opView], st[opAskTimed]
	assert.Equal(t, 3, view.NumRequests)
	assert.Equal(t, 1, view.NumErrors)
	assert.Contains(t, view.LastError, "BAD_REQUEST")
	assert.Equal(t, 1, timed.NumErrors, "a pending result is a result, not an error")
	assert.Contains(t, timed.LastError, "Holdover-Caller-Lease")
	assert.GreaterOrEqual(t, timed.ProcessingTime, held, "the wait's time is counted")
	assert.LessOrEqual(t, timed.ProcessingTime, waited)
	assert.Equal(t, timed.ProcessingTime/2, timed.AverageProcessingTime)
	for _, name := range []string{opAsk, opAnswer, opInflight} {
		require.Contains(t, st, name)
	}
	assert.Positive(t, st[opInflight].NumRequests, "the watch listed the Session")

	// PING and INFO answer as a micro service's do.
	subject, err := micro.ControlSubject(micro.PingVerb, userquestions.Name, "")
	require.NoError(t, err)
	m, err := f.env.Conn.Request(subject, nil, 10*time.Second)
	require.NoError(t, err)
	var ping micro.Ping
	require.NoError(t, json.Unmarshal(m.Data, &ping))
	assert.Equal(t, micro.PingResponseType, ping.Type)
	assert.Equal(t, userquestions.Name, ping.Name)
}
