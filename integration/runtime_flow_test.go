package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/runtimetest"
)

var dbQuestions = []holdover.Question{{ID: "db", Question: "Which database?", Options: []holdover.Option{{Label: "Postgres"}, {Label: "SQLite"}}}}

// settleFirst is a Client that answers the first request it sees.
type settleFirst struct {
	answers []holdover.Answer
	errs    chan error
}

func (s settleFirst) Request(d *answerer.Delivery)    { s.errs <- d.Settle(s.answers) }
func (settleFirst) Cancel(*answerer.Delivery, string) {}

// A Client answers in time: the tool result is the answers object (M7),
// the model reads it, and the question settles from its own tool result.
func TestRuntimeQuestionAnsweredInTime(t *testing.T) {
	w := newAgentWorld(t, `ask db "Which database?" options Postgres,SQLite timeout 30
say Using {result}.`)
	answers := []holdover.Answer{{ID: "db", Selected: []string{"SQLite"}}}
	settled := w.answerFirst("s1", answers)

	w.start(w.ctx, "s1", "Set up the service.")
	require.NoError(t, <-settled)
	evts := w.AwaitCount("s1", events.TypeTurnEnd, 1)

	result := runtimetest.Last[*events.ToolResult](t, evts)
	require.False(t, result.IsError)
	require.JSONEq(t, `{"answers":[{"id":"db","selected":["SQLite"]}]}`, events.JoinText(result.Content))
	require.Equal(t, `Using {"answers":[{"id":"db","selected":["SQLite"]}]}.`, events.JoinText(runtimetest.Last[*events.AssistantMessage](t, evts).Content))
	view := w.projected("s1")
	require.Empty(t, view.Active)
	require.Equal(t, []projection.Settled{{CallID: "call_1", Questions: dbQuestions, Answers: answers, Late: false, Seq: evts[runtimetest.IndexOf(evts, events.TypeToolResult)].Seq}}, view.Settled)
}

const lateScript = `ask db "Which database?" options Postgres,SQLite timeout 1
work 3 steps of 10s
on late answer say Switching to {answers} for {callId}.
say Done.`

// The main durable path: nobody answers in time, so the call returns
// pending (M6) and the question is continued; the agent does independent
// steps; a late answer is queued while a step's tool runs, a second one is
// REPLY_QUEUED, and the first is admitted at the next step boundary, after
// the running tool finished: the model's next request holds the
// answer_to_pending_question message with the original questions, and the
// question settles late (D3, D5, D6, D8).
func TestRuntimeLateAnswerIsAdmittedAtTheNextStep(t *testing.T) {
	w := newAgentWorld(t, lateScript)
	w.start(w.ctx, "s1", "Set up the service.")
	w.working("s1")

	evts := w.Events("s1")
	pending, ok := holdover.ParsePending(events.JoinText(runtimetest.Last[*events.ToolResult](t, evts).Content))
	require.True(t, ok, "the call returned pending:\n%s", runtimetest.Describe(evts))
	require.Equal(t, "call_1", pending.CallID)
	require.Equal(t, runtime.SleepTool, runtimetest.Last[*events.ToolCall](t, evts).Name, "the agent moved on to independent work")
	view := w.projected("s1")
	require.Equal(t, projection.Continued, view.Active[0].Status)

	answers := []holdover.Answer{{ID: "db", Selected: []string{"SQLite"}}}
	res, err := w.answer("s1", "call_1", answers...)
	require.NoError(t, err)
	require.True(t, res.Accepted)
	evts = w.AwaitCount("s1", events.TypeInboxSpliced, 2)
	spliced := runtimetest.Last[*events.InboxSpliced](t, evts)
	require.Equal(t, res.MessageID, spliced.Message.ID)
	require.Equal(t, events.QuestionReply("call_1"), spliced.Message.Source)
	require.Equal(t, 1, runtimetest.Count(evts, events.TypeUserMessage), "queued, not admitted, while the tool runs")

	_, err = w.answer("s1", "call_1", holdover.Answer{ID: "db", Selected: []string{"Postgres"}})
	require.Equal(t, holdover.CodeReplyQueued, holdover.CodeOf(err), "one reply per call awaits admission (D6)")

	w.clock.Advance(10 * time.Second) // the running step ends
	evts = w.AwaitCount("s1", events.TypeTurnEnd, 1)
	admitted := runtimetest.IndexOf(evts, events.TypeUserMessage)
	admitted = admitted + 1 + runtimetest.IndexOf(evts[admitted+1:], events.TypeUserMessage)
	require.Equal(t, []events.Type{events.TypeToolResult, events.TypeStepEnd, events.TypeInboxClaimed, events.TypeUserMessage, events.TypeRequestHeader},
		runtimetest.Types(evts[admitted-3:admitted+2]), "admitted after the running tool's result, before the next request:\n%s", runtimetest.Describe(evts))
	require.Equal(t, res.MessageID, evts[admitted].Body.(*events.UserMessage).Message.ID)

	replies := lateReplies(w.model.Last())
	require.Len(t, replies, 1)
	require.Equal(t, events.Reply{Kind: events.ReplyKind, Tool: holdover.ToolName, CallID: "call_1", Questions: dbQuestions, Answers: answers}, replies[0])
	require.Equal(t, "Switching to db=SQLite for call_1.", events.JoinText(runtimetest.Last[*events.AssistantMessage](t, evts).Content))

	view = w.projected("s1")
	require.Empty(t, view.Active)
	require.Len(t, view.Settled, 1)
	require.True(t, view.Settled[0].Late)
	require.Equal(t, answers, view.Settled[0].Answers)
	_, err = w.answer("s1", "call_1", answers...)
	require.NoError(t, err, "a settled call is not answerable, which is no error")
	w.fitsSchemas("s1")
}

