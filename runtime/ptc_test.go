package runtime_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/runtimetest"
)

// Each call a run_code program makes is recorded as tool/ptc-dispatch with
// its parent call, its own id, arguments and outcome, between the parent's
// tool/call and tool/result. run_code cannot call itself. A pending ask_user_question sub-call enters
// the projection as continued (D4).
func TestRunCodeRecordsEachSubCall(t *testing.T) {
	h := start(t, `code const r = tools.ask_user_question({questions: [{id: "db", question: "Which database?"}], timeout: 5}); console.log("pending", r.pending); tools.sleep({ms: 0}); try { callTool("run_code", {code: "1"}) } catch (e) { console.log(e.name) } "finished"
say Done.`, timed)
	h.run("s1")
	h.steer("s1", "go")
	h.AwaitCount("s1", events.TypeToolCall, 1)
	require.NoError(t, h.waits.BlockUntilContext(h.ctx, 1)) // the question's Host deadline is running
	h.waits.Advance(5 * time.Second)
	evts := h.AwaitCount("s1", events.TypeTurnEnd, 1)

	i := runtimetest.IndexOf(evts, events.TypeToolCall)
	require.Equal(t, []events.Type{events.TypeToolCall, events.TypePTCDispatch, events.TypePTCDispatch, events.TypeToolResult},
		runtimetest.Types(evts[i:i+4]), "run_code cannot call itself, so that call reaches no tool:\n%s", runtimetest.Describe(evts))
	parent := evts[i].Body.(*events.ToolCall)
	require.Equal(t, runtime.RunCodeTool, parent.Name)

	ask := evts[i+1].Body.(*events.PTCDispatch)
	require.Equal(t, parent.CallID, ask.ParentCallID)
	require.Equal(t, parent.CallID+"/1", ask.CallID)
	require.Equal(t, holdover.ToolName, ask.Name)
	require.JSONEq(t, `{"questions":[{"id":"db","question":"Which database?"}],"timeout":5}`, string(ask.Arguments))
	pending, ok := holdover.ParsePending(events.JoinText(ask.Content))
	require.True(t, ok, "the sub-call's result is the pending object")
	require.Equal(t, ask.CallID, pending.CallID)

	sleep := evts[i+2].Body.(*events.PTCDispatch)
	require.Equal(t, parent.CallID+"/2", sleep.CallID)
	require.Equal(t, "slept 0 ms", events.JoinText(sleep.Content))
	result := evts[i+3].Body.(*events.ToolResult)
	require.False(t, result.IsError)
	require.Equal(t, "pending true\nTypeError\nfinished", events.JoinText(result.Content))

	view := projection.Fold(evts)
	require.Len(t, view.Active, 1)
	require.Equal(t, projection.Call{
		CallID: ask.CallID, Status: projection.Continued, ParentCallID: parent.CallID, Seq: evts[i+1].Seq,
		Questions: []holdover.Question{{ID: "db", Question: "Which database?"}},
	}, view.Active[0])
}

// A program that fails reaches the model as a tool error with what it
// printed before failing.
func TestRunCodeFailureIsAToolError(t *testing.T) {
	h := start(t, `code console.log("step 1"); throw new Error("no config file")
say Done.`)
	h.run("s1")
	h.steer("s1", "go")
	evts := h.AwaitCount("s1", events.TypeTurnEnd, 1)
	r := runtimetest.Last[*events.ToolResult](t, evts)
	require.True(t, r.IsError)
	require.Equal(t, holdover.CodeBadRequest, r.Error.Code)
	require.Equal(t, "step 1\nBAD_REQUEST: run_code: Error: no config file", events.JoinText(r.Content))
}

// A child agent runs in a Session of its own, registered as owned by the
// root: its question fails DELEGATED_CALLER and the child's model reads
// that message as a tool error, then reports the open question in its
// final message, which the root gets as the subagent result (M9).
func TestChildQuestionFailsDelegatedCaller(t *testing.T) {
	h := start(t, `subagent Pick a database for the service.
say {result}

child:
ask db "Which database?" options a,b timeout 5
say I could not ask: {result}`, timed)
	h.run("root")
	h.steer("root", "go")
	evts := h.AwaitCount("root", events.TypeTurnEnd, 1)

	call := runtimetest.Last[*events.ToolCall](t, evts)
	require.Equal(t, runtime.SubagentTool, call.Name)
	result := runtimetest.Last[*events.ToolResult](t, evts)
	require.False(t, result.IsError)
	text := events.JoinText(result.Content)
	require.Contains(t, text, "I could not ask: DELEGATED_CALLER:")
	require.Contains(t, text, "put the open question in your final result")

	child := h.Events(childOf(t, evts))
	refused := runtimetest.Last[*events.ToolResult](t, child)
	require.Equal(t, holdover.ToolName, refused.Name)
	require.True(t, refused.IsError)
	require.Equal(t, holdover.CodeDelegatedCaller, refused.Error.Code)
	require.Empty(t, projection.Fold(child).Active, "the refused question is not tracked")
	require.Empty(t, projection.Fold(evts).Active)

	rec, live, err := h.service.Roots().Lookup(h.ctx, childOf(t, evts))
	require.NoError(t, err)
	require.False(t, live, "the child's registration ends with its task")
	require.Equal(t, uint64(1), rec.Epoch)
}

// childOf is the child Session of the root's subagent call.
func childOf(t *testing.T, root []events.Event) string {
	t.Helper()
	return runtime.ChildSession("root", runtimetest.Last[*events.ToolCall](t, root).CallID)
}
