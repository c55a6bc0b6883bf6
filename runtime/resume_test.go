package runtime_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/model"
	"github.com/holdover-dev/holdover/runtime/runtimetest"
)

// writer appends hand-made events to a Session log, the way a runtime
// that crashed would have left it.
type writer struct {
	h    *harness
	sid  string
	last uint64
}

func (w *writer) add(body events.Body) uint64 {
	w.h.t.Helper()
	seq, err := w.h.log.Append(w.h.ctx, w.sid, w.last, events.New(time.Now(), body))
	require.NoError(w.h.t, err)
	w.last = seq
	return seq
}

// queue publishes a message to the Session inbox and returns it with its
// inbox sequence.
func (w *writer) queue(id, text string) (events.Message, uint64) {
	w.h.t.Helper()
	msg := events.Message{ID: id, Role: "user", Content: events.Text(text), Source: events.Source{Kind: events.SourceUser}}
	seq, err := inbox.Publish(w.h.ctx, w.h.env.JS, w.sid, msg)
	require.NoError(w.h.t, err)
	return msg, seq
}

func timedHeader(t *testing.T, h *harness) *events.RequestHeader {
	t.Helper()
	tool, err := runtime.NewAskTool(timedConfig(), h.client)
	require.NoError(t, err)
	return &events.RequestHeader{Turn: "t1", Model: "scripted", Tools: []events.ToolSchema{tool.Schema()}}
}

var dbQuestion = json.RawMessage(`{"questions":[{"id":"db","question":"Which database?","options":[{"label":"a"},{"label":"b"}]}],"timeout":5}`)

// A tool call the log recorded without a result — the process died while
// it ran — gets the synthetic TOOL_OUTCOME_UNKNOWN result when the Session
// resumes. For a timed question that makes it continued, so it stays
// answerable (D3); the open Turn then goes on with the repaired result.
func TestResumeRepairsAnInterruptedToolCall(t *testing.T) {
	h := start(t, "ask db \"Which database?\" options a,b timeout 5\nsay After the repair.", timed)
	w := &writer{h: h, sid: "s1"}
	w.add(&events.TurnStart{Turn: "t1"})
	w.add(&events.UserMessage{Turn: "t1", Message: events.Message{ID: "m1", Role: "user", Content: events.Text("go"), Source: events.Source{Kind: events.SourceUser}}})
	w.add(timedHeader(t, h))
	w.add(&events.ToolCall{Turn: "t1", CallID: "call_1", Name: holdover.ToolName, Arguments: dbQuestion})
	require.Equal(t, projection.Open, projection.Fold(h.Events("s1")).Active[0].Status)

	a, err := h.rt.Open(h.ctx, "s1")
	require.NoError(t, err)
	evts := h.Events("s1")
	repaired := evts[len(evts)-1].Body.(*events.ToolResult)
	require.Equal(t, &events.ToolResult{
		Turn: "t1", CallID: "call_1", Name: holdover.ToolName,
		Content: events.Text(runtime.InterruptedText), IsError: true,
		Error: &events.ToolError{Code: holdover.CodeToolOutcomeUnknown},
	}, repaired)
	view := projection.Fold(evts)
	require.Equal(t, projection.Continued, view.Active[0].Status, "the interrupted question is answerable")

	h.runAgent(a)
	evts = h.AwaitCount("s1", events.TypeTurnEnd, 1)
	require.Equal(t, 1, runtimetest.Count(evts, events.TypeTurnStart), "the interrupted Turn goes on")
	req := h.model.Last()
	require.Equal(t, []model.Role{model.User, model.Assistant, model.Tool}, roles(req))
	require.Equal(t, runtime.InterruptedText, req.Messages[2].Text)
	require.True(t, req.Messages[2].IsError)
	require.Equal(t, "After the repair.", events.JoinText(runtimetest.Last[*events.AssistantMessage](t, evts).Content),
		"the script continues where the log stopped")
}

