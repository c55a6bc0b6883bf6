package integration

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/runtimetest"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
)

// The text the resume repair gives a tool call recorded without a result
// (D3), as the model and every other runtime read it.
const interruptedText = "The tool call was interrupted after it was recorded."

// sqlite is the late answer the restart tests send.
var sqlite = []holdover.Answer{{ID: "db", Selected: []string{"SQLite"}}}

// The agent process is SIGKILLed while it waits on a timed question, so
// it records no result; the restarted process repairs the call with the
// synthetic TOOL_OUTCOME_UNKNOWN result, which makes the question
// continued (D3), and a late answer still reaches the model as an admitted
// user message that settles the question late (D5, D6, D8, M9). The
// projection equals the fold of the log (`holdover inspect` exits 0).
func TestRestartAgentKilledMidWaitTakesALateAnswer(t *testing.T) {
	t.Parallel()
	w := newRestartWorld(t, `ask db "Which database?" options Postgres,SQLite timeout 60
say I will go on without the answer for now.
on late answer say Switching to {answers} for {callId}.`)
	rec := w.watch()
	first := w.agent("--session", restartSession, "--prompt", "Set up the service.", "--pool")

	w.awaitView("call_1 open", callIs("call_1", projection.Open))
	require.Equal(t, "call_1", rec.next(t).CallID, "the foreground wait is running")
	was := w.liveRoot()
	first.kill()
	require.Equal(t, userquestions.ReasonAborted, rec.cancel(t).reason, "the worker ends the dead agent's wait")
	evts := w.Events(restartSession)
	_, repaired := repairedResult(evts, "call_1")
	require.False(t, repaired, "nothing repairs the call before a runtime resumes the Session:\n%s", runtimetest.Describe(evts))

	second := w.agent("--session", restartSession, "--pool")
	evts = w.Await(restartSession, "the repaired question", func(evts []events.Event) bool {
		_, ok := repairedResult(evts, "call_1")
		return ok && runtimetest.Count(evts, events.TypeTurnEnd) == 1
	})
	result, _ := repairedResult(evts, "call_1")
	require.Equal(t, holdover.ToolName, result.Name)
	require.True(t, result.IsError)
	require.Equal(t, interruptedText, events.JoinText(result.Content))
	require.Equal(t, 1, runtimetest.Count(evts, events.TypeToolResult), "the repair is the call's only result")
	require.Equal(t, "I will go on without the answer for now.", events.JoinText(runtimetest.Last[*events.AssistantMessage](t, evts).Content),
		"the resumed agent goes on with the interrupted Turn")
	w.awaitView("call_1 continued", callIs("call_1", projection.Continued))
	now := w.liveRoot()
	require.NotEqual(t, was.Instance, now.Instance, "the restarted process is the live root")
	require.Equal(t, was.Epoch+1, now.Epoch)

	res, err := w.user.Answer(w.ctx, holdover.AnswerRequest{Session: restartSession, CallID: "call_1", Answers: sqlite})
	require.NoError(t, err)
	require.True(t, res.Accepted)
	evts = w.awaitLateReaction()
	w.requireAdmitted(evts, res.MessageID)
	w.requireSettledLate(evts)
	w.stop(second)
	w.stop(w.worker)
}

// The agent process is SIGKILLed during independent work after it spliced
// a late reply into its inbox and before its next step admitted it. The
// log holds the reply (D8): another answer is REPLY_QUEUED while no agent
// runs. The restarted process restores the reply from its splice, claims
// it again, which re-reserves it, and admits it once; the reply is read
// from the inbox only once.
func TestRestartAgentKilledWithASplicedReplyClaimsItAgain(t *testing.T) {
	t.Parallel()
	w := newRestartWorld(t, pendingThenWork)
	first, _ := w.workingAfterPending()
	res, err := w.user.Answer(w.ctx, holdover.AnswerRequest{Session: restartSession, CallID: "call_1", Answers: sqlite})
	require.NoError(t, err)
	require.True(t, res.Accepted)
	w.awaitView("the reply spliced while the work runs", func(v projection.View) bool {
		c, ok := v.Find("call_1")
		return ok && c.Queued != nil && c.Queued.MessageID == res.MessageID
	})
	first.kill()

	_, err = w.user.Answer(w.ctx, holdover.AnswerRequest{Session: restartSession, CallID: "call_1", Answers: sqlite})
	require.Equal(t, holdover.CodeReplyQueued, holdover.CodeOf(err), "the spliced reply holds the call while no agent runs (D8)")

	second := w.agent("--session", restartSession, "--pool")
	evts := w.awaitLateReaction()
	w.requireAdmitted(evts, res.MessageID)
	spliced := 0
	for _, e := range evts {
		if b, ok := e.Body.(*events.InboxSpliced); ok && b.Message.ID == res.MessageID {
			spliced++
		}
	}
	require.Equal(t, 1, spliced, "restored from the log, not read again:\n%s", runtimetest.Describe(evts))
	w.requireSettledLate(evts)
	after, err := w.user.Answer(w.ctx, holdover.AnswerRequest{Session: restartSession, CallID: "call_1", Answers: sqlite})
	require.NoError(t, err)
	require.False(t, after.Accepted, "settled by the one reply")
	w.stop(second)
	w.stop(w.worker)
}

