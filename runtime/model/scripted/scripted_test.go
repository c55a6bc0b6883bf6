package scripted_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/runtime/model"
	"github.com/holdover-dev/holdover/runtime/model/scripted"
)

const demo = `
# ask, keep working, react to the late answer
say Starting.
ask db "Which database?" options "Postgres (Recommended)", SQLite header Storage and region "Which region?" options eu,us multi timeout 5
work 2 steps of 2s
on late answer say Thanks: {answers} for {callId}.
say Done.

child:
ask q1 "Child question?" timeout 3
say {result}
`

// converse plays m against a growing conversation, the way the runtime
// does: each response becomes an assistant message, each call a result.
type converse struct {
	t    *testing.T
	m    model.Model
	msgs []model.Message
}

func (c *converse) next() model.Response {
	c.t.Helper()
	resp, err := c.m.Complete(context.Background(), model.Request{Messages: c.msgs})
	require.NoError(c.t, err)
	c.msgs = append(c.msgs, model.Message{Role: model.Assistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
	return resp
}

func (c *converse) result(callID, text string) {
	c.msgs = append(c.msgs, model.Message{Role: model.Tool, ToolCallID: callID, Text: text})
}

func (c *converse) user(text string) {
	c.msgs = append(c.msgs, model.Message{Role: model.User, Text: text})
}

func TestScriptPlaysLinesAndReactsToALateAnswer(t *testing.T) {
	s, err := scripted.Parse(demo)
	require.NoError(t, err)
	c := &converse{t: t, m: s.Model()}
	c.user("go")

	require.Equal(t, "Starting.", c.next().Text)

	ask := c.next()
	require.Len(t, ask.ToolCalls, 1)
	call := ask.ToolCalls[0]
	require.Equal(t, holdover.ToolName, call.Name)
	require.Equal(t, "call_2", call.ID, "call ids count the responses, so they are unique in a Session")
	var args holdover.ToolArgs
	require.NoError(t, json.Unmarshal(call.Arguments, &args))
	require.Equal(t, int64(5), *args.Timeout)
	require.Equal(t, []holdover.Question{
		{ID: "db", Question: "Which database?", Header: "Storage", Options: []holdover.Option{{Label: "Postgres (Recommended)"}, {Label: "SQLite"}}},
		{ID: "region", Question: "Which region?", Options: []holdover.Option{{Label: "eu"}, {Label: "us"}}, MultiSelect: true},
	}, args.Questions)
	c.result(call.ID, `{"pending":true,"callId":"call_2","message":"…"}`)

	work := c.next()
	require.Equal(t, scripted.SleepTool, work.ToolCalls[0].Name)
	require.JSONEq(t, `{"ms":2000}`, string(work.ToolCalls[0].Arguments))
	c.result(work.ToolCalls[0].ID, "slept")

	// The late answer arrives at this step boundary.
	reply, err := events.NewReply("m1", "call_2", args.Questions, []holdover.Answer{
		{ID: "db", Selected: []string{"SQLite"}}, {ID: "region", Selected: []string{}},
	})
	require.NoError(t, err)
	c.user(events.JoinText(reply.Content))
	require.Equal(t, "Thanks: db=SQLite; region=(skipped) for call_2.", c.next().Text)

	// The reaction used no line: the second work step comes next.
	require.Equal(t, scripted.SleepTool, c.next().ToolCalls[0].Name)
	c.result("call_5", "slept")
	require.Equal(t, "Done.", c.next().Text)
	require.Equal(t, model.Response{}, c.next(), "past the end the model answers nothing, which ends the Turn")

	// Replaying the same conversation from scratch gives the same place:
	// a resumed Session continues where it stopped.
	again, err := s.Model().Complete(context.Background(), model.Request{Messages: c.msgs[:2]})
	require.NoError(t, err)
	require.Equal(t, ask, again)
}

func TestChildSectionPlaysSeparately(t *testing.T) {
	s, err := scripted.Parse(demo)
	require.NoError(t, err)
	c := &converse{t: t, m: s.Child()}
	c.user("task")
	call := c.next().ToolCalls[0]
	require.Equal(t, holdover.ToolName, call.Name)
	c.result(call.ID, "DELEGATED_CALLER: put the open question in your final result")
	require.Equal(t, "DELEGATED_CALLER: put the open question in your final result", c.next().Text, "{result} is the latest tool result")
	require.Equal(t, "scripted-child", s.Child().Name())
}

func TestCommandsBecomeToolCalls(t *testing.T) {
	s, err := scripted.Parse(`call notes {"text": "hi"}
code console.log(1 + 1)
subagent find the config file
ask q "Go on?" timeout -1
ask q1 'Which DB?' options 'Postgres (Recommended)',b timeout 5`)
	require.NoError(t, err)
	c := &converse{t: t, m: s.Model()}
	for _, want := range []struct{ name, args string }{
		{"notes", `{"text":"hi"}`},
		{scripted.RunCodeTool, `{"code":"console.log(1 + 1)"}`},
		{scripted.SubagentTool, `{"task":"find the config file"}`},
		{holdover.ToolName, `{"questions":[{"id":"q","question":"Go on?"}],"timeout":-1}`},
		{holdover.ToolName, `{"questions":[{"id":"q1","question":"Which DB?","options":[{"label":"Postgres (Recommended)"},{"label":"b"}]}],"timeout":5}`},
	} {
		got := c.next().ToolCalls[0]
		require.Equal(t, want.name, got.Name)
		require.JSONEq(t, want.args, string(got.Arguments))
		c.result(got.ID, "ok")
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	for script, want := range map[string]string{
		"say hi\nfly away":           "script line 2: unknown command",
		"say":                        "say needs text",
		`ask q1 "unterminated`:       "malformed quoted text",
		`ask q1 "A?" and q1 "B?"`:    "used twice",
		"ask":                        "missing text",
		`ask q1 "A?" options`:        "comma-separated labels",
		`ask q1 "A?" timeout soon`:   "whole seconds",
		`ask q1 "A?" colour red`:     `unexpected "colour red"`,
		"call notes [1]":             "one JSON object",
		`call notes {"a":1} {"b":2}`: "one JSON object",
		"call":                       "tool name",
		"work 0":                     "step count",
		"work 2 of soon":             "duration",
		"work 2 steps please":        "unexpected",
		"code":                       "JavaScript",
		"subagent":                   "task",
		"on late answer work 2":      "one response",
		"on late answer say a\non late answer say b": "one late-answer reaction",
		"child:\nchild:": "child section starts twice",
	} {
		_, err := scripted.Parse(script)
		require.Error(t, err, script)
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), script)
		require.Contains(t, err.Error(), want, script)
	}
	_, err := scripted.Parse(strings.Repeat("x", scripted.MaxScriptBytes+1))
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
}

// FuzzScript checks that any text either parses into responses a runtime
// can record (tool arguments are JSON objects, asks carry valid
// questions) or fails with a BAD_REQUEST naming its line.
func FuzzScript(f *testing.F) {
	for _, seed := range []string{demo, branching, "say hi", `ask q "A b" options "x, y",z multi and r "C" timeout -1`, "work 3 of 1ms", "on late answer ask q x", "child:\nsay {result}", `call t {"a":[1,{"b":null}]}`, "ask q1 'Which DB?' options a,'b c' timeout 5", "ask q \"\\u00e9\" options \"\\\"\""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := scripted.Parse(text)
		if err != nil {
			require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
			return
		}
		for _, m := range []model.Model{s.Model(), s.Child()} {
			c := &converse{t: t, m: m}
			for range 20 {
				resp := c.next()
				for _, call := range resp.ToolCalls {
					var obj map[string]json.RawMessage
					require.NoError(t, json.Unmarshal(call.Arguments, &obj), "arguments are a JSON object")
					if call.Name == holdover.ToolName {
						var args holdover.ToolArgs
						require.NoError(t, json.Unmarshal(call.Arguments, &args))
						require.NoError(t, holdover.ValidateQuestions(args.Questions))
					}
					c.result(call.ID, "ok")
				}
			}
		}
	})
}