// A queued late reply that is discarded before admission releases the
// call: the user can answer again, and that answer is the one admitted
// (D8, C4, §7).
func TestRuntimeDiscardedReplyCanBeAnsweredAgain(t *testing.T) {
	w := newAgentWorld(t, lateScript)
	w.start(w.ctx, "s1", "Set up the service.")
	w.working("s1")
	w.projected("s1")

	first, err := w.answer("s1", "call_1", holdover.Answer{ID: "db", Selected: []string{"Postgres"}})
	require.NoError(t, err)
	require.True(t, first.Accepted)
	w.AwaitCount("s1", events.TypeInboxSpliced, 2)
	require.NoError(t, runtime.Discard(w.ctx, w.env.Conn, "s1", first.MessageID, "the user changed their mind"))
	w.AwaitCount("s1", events.TypeInboxDiscarded, 1)

	var second holdover.AnswerResult
	require.Eventually(t, func() bool { // the reservation follows the log
		second, err = w.answer("s1", "call_1", holdover.Answer{ID: "db", Selected: []string{"SQLite"}})
		return err == nil
	}, agentPatience, 5*time.Millisecond, "the call stayed REPLY_QUEUED after the discard: %v", err)
	require.True(t, second.Accepted)
	w.AwaitCount("s1", events.TypeInboxSpliced, 3)

	w.clock.Advance(10 * time.Second)
	evts := w.AwaitCount("s1", events.TypeTurnEnd, 1)
	var admitted []string
	for _, e := range evts {
		if um, ok := e.Body.(*events.UserMessage); ok && um.Message.Source.IsQuestionReply() {
			admitted = append(admitted, um.Message.ID)
		}
	}
	require.Equal(t, []string{second.MessageID}, admitted)
	view := w.projected("s1")
	require.Equal(t, []holdover.Answer{{ID: "db", Selected: []string{"SQLite"}}}, view.Settled[0].Answers)
	w.fitsSchemas("s1")
}

// A child agent's question fails DELEGATED_CALLER; the child's model reads
// that as a tool error and reports the open question to the root (M9).
func TestRuntimeChildQuestionIsDelegated(t *testing.T) {
	w := newAgentWorld(t, `subagent Choose the database.
say The child said: {result}

child:
ask db "Which database?" options Postgres,SQLite timeout 1
say Open question for the user: {result}`)
	w.start(w.ctx, "s1", "Set up the service.")
	evts := w.AwaitCount("s1", events.TypeTurnEnd, 1)
	call := runtimetest.Last[*events.ToolCall](t, evts)
	child := w.Events(runtime.ChildSession("s1", call.CallID))
	refused := runtimetest.Last[*events.ToolResult](t, child)
	require.Equal(t, holdover.CodeDelegatedCaller, refused.Error.Code)
	text := events.JoinText(runtimetest.Last[*events.ToolResult](t, evts).Content)
	require.Contains(t, text, "Open question for the user: DELEGATED_CALLER:")
	require.Contains(t, text, "put the open question in your final result")
	require.Empty(t, w.projected("s1").Active)
	require.Empty(t, w.projected(runtime.ChildSession("s1", call.CallID)).Active)
}

