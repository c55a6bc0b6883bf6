package ptc_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/runtime/ptc"
)

// recorder is a Dispatch that answers from a table and remembers each call.
type recorder struct {
	mu      sync.Mutex
	calls   []string
	answers map[string]holdover.ToolResult
}

func (r *recorder) dispatch(_ context.Context, name string, args json.RawMessage) holdover.ToolResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, name+" "+string(args))
	return r.answers[name]
}

func TestProgramCallsToolsAndPrints(t *testing.T) {
	rec := &recorder{answers: map[string]holdover.ToolResult{
		"ask_user_question": {Text: `{"pending":true,"callId":"c/1","message":"later"}`},
		"echo":              {Text: "plain text"},
	}}
	out, err := ptc.Run(context.Background(), `
		const r = tools.ask_user_question({questions: [{id: "q1", question: "Which DB?"}], timeout: 2});
		console.log("pending:", r.pending, r.callId);
		const e = callTool("echo", {n: 1});
		console.log(e);
		({done: true, n: 2})
	`, rec.dispatch, ptc.Options{Tools: []string{"ask_user_question", "echo"}})
	require.NoError(t, err)
	require.Equal(t, "pending: true c/1\nplain text\n{\"done\":true,\"n\":2}", out)
	require.Equal(t, []string{
		`ask_user_question {"questions":[{"id":"q1","question":"Which DB?"}],"timeout":2}`,
		`echo {"n":1}`,
	}, rec.calls, "each call reaches Dispatch with its JSON arguments, in order")
}

func TestFailedToolCallThrowsWithItsCode(t *testing.T) {
	rec := &recorder{answers: map[string]holdover.ToolResult{
		"ask_user_question": {Text: "delegated", IsError: true, Code: holdover.CodeDelegatedCaller},
	}}
	out, err := ptc.Run(context.Background(), `
		try { tools.ask_user_question({questions: []}) } catch (e) { console.log(e.code, e.tool, e.message) }
	`, rec.dispatch, ptc.Options{Tools: []string{"ask_user_question"}})
	require.NoError(t, err)
	require.Equal(t, "DELEGATED_CALLER ask_user_question delegated", out)

	out, err = ptc.Run(context.Background(), `console.log("before"); tools.ask_user_question({})`,
		rec.dispatch, ptc.Options{Tools: []string{"ask_user_question"}})
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	require.Contains(t, err.Error(), "delegated")
	require.Equal(t, "before", out, "output printed before the failure is kept")
}

func TestBadProgramsFailWithBadRequest(t *testing.T) {
	rec := &recorder{}
	for name, program := range map[string]string{
		"syntax":       `function (`,
		"throw":        `throw new Error("boom")`,
		"unknown tool": `callTool("rm_rf", {})`,
		"no tools obj": `tools.rm_rf({})`,
	} {
		_, err := ptc.Run(context.Background(), program, rec.dispatch, ptc.Options{Tools: []string{"echo"}})
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), name)
	}
	require.Empty(t, rec.calls, "no program reached a tool")
}

func TestTimeLimitStopsALoopAndABlockedToolCall(t *testing.T) {
	clock := clockwork.NewFakeClock()
	errc := make(chan error, 1)
	go func() {
		_, err := ptc.Run(context.Background(), `while (true) {}`, (&recorder{}).dispatch, ptc.Options{Timeout: time.Second, Clock: clock})
		errc <- err
	}()
	require.NoError(t, clock.BlockUntilContext(context.Background(), 1))
	clock.Advance(time.Second)
	err := <-errc
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	require.Contains(t, err.Error(), "time limit")

	blocked := func(ctx context.Context, _ string, _ json.RawMessage) holdover.ToolResult {
		<-ctx.Done() // a question waiting for its user
		return holdover.ToolResult{Text: "aborted", IsError: true, Code: holdover.CodeAskAborted}
	}
	go func() {
		_, err := ptc.Run(context.Background(), `tools.wait({})`, blocked, ptc.Options{Tools: []string{"wait"}, Timeout: time.Second, Clock: clock})
		errc <- err
	}()
	require.NoError(t, clock.BlockUntilContext(context.Background(), 1))
	clock.Advance(time.Second)
	err = <-errc
	require.Contains(t, err.Error(), "time limit", "the limit cancels the tool call and then stops the program")
}

func TestCancelledContextStopsTheProgram(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ptc.Run(ctx, `while (true) {}`, (&recorder{}).dispatch, ptc.Options{})
	require.Contains(t, err.Error(), "cancelled")
}
