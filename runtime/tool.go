package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
)

// Tool is one tool the model can call.
type Tool interface {
	// Name is the name the model calls the tool by; it equals Schema().Name.
	Name() string
	// Schema is the tool as the model is offered it and as request/header
	// records it.
	Schema() events.ToolSchema
	// Call runs one call. Failures come back as a result with IsError, so
	// the model can read them; Call does not fail otherwise.
	Call(ctx context.Context, call Call) holdover.ToolResult
}

// Call is one tool call as the runtime hands it to a tool.
type Call struct {
	Session string
	Turn    string
	// ID is the model's call id, or the sub-call id of a call made from
	// run_code.
	ID        string
	Name      string
	Arguments json.RawMessage
	// Agent names the agent that calls: the live root, or a child with its
	// owner set. The question tool passes it to the service (M9).
	Agent *holdover.AgentRef
	// Runner gives the tool what only the runtime can do.
	Runner Runner
}

// Runner is what a running call may ask of the runtime: other tools run
// as its sub-calls, and child agents.
type Runner interface {
	// Dispatch runs another tool as a sub-call of this call and records it
	// as tool/ptc-dispatch (programmatic tool calling, D4).
	Dispatch(ctx context.Context, name string, args json.RawMessage) holdover.ToolResult
	// Tools names the tools Dispatch can run.
	Tools() []string
	// RunChild runs a child agent owned by this agent on task and returns
	// its final message.
	RunChild(ctx context.Context, task string) holdover.ToolResult
}

// failure renders err as a tool error.
func failure(err error) holdover.ToolResult {
	w := holdover.Wire(err)
	return holdover.ToolResult{Text: fmt.Sprintf("%s: %s", w.Code, w.Message), IsError: true, Code: w.Code}
}

// content is how a result is recorded in tool/result and tool/ptc-dispatch.
func content(r holdover.ToolResult) ([]events.Part, *events.ToolError) {
	if !r.IsError {
		return events.Text(r.Text), nil
	}
	code := r.Code
	if code == "" {
		code = holdover.CodeInternal
	}
	return events.Text(r.Text), &events.ToolError{Code: code}
}

// toolset is an agent's tools in the order the model is offered them.
type toolset struct {
	list []Tool
}

func newToolset(tools ...Tool) (*toolset, error) {
	ts := &toolset{}
	for _, t := range tools {
		if err := ts.add(t); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

func (ts *toolset) add(t Tool) error {
	name := t.Name()
	switch {
	case name == "" || name != t.Schema().Name:
		return holdover.Newf(holdover.CodeBadRequest, "tool %q has a schema named %q; they must be equal and not empty", name, t.Schema().Name)
	case ts.get(name) != nil:
		return holdover.Newf(holdover.CodeBadRequest, "two tools are named %q", name)
	}
	ts.list = append(ts.list, t)
	return nil
}

func (ts *toolset) get(name string) Tool {
	for _, t := range ts.list {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

// without returns the tools not named in names.
func (ts *toolset) without(names ...string) *toolset {
	return &toolset{list: slices.DeleteFunc(slices.Clone(ts.list), func(t Tool) bool { return slices.Contains(names, t.Name()) })}
}

func (ts *toolset) names() []string {
	out := make([]string, len(ts.list))
	for i, t := range ts.list {
		out[i] = t.Name()
	}
	return out
}

func (ts *toolset) schemas() []events.ToolSchema {
	out := make([]events.ToolSchema, len(ts.list))
	for i, t := range ts.list {
		out[i] = t.Schema()
	}
	return out
}

// call runs one call. An unknown tool, and a tool that panics, come back as
// tool errors: a model's mistake or a tool's bug must not stop the agent.
func (ts *toolset) call(ctx context.Context, c Call) (res holdover.ToolResult) {
	t := ts.get(c.Name)
	if t == nil {
		return failure(holdover.Newf(holdover.CodeBadRequest, "there is no tool named %q; the tools are: %s", c.Name, strings.Join(ts.names(), ", ")))
	}
	defer func() {
		if p := recover(); p != nil {
			cause, ok := p.(error)
			if !ok {
				cause = fmt.Errorf("%v", p)
			}
			res = failure(holdover.Wrapf(cause, holdover.CodeInternal, "tool %s failed", c.Name))
		}
	}()
	return t.Call(ctx, c)
}
