package schemas_test

import (
	"reflect"

	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/schemas"
	"github.com/holdover-dev/holdover/userquestions"
)

// fullShapes has, for each schema of shapes but the envelope, a value of
// its Go type with every field set, as the Go side writes it.
func fullShapes() map[string]any {
	questions := []holdover.Question{{
		ID: "db", Question: "Which database?", Header: "Database", MultiSelect: true, Detail: "The plan.",
		Options: []holdover.Option{{Label: "PostgreSQL (Recommended)", Description: "the usual"}},
	}}
	answers := []holdover.Answer{{ID: "db", Selected: []string{"PostgreSQL (Recommended)"}, Custom: "and a cache"}}
	agent := &holdover.AgentRef{Instance: "runtime-a", Epoch: 2, Owner: "parent"}
	intent := &holdover.Intent{Kind: holdover.IntentPlanReview, Approve: "PostgreSQL (Recommended)"}
	wireErr := &holdover.Error{Code: holdover.CodeNotFound, Message: "no such message"}
	deadline := time.Date(2026, 12, 3, 10, 1, 0, 0, time.UTC)
	request := userquestions.WaterfallRequest{
		RequestID: "r1", Session: "s1", CallID: "call_1", Questions: questions, Intent: intent,
		Wait: &userquestions.WaitRef{CallID: "call_1", Timed: true}, Deadline: &deadline,
		Owner: "lease~worker~w1", Reply: "_INBOX.w1.r1",
	}
	queued := &projection.Queued{MessageID: "reply-1", Answers: answers, By: "ana", Seq: 9}
	view := projection.View{
		Active: []projection.Call{{CallID: "call_2", Status: projection.Continued, Questions: questions,
			ParentCallID: "code_1", Blocking: true, Queued: queued, Released: queued, Seq: 6}},
		Settled: []projection.Settled{{CallID: "call_1", Questions: questions, Answers: answers, Late: true, By: "ana", Seq: 11}},
		Timed:   true, LastSeq: 11,
	}
	reply, err := events.NewReply("reply-1", "call_2", questions, answers)
	if err != nil {
		panic(err)
	}
	reply.Source.User = "ana"
	remaining := int64(59000)
	shapes := map[string]any{
		"requests/ask.json":       holdover.AskRequest{Session: "s1", CallID: "call_1", Agent: agent, Questions: questions, Intent: intent},
		"requests/ask-timed.json": holdover.AskTimedRequest{Session: "s1", CallID: "call_1", Agent: agent, Questions: questions, TimeoutMs: 60000},
		"requests/answer.json":    holdover.AnswerRequest{Session: "s1", CallID: "call_1", Answers: answers},
		"requests/view.json":      userquestions.ViewRequest{Session: "s1"},
		"requests/inflight.json":  userquestions.InflightRequest{Session: "s1"},
		"requests/resume.json":    liveroot.ResumeRequest{Session: "s1"},
		"requests/discard.json":   runtime.DiscardRequest{Session: "s1", MessageID: "reply-1", Reason: "taken back"},
		"replies/ask.json":        holdover.Batch{Answers: answers},
		"replies/ask-timed.json":  holdover.Outcome{Answers: answers, Pending: true},
		"replies/answer.json":     holdover.AnswerResult{Accepted: true, MessageID: "reply-1", Reason: wireErr},
		"replies/view.json":       view,
		"replies/inflight.json":   userquestions.InflightResult{Requests: []userquestions.WaterfallRequest{request}},
		"replies/error.json":      *wireErr,
		"replies/resume.json":     liveroot.ResumeReply{Instance: "runtime-a", Error: wireErr},
		"replies/discard.json":    runtime.DiscardReply{Error: wireErr},
		"frames/accepted.json":    userquestions.Accepted{Owner: "lease~worker~w1", RequestID: "r1", ReleaseBoundMs: 2000},
		"frames/claim.json":       userquestions.ClaimFrame{RemainingMs: &remaining, Closed: true},
		"waterfall/request.json":  request,
		"waterfall/outcome.json":  userquestions.WaterfallOutcome{Kind: userquestions.OutcomeReject, Answers: answers, Error: wireErr},
		"waterfall/cancel.json":   userquestions.CancelNotice{RequestID: "r1", CallID: "call_1", Reason: userquestions.ReasonExpired},
		"kv/live-root.json":       liveroot.Record{Instance: "runtime-a", Epoch: 2, Owner: "parent", Since: deadline},
		"kv/user-questions.json":  view,
		"inbox/message.json":      reply,
		"inbox/reply-text.json":   events.Reply{Kind: events.ReplyKind, Tool: holdover.ToolName, CallID: "call_2", Questions: questions, Answers: answers},
		"tool/arguments.json":     holdover.ToolArgs{Questions: questions, Timeout: new(int64(-1)), Intent: intent},
		"tool/answers.json":       holdover.Batch{Answers: answers},
		"tool/pending.json":       holdover.Pending{Pending: true, CallID: "call_2", Message: "No answer batch arrived before the timeout."},
	}
	for _, f := range fullFrames() {
		shapes[frameSpec(f).Schema()] = f
	}
	return shapes
}