// A run_code sub-call to ask_user_question that times out is recorded
// pending in its tool/ptc-dispatch, which makes it a continued question
// (D4); a late answer to the sub-call id is admitted and settles it.
func TestRuntimeRunCodeSubCallTakesALateAnswer(t *testing.T) {
	w := newAgentWorld(t, `code const r = tools.ask_user_question({questions: [{id: "db", question: "Which database?", options: [{label: "Postgres"}, {label: "SQLite"}]}], timeout: 1}); r.pending ? "asked; the answer comes later" : JSON.stringify(r)
work 2 steps of 10s
on late answer say Late answer {answers} for {callId}.`)
	w.start(w.ctx, "s1", "Set up the service.")
	w.working("s1")
	evts := w.Events("s1")
	dispatch := runtimetest.Last[*events.PTCDispatch](t, evts)
	require.Equal(t, "call_1/1", dispatch.CallID)
	require.Equal(t, "call_1", dispatch.ParentCallID)
	_, pending := holdover.ParsePending(events.JoinText(dispatch.Content))
	require.True(t, pending)
	require.Equal(t, "asked; the answer comes later", events.JoinText(runtimetest.Last[*events.ToolResult](t, evts).Content))
	view := w.projected("s1")
	require.Equal(t, []projection.Call{{CallID: "call_1/1", Status: projection.Continued, Questions: dbQuestions, ParentCallID: "call_1", Seq: evts[runtimetest.IndexOf(evts, events.TypePTCDispatch)].Seq}}, view.Active)

	answers := []holdover.Answer{{ID: "db", Selected: []string{"Postgres"}}}
	res, err := w.answer("s1", "call_1/1", answers...)
	require.NoError(t, err)
	require.True(t, res.Accepted)
	w.AwaitCount("s1", events.TypeInboxSpliced, 2)
	w.clock.Advance(10 * time.Second)
	evts = w.AwaitCount("s1", events.TypeTurnEnd, 1)
	require.Equal(t, "Late answer db=Postgres for call_1/1.", events.JoinText(runtimetest.Last[*events.AssistantMessage](t, evts).Content))
	view = w.projected("s1")
	require.Empty(t, view.Active)
	require.Equal(t, answers, view.Settled[0].Answers)
	w.fitsSchemas("s1")
}

// An answer for a Session whose runtime has stopped resumes it in the
// runtime pool (D7): the pool instance registers as the live root, reads
// the queued reply from the inbox and admits it; the model reads it.
func TestRuntimeAnswerResumesAStoppedSession(t *testing.T) {
	w := newAgentWorld(t, lateScript)
	first, stop := context.WithCancel(w.ctx)
	w.start(first, "s1", "Set up the service.")
	w.working("s1")
	w.projected("s1")
	stop() // a clean stop releases the live root, leaving its sleep without a result
	require.Eventually(t, func() bool {
		_, live, err := w.worker.Roots().Lookup(w.ctx, "s1")
		return err == nil && !live
	}, agentPatience, 5*time.Millisecond)

	_, err := w.runtime("pool-1").ServePool(w.ctx)
	require.NoError(t, err)
	res, err := w.answer("s1", "call_1", holdover.Answer{ID: "db", Selected: []string{"SQLite"}})
	require.NoError(t, err)
	require.True(t, res.Accepted)

	// The resumed agent goes on with the interrupted Turn; the reply waits
	// for the next step boundary, after the sleep it may have started.
	evts := w.Await("s1", "the reply spliced by the resumed agent", func(evts []events.Event) bool {
		return runtimetest.Count(evts, events.TypeInboxSpliced) == 2 && (runtimetest.Count(evts, events.TypeUserMessage) == 2 || sleeping(evts))
	})
	if runtimetest.Count(evts, events.TypeUserMessage) < 2 {
		w.working("s1")
		w.clock.Advance(10 * time.Second)
	}
	evts = w.Await("s1", "the reply admitted by the resumed agent", func(evts []events.Event) bool {
		return runtimetest.Count(evts, events.TypeUserMessage) == 2 && evts[len(evts)-1].Type == events.TypeTurnEnd
	})
	repaired := 0
	for _, e := range evts {
		if r, ok := e.Body.(*events.ToolResult); ok && r.Error != nil && r.Error.Code == holdover.CodeToolOutcomeUnknown {
			require.Equal(t, runtime.SleepTool, r.Name)
			repaired++
		}
	}
	require.Equal(t, 1, repaired, "the interrupted sleep was repaired")
	rec, live, err := w.worker.Roots().Lookup(w.ctx, "s1")
	require.NoError(t, err)
	require.True(t, live)
	require.Equal(t, "pool-1", rec.Instance)
	require.Len(t, lateReplies(w.model.Last()), 1)
	require.Equal(t, res.MessageID, runtimetest.Last[*events.UserMessage](t, evts).Message.ID)
	require.True(t, w.projected("s1").Settled[0].Late)
}