// branching is a script that tells the truth about the question's outcome
// (issue 13 item 7): answered in time, pending, then a late answer.
const branching = `
ask db "Which database?" options Postgres,SQLite timeout 30
if answered say You answered in time: {answers}.
if pending work 2 steps of 1s
if pending say Still open; I did the parts that do not depend on it.
on late answer say Thanks: {answers} for {callId}.
say Done.
`

func (c *converse) askResult(callID, text string) {
	c.msgs = append(c.msgs, model.Message{Role: model.Tool, ToolCallID: callID, ToolName: holdover.ToolName, Text: text})
}

func TestScriptBranchesOnTheQuestionsOutcome(t *testing.T) {
	s, err := scripted.Parse(branching)
	require.NoError(t, err)

	t.Run("answered in time", func(t *testing.T) {
		c := &converse{t: t, m: s.Model()}
		c.user("go")
		ask := c.next().ToolCalls[0]
		c.askResult(ask.ID, `{"answers":[{"id":"db","selected":["SQLite"]}]}`)
		require.Equal(t, "You answered in time: db=SQLite.", c.next().Text)
		c.user("and then?")
		require.Equal(t, "Done.", c.next().Text, "the pending lines are passed over")
	})

	t.Run("pending, then a late answer", func(t *testing.T) {
		c := &converse{t: t, m: s.Model()}
		c.user("go")
		ask := c.next().ToolCalls[0]
		c.askResult(ask.ID, `{"pending":true,"callId":"call_1","message":"…"}`)
		for range 2 {
			work := c.next()
			require.Equal(t, scripted.SleepTool, work.ToolCalls[0].Name)
			c.result(work.ToolCalls[0].ID, "slept")
		}
		require.Equal(t, "Still open; I did the parts that do not depend on it.", c.next().Text)
		c.user(`{"kind":"answer_to_pending_question","tool":"ask_user_question","callId":"call_1","questions":[],"answers":[{"id":"db","selected":["Postgres"]}]}`)
		require.Equal(t, "Thanks: db=Postgres for call_1.", c.next().Text)
		c.user("and then?")
		require.Equal(t, "Done.", c.next().Text)
	})

	t.Run("if lines without a question outcome are passed over", func(t *testing.T) {
		s, err := scripted.Parse("if answered say yes\nif pending say no\nsay neither")
		require.NoError(t, err)
		c := &converse{t: t, m: s.Model()}
		c.user("go")
		require.Equal(t, "neither", c.next().Text)
	})

	for _, bad := range []string{"if answered", "if late say x", "if pending on late answer say x"} {
		_, err := scripted.Parse(bad)
		require.Error(t, err, bad)
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	}
}