// fullFrames has a frame of every type of the WebSocket protocol, each
// field set, as Go writes it: compact JSON where a field holds JSON, so
// that it decodes back equal.
func fullFrames() []clientwire.Frame {
	questions := []holdover.Question{{ID: "db", Question: "Which database?", Options: []holdover.Option{{Label: "SQLite"}}}}
	deadline := time.Date(2026, 12, 3, 10, 1, 0, 0, time.UTC)
	request, err := json.Marshal(userquestions.WaterfallRequest{RequestID: "r1", Session: "s1", CallID: "call_1", Questions: questions,
		Wait: &userquestions.WaitRef{CallID: "call_1", Timed: true}, Deadline: &deadline, Owner: "lease~worker~w1"})
	if err != nil {
		panic(err)
	}
	view, err := json.Marshal(projection.View{Active: []projection.Call{{CallID: "call_1", Status: projection.Open, Questions: questions, Seq: 4}}, Timed: true, LastSeq: 4})
	if err != nil {
		panic(err)
	}
	batch := json.RawMessage(`{"answers":[{"id":"db","selected":["SQLite"]}]}`)
	wireErr := &holdover.Error{Code: holdover.CodeAskTimedOut, Message: "the countdown ran out"}
	return []clientwire.Frame{
		clientwire.HelloFrame{Type: clientwire.TypeHello, Protocol: clientwire.ProtocolVersion, Client: "holdover-web", Token: "t0ken"},
		clientwire.WatchFrame{Type: clientwire.TypeWatch, ID: "w1", Session: "s1", FromSeq: 5},
		clientwire.UnwatchFrame{Type: clientwire.TypeUnwatch, ID: "w1"},
		clientwire.SettleFrame{Type: clientwire.TypeSettle, ID: "r1", Value: batch},
		clientwire.RejectFrame{Type: clientwire.TypeReject, ID: "r1", Error: wireErr},
		clientwire.DelegateFrame{Type: clientwire.TypeDelegate, ID: "r1"},
		clientwire.OpenFrame{Type: clientwire.TypeOpen, ID: "s2", Method: clientwire.MethodAttachWait, Params: json.RawMessage(`{"session":"s1","callId":"call_1"}`)},
		clientwire.CloseFrame{Type: clientwire.TypeClose, ID: "s2"},
		clientwire.CallFrame{Type: clientwire.TypeCall, ID: "c3", Method: clientwire.MethodAnswer, Params: json.RawMessage(`{"session":"s1","callId":"call_1","answers":[]}`)},
		clientwire.InboxFrame{Type: clientwire.TypeInbox, ID: "i4"},

		clientwire.WelcomeFrame{Type: clientwire.TypeWelcome, Protocol: clientwire.ProtocolVersion, ClientID: "k7Qx2", User: "ana", Sessions: []string{"s1"}},
		clientwire.EventsFrame{Type: clientwire.TypeEvents, ID: "w1", Session: "s1", Events: []clientwire.SessionEvent{
			{Seq: 7, Type: "turn/start", At: deadline, Data: json.RawMessage(`{"turn":"t1"}`)}}},
		clientwire.ViewFrame{Type: clientwire.TypeView, ID: "w1", Session: "s1", View: view},
		clientwire.ReadyFrame{Type: clientwire.TypeReady, ID: "w1", Session: "s1"},
		clientwire.SummaryFrame{Type: clientwire.TypeSummary, ID: "i4", Sessions: []clientwire.SessionSummary{{
			Session: "s1", Active: []json.RawMessage{json.RawMessage(`{"callId":"call_1","status":"open","questions":[{"id":"db","question":"Which database?"}],"seq":4}`)},
			Settled: 2, LastSeq: 9, Deadlines: map[string]time.Time{"call_1": deadline}}}},
		clientwire.RequestFrame{Type: clientwire.TypeRequest, ID: "r1", Session: "s1", Event: clientwire.QuestionRequestEvent, Payload: request},
		clientwire.CancelFrame{Type: clientwire.TypeCancel, ID: "r1", Session: "s1", Reason: userquestions.ReasonExpired},
		clientwire.StreamFrame{Type: clientwire.TypeFrame, ID: "s2", Data: json.RawMessage(`{"remainingMs":58734}`)},
		clientwire.ClosedFrame{Type: clientwire.TypeClose, ID: "s2", Error: &holdover.Error{Code: holdover.CodeInternal, Message: "claim consumer lost"}},
		clientwire.ResultFrame{Type: clientwire.TypeResult, ID: "c3", Result: json.RawMessage(`{"accepted":true,"messageId":"m9"}`)},
		clientwire.ErrorFrame{Type: clientwire.TypeError, ID: "c3", Code: holdover.CodeReplyQueued, Message: "a reply is already queued"},
	}
}

