// Package scripted is a language model that plays a script: a small line
// format that says what the agent answers, step by step. Tests and the
// `holdover dev` demo use it to drive the real runtime without a network.
//
// A script, one command per line ('#' starts a comment line):
//
//	say TEXT                         answer with text; this ends the Turn
//	ask ID QUESTION [options A,B] [multi] [header TEXT] [and ID QUESTION ...] [timeout N]
//	                                 call ask_user_question (QUESTION in "…" or '…' when it has spaces)
//	call TOOL {JSON}                 call any tool with JSON arguments
//	code JAVASCRIPT                  call run_code with the rest of the line
//	subagent TASK                    call subagent with the rest of the line
//	work N [steps] [of DURATION]     N responses, each calling sleep for DURATION (default 0)
//	on late answer COMMAND           answer a late reply (answer_to_pending_question) with COMMAND
//	if answered COMMAND              COMMAND only when the latest ask_user_question call was answered in time
//	if pending COMMAND               COMMAND only when it returned pending (the wait ended unanswered)
//	child:                           the lines after it script the child agent (subagent)
//
// An `if` line is passed over, using no response, when its outcome is not
// the latest question's: a script branches on what the tool returned, so
// a demo tells the truth whether the person answered in time or not, and
// `on late answer` covers the third path, an answer after pending.
//
// Text may name {callId} and {answers} of the latest answer (late, or in
// time) and {result}, the text of the latest tool result.
//
// The model keeps no state of its own. Each request replays the
// conversation to find its place: every assistant message used one line,
// or the late-answer reaction when a late answer came just before it. So a
// Session resumed from its log continues the script where it stopped.
package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/runtime/model"
)

// The tools a script names by command rather than by `call`.
const (
	RunCodeTool  = "run_code"
	SubagentTool = "subagent"
	SleepTool    = "sleep"
)

// Script is a parsed script: the root agent's plan and the child's.
type Script struct {
	main, child plan
}

// plan is one section of a script.
type plan struct {
	steps  []action
	onLate *action
}

// action is one scripted response: text, or one tool call, played only
// when the latest question's outcome is when (any outcome when empty).
type action struct {
	text string
	tool string
	args json.RawMessage
	when outcome
}

// outcome is how the latest ask_user_question call returned.
type outcome string

const (
	outcomeNone     outcome = ""
	outcomeAnswered outcome = "answered"
	outcomePending  outcome = "pending"
)

// outcomeOf reads an ask_user_question result: {"answers":[…]} in time (M7), {"pending":true,…} (M6).
func outcomeOf(text string) (outcome, []holdover.Answer) {
	var r struct {
		Pending bool              `json:"pending"`
		Answers []holdover.Answer `json:"answers"`
	}
	if json.Unmarshal([]byte(text), &r) != nil {
		return outcomeNone, nil
	}
	switch {
	case r.Pending:
		return outcomePending, nil
	case r.Answers != nil:
		return outcomeAnswered, r.Answers
	}
	return outcomeNone, nil
}

// playable moves i past the steps whose outcome is not now's.
func (p *plan) playable(i int, now outcome) int {
	for i < len(p.steps) && p.steps[i].when != outcomeNone && p.steps[i].when != now {
		i++
	}
	return i
}

// Model returns the model that plays the root agent's lines.
func (s *Script) Model() model.Model { return &player{name: "scripted", plan: &s.main} }

// Child returns the model that plays the child section.
func (s *Script) Child() model.Model { return &player{name: "scripted-child", plan: &s.child} }

// player is a Model that plays one plan.
type player struct {
	name string
	plan *plan
}

func (p *player) Name() string { return p.name }

// Complete finds the script's place in the conversation and returns the
// response written there. Past the end of the script it answers with no
// text and no call, which ends the Turn.
func (p *player) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	if err := ctx.Err(); err != nil {
		return model.Response{}, err
	}
	var (
		next      int      // the next line to play
		fresh     bool     // a late answer came after the last response
		answer    answered // the latest answer, late or in time
		asked     outcome  // how the latest question returned
		lastTool  string   // the latest tool result text
		responses int      // assistant messages so far
	)
	for _, m := range req.Messages {
		switch m.Role {
		case model.User:
			// Most messages are not replies: only parse what could be one.
			if !strings.Contains(m.Text, events.ReplyKind) {
				continue
			}
			if r, err := events.ParseReply(m.Text); err == nil {
				fresh = true
				answer = answered{callID: r.CallID, answers: r.Answers}
			}
		case model.Tool:
			lastTool = m.Text
			if m.ToolName == holdover.ToolName {
				var answers []holdover.Answer
				if asked, answers = outcomeOf(m.Text); asked == outcomeAnswered {
					answer = answered{callID: m.ToolCallID, answers: answers}
				}
			}
		case model.Assistant:
			responses++
			if !(fresh && p.plan.onLate != nil) {
				next = p.plan.playable(next, asked) + 1
			}
			fresh = false
		}
	}
	act := p.plan.onLate
	if !fresh || act == nil {
		next = p.plan.playable(next, asked)
		if next >= len(p.plan.steps) {
			return model.Response{}, nil
		}
		act = &p.plan.steps[next]
	}
	fill := placeholders(answer, lastTool)
	if act.tool == "" {
		return model.Response{Text: fill.Replace(act.text)}, nil
	}
	return model.Response{ToolCalls: []model.ToolCall{{
		ID:        fmt.Sprintf("call_%d", responses+1),
		Name:      act.tool,
		Arguments: act.args,
	}}}, nil
}

// answered is the latest answer batch the agent saw, and its call.
type answered struct {
	callID  string
	answers []holdover.Answer
}

// placeholders fills {callId}, {answers} and {result}.
func placeholders(latest answered, lastTool string) *strings.Replacer {
	callID, answers := "", ""
	if latest.callID != "" {
		callID = latest.callID
		parts := make([]string, 0, len(latest.answers))
		for _, a := range latest.answers {
			v := strings.Join(a.Selected, ", ")
			switch {
			case a.Custom != "" && v != "":
				v += ", " + a.Custom
			case a.Custom != "":
				v = a.Custom
			case v == "":
				v = "(skipped)"
			}
			parts = append(parts, a.ID+"="+v)
		}
		answers = strings.Join(parts, "; ")
	}
	return strings.NewReplacer("{callId}", callID, "{answers}", answers, "{result}", lastTool)
}