// The agent process is SIGKILLed during independent work after its
// question returned pending, and nothing restarts it. A late answer is
// accepted all the same and waits durably in the Session inbox, holding
// the call's reservation (D8). Until an agent serves the Session again it
// stays there: `holdover agent --session` repairs the interrupted work and
// admits the reply. (The killed process was the only pool process, so the
// resume request the worker sends once its root lease ends finds no
// runtime, D7; restart_pool_test.go has another pool process take it.)
func TestRestartAnswerWaitsInTheInboxUntilTheAgentIsBack(t *testing.T) {
	t.Parallel()
	w := newRestartWorld(t, pendingThenWork)
	first, evts := w.workingAfterPending()
	pending, ok := holdover.ParsePending(events.JoinText(runtimetest.Last[*events.ToolResult](t, evts).Content))
	require.True(t, ok, "the call returned pending:\n%s", runtimetest.Describe(evts))
	require.Equal(t, "call_1", pending.CallID)
	first.kill()

	res, err := w.user.Answer(w.ctx, holdover.AnswerRequest{Session: restartSession, CallID: "call_1", Answers: sqlite})
	require.NoError(t, err)
	require.True(t, res.Accepted, "a continued question is answerable while no agent runs")
	subject, err := streams.ReplySubject(restartSession, "call_1")
	require.NoError(t, err)
	raw, err := w.env.Topology.Sessions.GetLastMsgForSubject(w.ctx, subject)
	require.NoError(t, err)
	queued, err := inbox.Decode(raw.Data)
	require.NoError(t, err)
	require.Equal(t, res.MessageID, queued.ID, "the reply is the last message of its call's reply subject")
	require.Equal(t, events.QuestionReply("call_1"), queued.Source)
	_, err = w.user.Answer(w.ctx, holdover.AnswerRequest{Session: restartSession, CallID: "call_1", Answers: sqlite})
	require.Equal(t, holdover.CodeReplyQueued, holdover.CodeOf(err), "the queued reply holds the call (D8)")

	second := w.agent("--session", restartSession, "--pool")
	evts = w.awaitLateReaction()
	sleep := runtimetest.Last[*events.ToolCall](t, evts)
	require.Equal(t, runtime.SleepTool, sleep.Name)
	result, ok := repairedResult(evts, sleep.CallID)
	require.True(t, ok, "the interrupted sleep is repaired:\n%s", runtimetest.Describe(evts))
	require.Equal(t, interruptedText, events.JoinText(result.Content))
	w.requireAdmitted(evts, res.MessageID)
	w.requireSettledLate(evts)
	w.stop(second)
	w.stop(w.worker)
}

// pendingThenWork is a script whose question returns pending after a
// second and whose agent then works for a minute: a late answer comes
// while it works or after it was killed, and the model reacts to it.
const pendingThenWork = `ask db "Which database?" options Postgres,SQLite timeout 1
work 1 step of 60s
on late answer say Switching to {answers} for {callId}.
say Done.`

// workingAfterPending starts the agent of pendingThenWork and waits until
// its question is continued and it works; it returns the agent and the
// log so far.
func (w *restartWorld) workingAfterPending() (*fgProc, []events.Event) {
	w.t.Helper()
	agent := w.agent("--session", restartSession, "--prompt", "Set up the service.", "--pool")
	evts := w.Await(restartSession, "independent work after the pending result", sleeping)
	w.awaitView("call_1 continued", callIs("call_1", projection.Continued))
	return agent, evts
}