// frameSpec is the catalog's spec of frame f.
func frameSpec(f clientwire.Frame) clientwire.Spec {
	specs := clientwire.GatewayFrames()
	if _, ok := f.(clientwire.ClientFrame); ok {
		specs = clientwire.ClientFrames()
	}
	for _, s := range specs {
		if s.Type == f.FrameType() {
			return s
		}
	}
	panic("no spec of the " + f.FrameType() + " frame")
}

// What Go writes fits the schema of its shape, with every field set (so a
// field added to a type must be added to its example too) and with every
// field at its zero value where Go writes it anyway.
func TestWhatGoWritesFitsItsSchema(t *testing.T) {
	full := fullShapes()
	for _, s := range shapes[1:] { // the envelope is covered by the event tests
		t.Run(s.file, func(t *testing.T) {
			v, ok := full[s.file]
			require.True(t, ok, "fullShapes has no example of %s", s.file)
			assertAllSet(t, reflect.ValueOf(v), s.file)
			data, err := json.Marshal(v)
			require.NoError(t, err)
			problems, err := schemas.Validate(s.file, data)
			require.NoError(t, err)
			assert.Empty(t, problems, "%s", data)
		})
	}
}

// Holdover's own zero values and edge cases fit too: an empty View, an
// unanswered skip, a pending outcome, a released live root, a claim's
// frame without deadline.
func TestGoEdgeCasesFitTheirSchemas(t *testing.T) {
	minusOne := int64(-1)
	for file, v := range map[string]any{
		"kv/user-questions.json": projection.New(),
		"replies/ask.json":       holdover.Batch{},
		"replies/ask-timed.json": holdover.Outcome{Pending: true},
		"kv/live-root.json":      liveroot.Record{Epoch: 3, Since: time.Now().UTC()},
		"frames/claim.json":      userquestions.ClaimFrame{RemainingMs: &minusOne},
		"replies/discard.json":   runtime.DiscardReply{},
		"requests/answer.json":   holdover.AnswerRequest{Session: "s1", CallID: "c", Answers: []holdover.Answer{{ID: "q"}}},
	} {
		data, err := json.Marshal(v)
		require.NoError(t, err)
		problems, err := schemas.Validate(file, data)
		require.NoError(t, err)
		assert.Empty(t, problems, "%s: %s", file, data)
	}
}
