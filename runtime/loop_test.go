package runtime_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/model"
	"github.com/holdover-dev/holdover/runtime/runtimetest"
)

// A Turn records, in order: the splice of the message that starts it, the
// Turn, its claim and admission, then per step the request header, the
// model's text, each tool call before it runs and its result after, and
// the step's end (D8, D2).
func TestTurnRecordsEveryStepInOrder(t *testing.T) {
	h := start(t, "work 1 steps\nsay Done.", timed)
	h.run("s1")
	id := h.steer("s1", "hello")
	evts := h.AwaitCount("s1", events.TypeTurnEnd, 1)

	require.Equal(t, []events.Type{
		events.TypeInboxSpliced, events.TypeTurnStart, events.TypeInboxClaimed, events.TypeUserMessage,
		events.TypeRequestHeader, events.TypeToolCall, events.TypeToolResult, events.TypeStepEnd,
		events.TypeRequestHeader, events.TypeAssistantMessage, events.TypeStepEnd,
		events.TypeTurnEnd,
	}, runtimetest.Types(evts), runtimetest.Describe(evts))

	spliced := evts[0].Body.(*events.InboxSpliced)
	require.Equal(t, id, spliced.Message.ID)
	require.NotZero(t, spliced.InboxSeq)
	turn := evts[1].Body.(*events.TurnStart).Turn
	require.Equal(t, id, evts[2].Body.(*events.InboxClaimed).MessageID)
	admitted := evts[3].Body.(*events.UserMessage)
	require.Equal(t, spliced.Message, admitted.Message, "admission keeps the message id and source")
	require.Equal(t, turn, admitted.Turn)

	header := evts[4].Body.(*events.RequestHeader)
	require.Equal(t, "scripted", header.Model)
	require.Equal(t, []string{holdover.ToolName, runtime.RunCodeTool, runtime.SubagentTool, runtime.SleepTool}, schemaNames(header.Tools))
	require.Contains(t, string(header.Tools[0].InputSchema), `"timeout"`, "the header records the timed schema the model was offered")
	require.True(t, projection.Fold(evts).Timed)

	call := evts[5].Body.(*events.ToolCall)
	result := evts[6].Body.(*events.ToolResult)
	require.Equal(t, runtime.SleepTool, call.Name)
	require.Equal(t, call.CallID, result.CallID)
	require.Equal(t, "slept 0 ms", events.JoinText(result.Content))
	require.Equal(t, 1, evts[7].Body.(*events.StepEnd).Step)
	require.Equal(t, "Done.", events.JoinText(evts[9].Body.(*events.AssistantMessage).Content))
	require.Equal(t, 2, evts[10].Body.(*events.StepEnd).Step)
	require.Equal(t, "done", evts[11].Body.(*events.TurnEnd).Reason)

	// The model's second request held the first step's call and result.
	req := h.model.Last()
	require.Equal(t, []model.Role{model.User, model.Assistant, model.Tool}, roles(req))
	require.Equal(t, "slept 0 ms", req.Messages[2].Text)
	require.Equal(t, call.CallID, req.Messages[1].ToolCalls[0].ID)
}

// A message that arrives while the agent is idle starts a new Turn, and
// the model reads the whole conversation so far.
func TestIdleAgentStartsANewTurnForEachMessage(t *testing.T) {
	h := start(t, "say One.\nsay Two.")
	h.run("s1")
	h.steer("s1", "first")
	h.AwaitCount("s1", events.TypeTurnEnd, 1)
	h.steer("s1", "second")
	evts := h.AwaitCount("s1", events.TypeTurnEnd, 2)
	require.Equal(t, 2, runtimetest.Count(evts, events.TypeTurnStart))
	req := h.model.Last()
	require.Equal(t, []string{"first", "second"}, texts(req, model.User))
	require.Equal(t, []string{"One."}, texts(req, model.Assistant))
	require.Equal(t, "Two.", events.JoinText(runtimetest.Last[*events.AssistantMessage](t, evts).Content))
	require.Equal(t, []string{holdover.ToolName, runtime.RunCodeTool, runtime.SubagentTool, runtime.SleepTool}, toolNames(req))
	require.False(t, projection.Fold(evts).Timed, "legacy mode records the legacy schema (M1)")
}