// Inbox messages spliced but neither admitted nor discarded are restored
// from the log and claimed again, in splice order (D8); admitted and
// discarded ones are not admitted again, and the inbox is read on after the
// last spliced sequence, so nothing is spliced twice.
func TestResumeRestoresAndReclaimsQueuedMessages(t *testing.T) {
	h := start(t, "say Noted.\nsay Noted again.")
	w := &writer{h: h, sid: "s1"}
	admittedMsg, s1 := w.queue("admitted", "already read")
	claimedMsg, s2 := w.queue("claimed", "claimed before the crash")
	dropped, s3 := w.queue("dropped", "discarded")
	splicedMsg, s4 := w.queue("spliced", "spliced before the crash")

	w.add(&events.InboxSpliced{Message: admittedMsg, InboxSeq: s1})
	w.add(&events.TurnStart{Turn: "t1"})
	w.add(&events.InboxClaimed{Turn: "t1", MessageID: "admitted"})
	w.add(&events.UserMessage{Turn: "t1", Message: admittedMsg})
	w.add(&events.RequestHeader{Turn: "t1", Model: "scripted"})
	w.add(&events.AssistantMessage{Turn: "t1", ID: "a1", Content: events.Text("Noted.")})
	w.add(&events.StepEnd{Turn: "t1", Step: 1})
	w.add(&events.InboxSpliced{Turn: "t1", Message: claimedMsg, InboxSeq: s2})
	w.add(&events.InboxClaimed{Turn: "t1", MessageID: "claimed"})
	w.add(&events.InboxSpliced{Turn: "t1", Message: dropped, InboxSeq: s3})
	w.add(&events.InboxDiscarded{Turn: "t1", MessageID: "dropped"})
	w.add(&events.InboxSpliced{Turn: "t1", Message: splicedMsg, InboxSeq: s4})
	before := len(h.Events("s1"))

	h.run("s1")
	evts := h.Await("s1", "the restored messages admitted before the next request", func(evts []events.Event) bool {
		return runtimetest.Count(evts, events.TypeRequestHeader) == 2
	})
	require.Equal(t, []events.Type{events.TypeInboxClaimed, events.TypeUserMessage, events.TypeInboxClaimed, events.TypeUserMessage, events.TypeRequestHeader},
		runtimetest.Types(evts[before:before+5]), "the restored messages are claimed again and admitted in splice order:\n%s", runtimetest.Describe(evts))
	require.Equal(t, "claimed", evts[before].Body.(*events.InboxClaimed).MessageID)
	require.Equal(t, "spliced", evts[before+2].Body.(*events.InboxClaimed).MessageID)

	fresh := h.steer("s1", "after the restart")
	evts = h.Await("s1", "the new message admitted and answered", func(evts []events.Event) bool {
		return runtimetest.Count(evts, events.TypeUserMessage) == 4 && evts[len(evts)-1].Type == events.TypeTurnEnd
	})
	var spliced []string
	for _, e := range evts[before:] {
		if b, ok := e.Body.(*events.InboxSpliced); ok {
			spliced = append(spliced, b.Message.ID)
		}
	}
	require.Equal(t, []string{fresh}, spliced, "reading resumed after the last spliced message")
	require.Equal(t, []string{"already read", "claimed before the crash", "spliced before the crash", "after the restart"}, texts(h.model.Last(), model.User))
	require.Equal(t, 1, runtimetest.Count(evts, events.TypeInboxDiscarded), "the discarded message stays discarded")
}

// A Session whose log ends in a finished step with no tool calls is closed
// on resume: its open Turn ends instead of asking the model again.
func TestResumeClosesAFinishedTurn(t *testing.T) {
	h := start(t, "say Hello.")
	w := &writer{h: h, sid: "s1"}
	w.add(&events.TurnStart{Turn: "t1"})
	w.add(&events.UserMessage{Turn: "t1", Message: events.Message{ID: "m1", Role: "user", Content: events.Text("hi"), Source: events.Source{Kind: events.SourceUser}}})
	w.add(&events.RequestHeader{Turn: "t1", Model: "scripted"})
	w.add(&events.AssistantMessage{Turn: "t1", ID: "a1", Content: events.Text("Hello.")})
	w.add(&events.StepEnd{Turn: "t1", Step: 1})

	h.run("s1")
	evts := h.AwaitCount("s1", events.TypeTurnEnd, 1)
	require.Equal(t, events.TypeTurnEnd, evts[5].Type)
	require.Zero(t, h.model.Count(), "no model request was made")
}
