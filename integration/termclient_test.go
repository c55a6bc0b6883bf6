package integration

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection/projectiontest"
	"github.com/holdover-dev/holdover/steer/steertest"
	"github.com/holdover-dev/holdover/termclient"
)

// The terminal Client (holdover answer) against the real system: an
// embedded NATS server, the question worker with its Host deadlines on a
// fake clock, the projection worker, a gateway, and termclient over a real
// WebSocket, its input typed through a pipe.

// termQuestions are three questions of one call: options, free text and
// one to skip.
var termQuestions = []holdover.Question{
	{ID: "q1", Question: "Which plan?", Options: []holdover.Option{{Label: "Option A"}, {Label: "Option B", Description: "cheaper"}}},
	{ID: "q2", Question: "Anything to add?"},
	{ID: "q3", Question: "Which regions?", MultiSelect: true, Options: []holdover.Option{{Label: "eu"}, {Label: "us"}, {Label: "ap"}}},
}

// C1, D3: the list shows one line per open or continued call with its
// status and questions, from the projection joined with the live
// requests; settled calls are not listed.
func TestTermclientListsOpenAndContinuedCalls(t *testing.T) {
	t.Parallel()
	w := newTermWorld(t)
	s := w.session("s1")
	s.Continued("call-0", steertest.Questions("color"))
	s.Ask("call-3", fgQuestions)
	recordResult(t, s, "call-3", fgResult{out: holdover.Outcome{Answers: fgAnswer("yes")}})
	s.Ask("call-2", termQuestions) // recorded, but its Host never asks: no answer channel
	w.ask(s, w.live("s1"), "call-1", fgQuestions, 5000)

	out, err := once(func() termclient.Options { o := w.options(gwTokenAna, "s1"); o.List = true; return o }())
	require.NoError(t, err)
	assert.Equal(t, "Session s1:\n"+
		"  1) call-0  continued · work continued, answer still available — Which color?\n"+
		"  2) call-2  open · not connected to this Client — Which plan? | Anything to add? | Which regions?\n"+
		"  3) call-1  open · waiting for your answer — Deploy to production now?\n", out)
	assert.Equal(t, 0, w.claims("s1", "call-1"), "listing claims nothing: the Host deadline keeps running (W2)")

	empty, err := once(func() termclient.Options { o := w.options(gwTokenAna, "s2"); o.List = true; return o }())
	require.NoError(t, err)
	assert.Equal(t, "Session s2 has no open or continued questions.\n", empty)
}

// W2, W3, W4, C4: picking an open call claims its wait like the web
// Client: the one remainingMs frame is shown once, and no Host timer runs
// while the person types, however long they take. The answer then
// settles in time through the waterfall; the claim stays until the Host
// closes it, and the terminal reads the outcome from the projection.
func TestTermclientClaimPausesTheHostDeadlineWhileTheUserTypes(t *testing.T) {
	t.Parallel()
	w := newTermWorld(t)
	s := w.session("s1")
	done := w.ask(s, w.live("s1"), "call-1", termQuestions, 5000)

	term := start(t, w.options(gwTokenAna, "s1"))
	term.see("  1) call-1  open · waiting for your answer — Which plan? | Anything to add? | Which regions?\n")
	term.see("Answer which? [1-1]")
	assert.Equal(t, 1, fgTimers(w.clock), "before the pick the Host deadline runs")
	term.typeLine("1")
	term.see("Continuing in 5s (paused while you answer here).\n")
	require.Eventually(t, func() bool { return fgTimers(w.clock) == 0 }, fgPatience, time.Millisecond,
		"no Host timer runs while the terminal holds its claim (W2)")
	assert.Equal(t, 1, w.claims("s1", "call-1"))

	// The person takes far longer than the Host deadline.
	term.see("Question 1 of 3 (q1): Which plan?\n  1) Option A\n  2) Option B — cheaper\n")
	w.clock.Advance(time.Minute)
	term.typeLine("7")
	term.see("BAD_ANSWER: 7 is not an option of this question")
	term.typeLine("option b")
	term.see("Question 2 of 3 (q2)")
	w.clock.Advance(time.Minute)
	term.typeLine("ship it on Friday")
	term.see("Question 3 of 3 (q3)")
	term.typeLine("1, 3")
	term.see("Your answers:\n  q1: Option B\n  q2: \"ship it on Friday\"\n  q3: eu, ap\nSend? [Y/n] ")
	fgPendingOnly(t, done)
	assert.Equal(t, 1, w.claims("s1", "call-1"), "the claim held all along")
	term.typeLine("y")

	r := fgWait(t, done)
	require.NoError(t, r.err)
	require.False(t, r.out.Pending, "answered in time: the paused deadline never fired")
	assert.Equal(t, []holdover.Answer{
		{ID: "q1", Selected: []string{"Option B"}},
		{ID: "q2", Selected: []string{}, Custom: "ship it on Friday"},
		{ID: "q3", Selected: []string{"eu", "ap"}},
	}, r.out.Answers)
	require.Eventually(t, func() bool { return w.claims("s1", "call-1") == 0 }, fgPatience, time.Millisecond,
		"the Host closed the claim once the request settled (W4)")

	recordResult(t, s, "call-1", r)
	term.see("Answered in time: the agent has your answer to call call-1.\n")
	term.see("Session s1 has no open or continued questions.\n")
	require.NoError(t, term.end())
}