// A message steered while a tool runs is spliced at once but waits for the
// step boundary: it is claimed and admitted only after the running tool has
// finished, before the next model request (D8).
func TestSteeredMessageWaitsForTheStepBoundary(t *testing.T) {
	h := start(t, "work 1 of 10s\nsay Done.")
	h.run("s1")
	h.steer("s1", "start")
	h.AwaitCount("s1", events.TypeToolCall, 1)
	require.NoError(t, h.clock.BlockUntilContext(h.ctx, 1)) // the sleep is running

	late := h.steer("s1", "also this")
	evts := h.AwaitCount("s1", events.TypeInboxSpliced, 2)
	require.Equal(t, events.TypeToolCall, evts[len(evts)-2].Type, "spliced while the tool runs")
	require.Equal(t, 1, runtimetest.Count(evts, events.TypeUserMessage), "not admitted while the tool runs")

	h.clock.Advance(10 * time.Second)
	evts = h.AwaitCount("s1", events.TypeTurnEnd, 1)
	i := runtimetest.IndexOf(evts, events.TypeStepEnd)
	require.Equal(t, []events.Type{events.TypeInboxClaimed, events.TypeUserMessage, events.TypeRequestHeader}, runtimetest.Types(evts[i+1:i+4]),
		"claimed and admitted after the step ended, before the next request:\n%s", runtimetest.Describe(evts))
	require.Equal(t, late, evts[i+2].Body.(*events.UserMessage).Message.ID)
	require.Equal(t, []string{"start", "also this"}, texts(h.model.Last(), model.User))
	require.Equal(t, 1, runtimetest.Count(evts, events.TypeTurnStart), "the message joined the running Turn")
}

// A message that arrives while the last step's model answer is being
// recorded keeps the Turn going instead of being dropped.
func TestMessageAfterTheLastStepJoinsTheTurn(t *testing.T) {
	h := start(t, "say First.\nsay Second.")
	h.model.Hold = make(chan struct{})
	h.run("s1")
	h.steer("s1", "one")
	h.AwaitCount("s1", events.TypeRequestHeader, 1)
	h.steer("s1", "two")
	h.AwaitCount("s1", events.TypeInboxSpliced, 2)
	close(h.model.Hold)
	evts := h.AwaitCount("s1", events.TypeTurnEnd, 1)
	require.Equal(t, 1, runtimetest.Count(evts, events.TypeTurnStart))
	require.Equal(t, 2, runtimetest.Count(evts, events.TypeRequestHeader))
	require.Equal(t, []string{"one", "two"}, texts(h.model.Last(), model.User))
}

// An unknown tool and bad arguments reach the model as tool errors with a
// stable code; the agent goes on.
func TestToolMistakesAreToolErrors(t *testing.T) {
	h := start(t, "call no_such_tool {}\ncall sleep {\"ms\": -5}\nsay ok")
	h.run("s1")
	h.steer("s1", "go")
	evts := h.AwaitCount("s1", events.TypeTurnEnd, 1)
	var results []*events.ToolResult
	for _, e := range evts {
		if r, ok := e.Body.(*events.ToolResult); ok {
			results = append(results, r)
		}
	}
	require.Len(t, results, 2)
	for _, r := range results {
		require.True(t, r.IsError)
		require.Equal(t, holdover.CodeBadRequest, r.Error.Code)
	}
	require.Contains(t, events.JoinText(results[0].Content), `there is no tool named "no_such_tool"`)
	require.Equal(t, "ok", events.JoinText(runtimetest.Last[*events.AssistantMessage](t, evts).Content))
}

func schemaNames(tools []events.ToolSchema) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

func roles(req model.Request) []model.Role {
	out := make([]model.Role, len(req.Messages))
	for i, m := range req.Messages {
		out[i] = m.Role
	}
	return out
}
