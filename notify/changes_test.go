package notify

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/steer/steertest"
)

var (
	t0        = time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	questions = steertest.Questions("db", "region")
)

// log builds events of one Session with consecutive seqs from 1.
type log struct{ evts []events.Event }

func (l *log) add(b events.Body) events.Event {
	e := events.New(t0.Add(time.Duration(len(l.evts))*time.Second), b)
	e.Seq = uint64(len(l.evts) + 1)
	l.evts = append(l.evts, e)
	return e
}

func (l *log) header(schema string) events.Event {
	return l.add(&events.RequestHeader{Tools: []events.ToolSchema{{Name: holdover.ToolName, InputSchema: json.RawMessage(schema)}}})
}

func (l *log) ask(id string, timeout *int64) events.Event {
	args, _ := json.Marshal(holdover.ToolArgs{Questions: questions, Timeout: timeout})
	return l.add(&events.ToolCall{CallID: id, Name: holdover.ToolName, Arguments: args})
}

func (l *log) result(id, text string) events.Event {
	return l.add(&events.ToolResult{CallID: id, Name: holdover.ToolName, Content: events.Text(text)})
}

func (l *log) pending(id string) events.Event {
	text, _ := json.Marshal(holdover.Pending{Pending: true, CallID: id, Message: "No answer batch arrived before the timeout."})
	return l.result(id, string(text))
}

func seconds(n int64) *int64 { return &n }

// kinds folds every event of l from the empty View with step and
// returns, per event, the transitions it made as "<kind> <call>".
func kinds(l *log) [][]string {
	v := projection.New()
	out := make([][]string, len(l.evts))
	for i, e := range l.evts {
		for _, c := range step(&v, e) {
			out[i] = append(out[i], string(c.kind)+" "+c.call.CallID)
		}
	}
	return out
}

// A timed call is a question when the fold opens it and goes pending
// when its pending result continues it; nothing else in its life is a
// transition (D3).
func TestStepQuestionThenPending(t *testing.T) {
	var l log
	l.header(steertest.TimedSchema)
	l.ask("call_1", seconds(30))
	l.pending("call_1")
	l.add(&events.AssistantMessage{ID: "m1", Content: events.Text("Going on meanwhile.")})
	l.add(&events.UserMessage{Message: events.Message{ID: "r1", Role: "user", Content: events.Text("late"), Source: events.QuestionReply("call_1")}})
	require.Equal(t, [][]string{nil, {"question call_1"}, {"pending call_1"}, nil, nil}, kinds(&l))
}

// A call answered in time settles from its result: a question and no
// pending. A legacy call is never tracked (M1), so it notifies nothing.
func TestStepAnsweredInTimeAndLegacy(t *testing.T) {
	var l log
	l.header(steertest.TimedSchema)
	l.ask("call_1", seconds(30))
	batch, _ := json.Marshal(holdover.Batch{Answers: steertest.Choose(questions)})
	l.result("call_1", string(batch))
	l.header(steertest.LegacySchema)
	l.ask("call_2", nil)
	l.pending("call_2")
	require.Equal(t, [][]string{nil, {"question call_1"}, nil, nil, nil, nil}, kinds(&l))
}

// A call repaired as TOOL_OUTCOME_UNKNOWN after a restart is continued,
// so it went pending; a run_code sub-call enters the View already
// continued, so its only transition is pending (D3, D4).
func TestStepRepairAndDispatchGoPending(t *testing.T) {
	var l log
	l.header(steertest.TimedSchema)
	l.ask("call_1", nil)
	l.add(&events.ToolResult{CallID: "call_1", Name: holdover.ToolName, IsError: true, Content: events.Text("interrupted"),
		Error: &events.ToolError{Code: holdover.CodeToolOutcomeUnknown}})
	args, _ := json.Marshal(holdover.ToolArgs{Questions: questions})
	text, _ := json.Marshal(holdover.Pending{Pending: true, CallID: "sub_1", Message: "pending"})
	l.add(&events.PTCDispatch{ParentCallID: "code_1", CallID: "sub_1", Name: holdover.ToolName, Arguments: args, Content: events.Text(string(text))})
	require.Equal(t, [][]string{nil, {"question call_1"}, {"pending call_1"}, {"pending sub_1"}}, kinds(&l))
}

// A call id asked again is tracked anew by the fold (it replaces the old
// entry), so it is a new question; an event folded already (a
// redelivery) changes nothing and notifies nothing.
func TestStepAskedAgainAndRedelivered(t *testing.T) {
	var l log
	l.header(steertest.TimedSchema)
	l.ask("call_1", seconds(30))
	l.pending("call_1")
	again := l.ask("call_1", seconds(30))
	require.Equal(t, [][]string{nil, {"question call_1"}, {"pending call_1"}, {"question call_1"}}, kinds(&l))
	first, err := Key("s1", "call_1", l.evts[1].Seq, KindQuestion)
	require.NoError(t, err)
	second, err := Key("s1", "call_1", again.Seq, KindQuestion)
	require.NoError(t, err)
	require.NotEqual(t, first, second, "a receiver deduping by key still sees the question asked again")

	v := projection.Fold(l.evts)
	require.Empty(t, step(&v, again), "a redelivered event is at or before LastSeq")
}

// A question carries its deadline, the call's recorded time plus the
// timeout it names; a blocking call and one that names no timeout carry
// none (M2, M3). A pending notification never does.
func TestNotificationDeadline(t *testing.T) {
	var l log
	l.header(steertest.TimedSchema)
	timed := l.ask("call_1", seconds(30))
	blocking := l.ask("call_2", seconds(-1))
	unnamed := l.ask("call_3", nil)
	pending := l.pending("call_1")
	v := projection.New()
	link := cardLink(mustURL(t, "https://holdover.example/app/?theme=dark"), "s1")
	var got []Notification
	for _, e := range l.evts {
		for _, c := range step(&v, e) {
			n, err := notification("s1", e, c, link)
			require.NoError(t, err)
			got = append(got, n)
		}
	}
	require.Len(t, got, 4)
	due := timed.At.Add(30 * time.Second)
	require.Equal(t, Notification{Kind: KindQuestion, Key: "s1.call_1.2.question", Session: "s1", CallID: "call_1", CallSeq: 2, Questions: questions,
		Deadline: &due, Seq: timed.Seq, At: timed.At, Link: "https://holdover.example/app/?session=s1&theme=dark#/s/s1"}, got[0])
	require.Nil(t, got[1].Deadline)
	require.True(t, got[1].Blocking)
	require.Equal(t, blocking.Seq, got[1].Seq)
	require.Nil(t, got[2].Deadline, "the runtime's default timeout is not in the log")
	require.Equal(t, unnamed.Seq, got[2].Seq)
	require.Equal(t, Notification{Kind: KindPending, Key: "s1.call_1.2.pending", Session: "s1", CallID: "call_1", CallSeq: 2, Questions: questions,
		Seq: pending.Seq, At: pending.At, Link: got[0].Link}, got[3])
}

// The key names the Session, the call as the fold tracks it (its id and
// the seq that opened it) and the kind; a call id that is not a plain
// token is encoded, never split.
func TestKey(t *testing.T) {
	k, err := Key("s1", "call.1", 7, KindPending)
	require.NoError(t, err)
	require.Equal(t, "s1.=Y2FsbC4x.7.pending", k)
	_, err = Key("s.1", "call_1", 7, KindQuestion)
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
}