// C3, D6: a continued call is answered through the late-answer RPC, typed
// or from flags; while that reply awaits admission another answer is
// REPLY_QUEUED.
func TestTermclientContinuedCallIsAnsweredLateThenReplyQueued(t *testing.T) {
	t.Parallel()
	w := newTermWorld(t)
	s := w.session("s1")
	qs := steertest.Questions("color", "size")
	s.Continued("call-1", qs)
	s.Continued("call-2", qs)

	// Typed: pick, answer, send.
	term := start(t, w.options(gwTokenAna, "s1"))
	term.see("  2) call-2  continued · work continued, answer still available — Which color? | Which size?\n")
	term.typeLine("1")
	term.see("Question 1 of 2 (color)")
	term.typeLine("yes")
	term.see("Question 2 of 2 (size)")
	term.typeLine("")
	term.see("  color: yes\n  size: (skipped)\nSend? [Y/n] ")
	term.typeLine("")
	term.see("Accepted: your answer to call call-1 is queued for the agent (message ")
	require.NoError(t, term.end())
	assert.Equal(t, 0, w.claims("s1", "call-1"), "a continued call has no wait to claim")

	// From flags.
	opts := w.options(gwTokenBo, "s1")
	opts.Call, opts.Answers, opts.Skips = "call-2", []string{"color=2"}, []string{"size"}
	out, err := once(opts)
	require.NoError(t, err)
	assert.Regexp(t, `^Accepted: your answer to call call-2 is queued for the agent \(message \S+\)\.\n$`, out)

	_, err = once(opts)
	require.Error(t, err)
	assert.Equal(t, holdover.CodeReplyQueued, holdover.CodeOf(err), "%v", err)

	// Each reply records who gave it: the user of the token the gateway
	// authenticated, whatever the Client says (issue 10).
	by := map[string]string{}
	for _, q := range steertest.Queued(t, w.env.Topology.Sessions, "s1") {
		by[q.Message.Source.CallID] = q.Message.Source.User
	}
	assert.Equal(t, map[string]string{"call-1": "ana", "call-2": "bo"}, by)
}

// Non-interactive flags answer an open call through the waterfall, with a
// claim held until the Host closes it (W3, W4): an option by label, free
// text, a skip. A JSON batch answers a continued call through the RPC, and
// a batch that misses a question is BAD_ANSWER before anything is sent.
func TestTermclientAnswersFromFlags(t *testing.T) {
	t.Parallel()
	w := newTermWorld(t)
	s := w.session("s1")
	done := w.ask(s, w.live("s1"), "call-1", termQuestions, 5000)

	opts := w.options(gwTokenAna, "s1")
	opts.Call = "call-1"
	opts.Answers = []string{"q1=Option A", "q2=custom:free text"}
	opts.Skips = []string{"q3"}
	type ran struct {
		out string
		err error
	}
	answered := make(chan ran, 1)
	go func() {
		out, err := once(opts)
		answered <- ran{out, err}
	}()
	r := fgWait(t, done)
	require.NoError(t, r.err)
	assert.Equal(t, []holdover.Answer{
		{ID: "q1", Selected: []string{"Option A"}},
		{ID: "q2", Selected: []string{}, Custom: "free text"},
		{ID: "q3", Selected: []string{}},
	}, r.out.Answers)
	recordResult(t, s, "call-1", r)
	select {
	case got := <-answered:
		require.NoError(t, got.err)
		assert.Equal(t, "Answered in time: the agent has your answer to call call-1.\n", got.out)
	case <-time.After(fgPatience):
		t.Fatal("the terminal Client did not report the outcome")
	}
	// The Host deletes the claim once the consumer has pushed its closing
	// frame, which the Client may read first (docs/design.md, "Claims").
	require.Eventually(t, func() bool { return w.claims("s1", "call-1") == 0 }, fgPatience, 5*time.Millisecond,
		"the claim is gone once the call settled")

	s.Continued("call-2", termQuestions)
	bad := w.options(gwTokenAna, "s1")
	bad.Call, bad.JSON = "call-2", `{"answers":[{"id":"q1","selected":["Option B"]}]}`
	_, err := once(bad)
	assert.Equal(t, holdover.CodeBadAnswer, holdover.CodeOf(err), "%v", err)

	good := bad
	good.JSON = `{"answers":[{"id":"q1","selected":["Option B"]},{"id":"q2","selected":[],"custom":"later"},{"id":"q3","selected":["us"]}]}`
	out, err := once(good)
	require.NoError(t, err)
	assert.Contains(t, out, "Accepted: your answer to call call-2 is queued for the agent")
}

