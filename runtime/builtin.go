package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/runtime/ptc"
)

// The names of the runtime's own tools.
const (
	RunCodeTool  = "run_code"
	SubagentTool = "subagent"
	SleepTool    = "sleep"
)

// AskTool is the ask_user_question tool as a runtime Tool. The question
// text, the timeout rules and the result text all come from askuser; this
// adapter only hands it the Session, the call id and the calling agent.
type AskTool struct{ tool *askuser.Tool }

// NewAskTool registers ask_user_question with cfg against the question
// service svc.
func NewAskTool(cfg askuser.Config, svc askuser.Asker) (*AskTool, error) {
	t, err := askuser.New(cfg, svc)
	if err != nil {
		return nil, err
	}
	return &AskTool{tool: t}, nil
}

func (t *AskTool) Name() string              { return holdover.ToolName }
func (t *AskTool) Schema() events.ToolSchema { return t.tool.Schema() }

func (t *AskTool) Call(ctx context.Context, c Call) holdover.ToolResult {
	return t.tool.Call(ctx, askuser.Call{Session: c.Session, CallID: c.ID, Agent: c.Agent, Arguments: c.Arguments})
}

// maxSleep bounds one sleep call.
const maxSleep = 10 * time.Minute

// sleepTool waits. It is the scripted demo's "independent work": a step
// that takes time and depends on no answer.
type sleepTool struct{ clock clockwork.Clock }

func (sleepTool) Name() string { return SleepTool }
func (sleepTool) Schema() events.ToolSchema {
	return events.ToolSchema{
		Name:        SleepTool,
		Description: "Wait for the given number of milliseconds, then return. Use it to pace work that waits on something outside.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000,"description":"How long to wait, in milliseconds."}},"required":["ms"],"additionalProperties":false}`),
	}
}

func (t sleepTool) Call(ctx context.Context, c Call) holdover.ToolResult {
	var args struct {
		MS *int64 `json:"ms"`
	}
	if err := strictJSON(c.Arguments, &args); err != nil || args.MS == nil || *args.MS < 0 || time.Duration(*args.MS)*time.Millisecond > maxSleep {
		return failure(holdover.Newf(holdover.CodeBadRequest, `sleep takes {"ms": N} with N from 0 to %d`, maxSleep.Milliseconds()))
	}
	d := time.Duration(*args.MS) * time.Millisecond
	timer := t.clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.Chan():
		return holdover.ToolResult{Text: fmt.Sprintf("slept %d ms", *args.MS)}
	case <-ctx.Done():
		return failure(holdover.Wrap(ctx.Err(), holdover.CodeInternal, "sleep was interrupted"))
	}
}

// runCodeTool runs JavaScript that calls the other tools (programmatic tool
// calling). Each call the program makes goes through Runner.Dispatch, which
// records it as tool/ptc-dispatch.
type runCodeTool struct {
	clock   clockwork.Clock
	timeout time.Duration
}

func (runCodeTool) Name() string { return RunCodeTool }
func (t runCodeTool) Schema() events.ToolSchema {
	return events.ToolSchema{
		Name: RunCodeTool,
		Description: "Run a JavaScript program that calls the other tools as functions: tools.NAME(args) or callTool(NAME, args). " +
			"A call returns the tool's result (parsed when it is JSON) or throws an Error with .code when the tool fails. " +
			"console.log prints; the program's last expression is printed too. No files, network or modules. " +
			fmt.Sprintf("The program stops after %s.", t.timeout),
		InputSchema: json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","description":"The JavaScript program."}},"required":["code"],"additionalProperties":false}`),
	}
}

func (t runCodeTool) Call(ctx context.Context, c Call) holdover.ToolResult {
	var args struct {
		Code string `json:"code"`
	}
	if err := strictJSON(c.Arguments, &args); err != nil || args.Code == "" {
		return failure(holdover.New(holdover.CodeBadRequest, `run_code takes {"code": "…JavaScript…"}`))
	}
	out, err := ptc.Run(ctx, args.Code, c.Runner.Dispatch, ptc.Options{Tools: c.Runner.Tools(), Timeout: t.timeout, Clock: t.clock})
	if err != nil {
		r := failure(err)
		if out != "" {
			r.Text = out + "\n" + r.Text
		}
		return r
	}
	return holdover.ToolResult{Text: out}
}

// subagentTool runs a child agent on a task. The child is owned by the
// agent that calls it, so it may not ask the user itself (DELEGATED_CALLER,
// M9): it puts open questions in its final message instead.
type subagentTool struct{}

func (subagentTool) Name() string { return SubagentTool }
func (subagentTool) Schema() events.ToolSchema {
	return events.ToolSchema{
		Name: SubagentTool,
		Description: "Hand a self-contained task to a child agent and get its final message back. " +
			"The child cannot ask the user; it reports any open question in its final message, for you to ask.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","description":"What the child should do, with everything it needs to know."}},"required":["task"],"additionalProperties":false}`),
	}
}

func (subagentTool) Call(ctx context.Context, c Call) holdover.ToolResult {
	var args struct {
		Task string `json:"task"`
	}
	if err := strictJSON(c.Arguments, &args); err != nil || args.Task == "" {
		return failure(holdover.New(holdover.CodeBadRequest, `subagent takes {"task": "…"}`))
	}
	return c.Runner.RunChild(ctx, args.Task)
}

// strictJSON decodes one JSON object with no unknown fields.
func strictJSON(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON value")
	}
	return nil
}