// watch watches the Session as a Client that answers nothing, so the
// test sees the foreground wait reach a Client and end.
func (w *restartWorld) watch() *fgRecorder {
	w.t.Helper()
	nc, _ := w.env.As(w.t, auth.Gateway)
	a, err := answerer.New(nc, answerer.Config{ReleaseBound: userquestions.MinReleaseBound, Log: slog.New(slog.DiscardHandler)})
	require.NoError(w.t, err)
	w.t.Cleanup(func() { require.NoError(w.t, a.Close()) })
	rec := &fgRecorder{requests: make(chan *answerer.Delivery, 10), cancels: make(chan fgCancel, 10)}
	watch, err := a.Watch(w.ctx, restartSession, rec)
	require.NoError(w.t, err)
	w.t.Cleanup(func() { _ = watch.Close(w.ctx) })
	return rec
}

// awaitLateReaction waits until the agent has answered the late reply
// with the script's reaction and ended that Turn.
func (w *restartWorld) awaitLateReaction() []events.Event {
	w.t.Helper()
	const reaction = "Switching to db=SQLite for call_1."
	return w.Await(restartSession, "the model's reaction to the late answer", func(evts []events.Event) bool {
		for i, e := range evts {
			if m, ok := e.Body.(*events.AssistantMessage); ok && events.JoinText(m.Content) == reaction {
				return slices.ContainsFunc(evts[i:], func(e events.Event) bool { return e.Type == events.TypeTurnEnd })
			}
		}
		return false
	})
}

// requireAdmitted checks that the reply with messageID was admitted as a
// user/message with the answer_to_pending_question text and the original
// questions (D6), and that the model's next request came after it and its
// response is the reaction, which the model can only write from that
// message: it names the answers and the call id it read there.
func (w *restartWorld) requireAdmitted(evts []events.Event, messageID string) {
	w.t.Helper()
	at := slices.IndexFunc(evts, func(e events.Event) bool {
		m, ok := e.Body.(*events.UserMessage)
		return ok && m.Message.ID == messageID
	})
	require.GreaterOrEqual(w.t, at, 0, "the reply is admitted:\n%s", runtimetest.Describe(evts))
	msg := evts[at].Body.(*events.UserMessage).Message
	require.Equal(w.t, events.QuestionReply("call_1"), msg.Source)
	reply, err := events.ParseReply(events.JoinText(msg.Content))
	require.NoError(w.t, err)
	require.Equal(w.t, events.Reply{Kind: events.ReplyKind, Tool: holdover.ToolName, CallID: "call_1", Questions: dbQuestions, Answers: sqlite}, reply)
	claimed := slices.IndexFunc(evts, func(e events.Event) bool {
		c, ok := e.Body.(*events.InboxClaimed)
		return ok && c.MessageID == messageID
	})
	require.Equal(w.t, at-1, claimed, "claimed, then admitted (D8):\n%s", runtimetest.Describe(evts))
	rest := runtimetest.Types(evts[at+1:])
	require.GreaterOrEqual(w.t, len(rest), 2, "the model's next request follows the admission:\n%s", runtimetest.Describe(evts))
	require.Equal(w.t, []events.Type{events.TypeRequestHeader, events.TypeAssistantMessage}, rest[:2],
		"the model's next request follows the admission:\n%s", runtimetest.Describe(evts))
	require.Equal(w.t, "Switching to db=SQLite for call_1.", events.JoinText(evts[at+2].Body.(*events.AssistantMessage).Content))
}

// requireSettledLate waits until the projection has folded the whole log,
// checks the question settled late with the answer (D5), and that
// `holdover inspect` agrees the projection equals the fold of the log.
func (w *restartWorld) requireSettledLate(evts []events.Event) {
	w.t.Helper()
	last := evts[len(evts)-1].Seq
	view := w.awaitView("the projection of the whole log", func(v projection.View) bool { return v.LastSeq >= last })
	require.Empty(w.t, view.Active)
	settled, ok := view.FindSettled("call_1")
	require.True(w.t, ok, "call_1 settled: %+v", view)
	require.True(w.t, settled.Late)
	require.Equal(w.t, sqlite, settled.Answers)
	require.Equal(w.t, dbQuestions, settled.Questions)
	code, out := w.inspect()
	require.Equal(w.t, 0, code, "holdover inspect:\n%s", out)
}