// C4, §7: while the person types, another Client's countdown ends the
// request (a reject with ASK_TIMED_OUT wins, W8); the call continues and
// the terminal says so at once, then sends the typed answer through the
// late-answer RPC instead of the waterfall.
func TestTermclientCallThatContinuesWhileTypingGoesLate(t *testing.T) {
	t.Parallel()
	w := newTermWorld(t)
	s := w.session("s1")
	done := w.ask(s, w.live("s1"), "call-1", fgQuestions, 5000)
	bo := w.dial(gwTokenBo)
	bo.welcome()
	bo.send(map[string]any{"type": "watch", "id": "w1", "session": "s1", "fromSeq": 1})
	req := bo.take("bo's request", gwType("request"))

	term := start(t, w.options(gwTokenAna, "s1"))
	term.typeLine("1")
	term.see("Continuing in 5s (paused while you answer here).\n")
	term.see("Question 1 of 1 (deploy)")

	bo.send(map[string]any{"type": "reject", "id": req.ID, "error": map[string]any{"code": "ASK_TIMED_OUT", "message": "bo's countdown ran out"}})
	r := fgWait(t, done)
	require.NoError(t, r.err)
	require.True(t, r.out.Pending)
	recordResult(t, s, "call-1", r)
	term.see("Work continued — you can still answer: your answer will reach the agent as a late answer.\n")
	require.Eventually(t, func() bool { return w.claims("s1", "call-1") == 0 }, fgPatience, time.Millisecond)

	term.typeLine("no")
	term.see("Send? [Y/n] ")
	term.typeLine("y")
	term.see("Accepted: your answer to call call-1 is queued for the agent (message ")
	require.NoError(t, term.end())
}

// §8: each failure comes back with its stable code: a token the gateway
// does not know, a Session the token does not grant, a call the Session
// does not have, a gateway that is not there.
func TestTermclientErrorsCarryTheirCodes(t *testing.T) {
	t.Parallel()
	w := newTermWorld(t)
	s := w.session("s1")
	s.Continued("call-1", fgQuestions)

	codeOf := func(opts termclient.Options) holdover.Code {
		t.Helper()
		_, err := once(opts)
		require.Error(t, err)
		return holdover.CodeOf(err)
	}
	list := func(token, sid string) termclient.Options {
		o := w.options(token, sid)
		o.List = true
		return o
	}
	assert.Equal(t, clientwire.CodeUnauthorized, codeOf(list("not-a-token", "s1")))
	assert.Equal(t, clientwire.CodeForbidden, codeOf(list(gwTokenAna, "s3")), "ana may use s1 and s2 only")

	unknown := w.options(gwTokenAna, "s1")
	unknown.Call, unknown.Answers = "call-9", []string{"deploy=yes"}
	assert.Equal(t, holdover.CodeNotFound, codeOf(unknown))

	wrong := w.options(gwTokenAna, "s1")
	wrong.Call, wrong.Answers = "call-1", []string{"deploy=maybe"}
	assert.Equal(t, holdover.CodeBadAnswer, codeOf(wrong), "a value that is no option is refused, not sent as free text")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	gone := list(gwTokenAna, "s1")
	gone.Gateway = down
	assert.Equal(t, clientwire.CodeUnavailable, codeOf(gone))
}

// D6, issue 20 item 5: a late answer the service refuses says why. The
// person picks a continued call and types an answer; before it is sent,
// another reply settles the call. The terminal Client shows the reason
// with its code, CALL_SETTLED, not a bare refusal.
func TestTermclientRefusedLateAnswerSaysWhy(t *testing.T) {
	t.Parallel()
	w := newTermWorld(t)
	s := w.session("s1")
	qs := steertest.Questions("color")
	s.Continued("call-1", qs)

	term := start(t, w.options(gwTokenAna, "s1"))
	term.see("  1) call-1  continued")
	term.typeLine("1")
	term.see("Question 1 of 1 (color)")
	term.typeLine("yes")
	term.see("Send? [Y/n] ")
	reply, err := events.NewReply("reply-elsewhere", "call-1", qs, steertest.Skip(qs))
	require.NoError(t, err)
	s.Admit(reply)
	projectiontest.Folded(t, w.env.Topology.Questions, "s1", s.Last())
	term.typeLine("")
	term.see("CALL_SETTLED")
	_ = term.end()
	assert.Contains(t, term.out.String(), "call call-1 takes no answer: it is answered already, by a late reply the agent admitted")
}
