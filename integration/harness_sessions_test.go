package integration

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
)

// The ask_user_question input schemas a model request can carry: the timed
// one has a timeout property (M2, D2), the legacy one has none (M1).
const (
	timedAskSchema  = `{"type":"object","properties":{"questions":{"type":"array","minItems":1,"items":{"type":"object","properties":{"id":{"type":"string"},"question":{"type":"string"},"options":{"type":"array"},"multiSelect":{"type":"boolean"}},"required":["id","question"]}},"timeout":{"type":"integer","description":"Seconds to wait before the call returns pending; -1 waits without a deadline."}},"required":["questions"]}`
	legacyAskSchema = `{"type":"object","properties":{"questions":{"type":"array","minItems":1,"items":{"type":"object"}}},"required":["questions"]}`
	runCodeSchema   = `{"type":"object","properties":{"code":{"type":"string"},"timeout":{"type":"integer"}},"required":["code"]}`
	readFileSchema  = `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`
)

// logRecord is one entry to append to a Session log: a typed body, or raw
// bytes for what no well-behaved writer produces (an unknown type from a
// newer version, invalid JSON).
type logRecord struct {
	body events.Body
	raw  []byte
}

// agentScript generates one Session's log the way a scripted agent would
// write it: Turns of request headers (timed, legacy, tool-less), tool
// calls and results, ask_user_question calls that are answered in time,
// skipped, go pending, fail or are repaired, run_code sub-calls, late
// replies that are spliced, claimed, admitted or discarded, and now and
// then an event this version cannot read. Its choices come from r, so a
// seed replays a log exactly.
type agentScript struct {
	r        *rand.Rand
	sid      string
	mix      actionMix
	n        int // ids handed out
	turn     string
	open     []string // ask_user_question calls without a result, in call order
	paused   []string // calls that returned pending or were repaired
	queued   []string // reply message ids spliced and not yet admitted or discarded
	asked    map[string][]holdover.Question
	askedIDs []string          // keys of asked in order, so a seed replays
	replyTo  map[string]string // reply message id → call id
}

// actionMix weighs what the agent does next.
type actionMix struct {
	header, ask, result, otherTool, dispatch, splice, claim, admit, discard, user, assistant, step, endTurn, unreadable int
}

var (
	// questionHeavy exercises every fold rule often: a fifth of the
	// events are questions, and some cannot be read.
	questionHeavy = actionMix{header: 3, ask: 5, result: 5, otherTool: 2, dispatch: 1, splice: 2, claim: 1, admit: 2, discard: 1, user: 1, assistant: 1, step: 1, endTurn: 1, unreadable: 1}
	// working looks like an agent at work: mostly tool calls and text, a
	// question every few dozen events.
	working = actionMix{header: 4, ask: 1, result: 1, otherTool: 14, dispatch: 0, splice: 1, claim: 1, admit: 1, discard: 0, user: 1, assistant: 6, step: 4, endTurn: 1, unreadable: 0}
)

func newAgentScript(r *rand.Rand, sid string, mix actionMix) *agentScript {
	return &agentScript{r: r, sid: sid, mix: mix, asked: map[string][]holdover.Question{}, replyTo: map[string]string{}}
}

func (a *agentScript) id(prefix string) string {
	a.n++
	return fmt.Sprintf("%s-%s-%d", prefix, a.sid, a.n)
}

// script returns the next n records.
func (a *agentScript) script(n int) []logRecord {
	out := make([]logRecord, 0, n)
	for len(out) < n {
		out = append(out, a.next()...)
	}
	return out[:n]
}

// next returns the records of one agent action.
func (a *agentScript) next() []logRecord {
	if a.turn == "" {
		a.turn = a.id("turn")
		return []logRecord{{body: &events.TurnStart{Turn: a.turn}}}
	}
	type action struct {
		weight int
		do     func() []logRecord
	}
	m := a.mix
	actions := []action{
		{m.header, a.header},
		{m.ask, a.ask},
		{m.result, a.result},
		{m.otherTool, a.otherTool},
		{m.dispatch, a.dispatch},
		{m.splice, a.splice},
		{m.claim, a.claim},
		{m.admit, a.admit},
		{m.discard, a.discard},
		{m.user, a.userMessage},
		{m.assistant, a.assistant},
		{m.step, func() []logRecord { return []logRecord{{body: &events.StepEnd{Turn: a.turn, Step: a.n}}} }},
		{m.endTurn, a.endTurn},
		{m.unreadable, a.unreadable},
	}
	total := 0
	for _, x := range actions {
		total += x.weight
	}
	pick := a.r.IntN(total)
	for _, x := range actions {
		if pick < x.weight {
			if recs := x.do(); len(recs) > 0 {
				return recs
			}
			return a.assistant()
		}
		pick -= x.weight
	}
	panic("unreachable")
}

func (a *agentScript) header() []logRecord {
	tools := []events.ToolSchema{{Name: "read_file", InputSchema: json.RawMessage(readFileSchema)}, {Name: "run_code", InputSchema: json.RawMessage(runCodeSchema)}}
	switch a.r.IntN(8) {
	case 0, 1, 2, 3, 4:
		tools = append(tools, events.ToolSchema{Name: holdover.ToolName, Description: "Ask the user; returns pending after timeout.", InputSchema: json.RawMessage(timedAskSchema)})
	case 5, 6:
		tools = append(tools, events.ToolSchema{Name: holdover.ToolName, Description: "Ask the user and wait.", InputSchema: json.RawMessage(legacyAskSchema)})
	default:
		tools = nil // a tool-less request
	}
	return []logRecord{{body: &events.RequestHeader{Turn: a.turn, Model: "scripted", Tools: tools}}}
}

func (a *agentScript) questions() []holdover.Question {
	qs := make([]holdover.Question, 1+a.r.IntN(3))
	for i := range qs {
		qs[i] = holdover.Question{ID: fmt.Sprintf("q%d", i), Question: fmt.Sprintf("Question %d?", i),
			Options: []holdover.Option{{Label: "Yes (Recommended)"}, {Label: "No"}}, MultiSelect: a.r.IntN(4) == 0}
	}
	return qs
}

// ask calls ask_user_question: usually valid, sometimes with a reused call
// id or malformed arguments.
func (a *agentScript) ask() []logRecord {
	callID := a.id("call")
	if len(a.askedIDs) > 0 && a.r.IntN(10) == 0 {
		callID = a.askedIDs[a.r.IntN(len(a.askedIDs))] // reuse an earlier call id (D3)
	}
	qs := a.questions()
	timeouts := []int64{30, 120, -1, 5}
	t := timeouts[a.r.IntN(len(timeouts))]
	args, _ := json.Marshal(holdover.ToolArgs{Questions: qs, Timeout: &t})
	switch a.r.IntN(12) {
	case 0:
		args = json.RawMessage(`{"questions":[]}`)
	case 1:
		args = json.RawMessage(`{"questions":[{"id":"q0","question":"x"}],"timeout":0}`)
	case 2:
		args = json.RawMessage(`{"questions":"not a list"}`)
	case 3:
		args, _ = json.Marshal(holdover.ToolArgs{Questions: qs}) // no timeout: the configured default
	}
	a.remember(callID, qs)
	a.open = append(a.open, callID)
	return []logRecord{{body: &events.ToolCall{Turn: a.turn, CallID: callID, Name: holdover.ToolName, Arguments: args}}}
}

func (a *agentScript) remember(callID string, qs []holdover.Question) {
	if _, seen := a.asked[callID]; !seen {
		a.askedIDs = append(a.askedIDs, callID)
	}
	a.asked[callID] = qs
}

func (a *agentScript) answers(callID string, skip bool) []holdover.Answer {
	var out []holdover.Answer
	for _, q := range a.asked[callID] {
		ans := holdover.Answer{ID: q.ID, Selected: []string{"No"}}
		if skip {
			ans.Selected = []string{}
		} else if a.r.IntN(3) == 0 {
			ans = holdover.Answer{ID: q.ID, Selected: []string{}, Custom: "something else"}
		}
		out = append(out, ans)
	}
	return out
}

func pendingResultText(callID string) string {
	data, _ := json.Marshal(holdover.Pending{Pending: true, CallID: callID, Message: "No answer batch arrived before the timeout; this is pending, not a skipped answer."})
	return string(data)
}

// result settles the oldest open call one of the ways D3 reads.
func (a *agentScript) result() []logRecord {
	if len(a.open) == 0 {
		return nil
	}
	callID := a.open[0]
	a.open = a.open[1:]
	r := &events.ToolResult{Turn: a.turn, CallID: callID, Name: holdover.ToolName}
	switch a.r.IntN(10) {
	case 0, 1, 2:
		r.Content = events.Text(pendingResultText(callID))
		a.paused = append(a.paused, callID)
	case 3, 4:
		r.Content = events.Text(holdover.Batch{Answers: a.answers(callID, false)}.String())
	case 5:
		r.Content = events.Text(holdover.Batch{Answers: a.answers(callID, true)}.String())
	case 6:
		r.Content, r.IsError, r.Error = events.Text("aborted"), true, &events.ToolError{Name: "HolderError", Code: holdover.CodeAskAborted}
	case 7:
		r.Content, r.IsError, r.Error = events.Text("interrupted"), true, &events.ToolError{Code: holdover.CodeToolOutcomeUnknown}
		a.paused = append(a.paused, callID)
	case 8:
		r.Content = events.Text("the user said yes")
	default:
		r.Content = events.Text(`{"answers":[{"id":"nope","selected":[]}]}`)
	}
	return []logRecord{{body: r}}
}

func (a *agentScript) otherTool() []logRecord {
	callID := a.id("read")
	return []logRecord{
		{body: &events.ToolCall{Turn: a.turn, CallID: callID, Name: "read_file", Arguments: json.RawMessage(`{"path":"main.go"}`)}},
		{body: &events.ToolResult{Turn: a.turn, CallID: callID, Name: "read_file", Content: events.Text("package main\n")}},
	}
}

// dispatch runs ask_user_question from inside run_code (D4).
func (a *agentScript) dispatch() []logRecord {
	parent, callID := a.id("run"), a.id("sub")
	qs := a.questions()
	a.remember(callID, qs)
	args, _ := json.Marshal(holdover.ToolArgs{Questions: qs, Timeout: new(int64(30))})
	d := &events.PTCDispatch{Turn: a.turn, ParentCallID: parent, CallID: callID, Name: holdover.ToolName, Arguments: args}
	switch a.r.IntN(4) {
	case 0, 1:
		d.Content = events.Text(pendingResultText(callID))
		a.paused = append(a.paused, callID)
	case 2:
		d.Content = events.Text(holdover.Batch{Answers: a.answers(callID, false)}.String())
	default:
		d.Content, d.IsError = events.Text("failed"), true
	}
	return []logRecord{
		{body: &events.ToolCall{Turn: a.turn, CallID: parent, Name: "run_code", Arguments: json.RawMessage(`{"code":"ask()"}`)}},
		{body: d},
		{body: &events.ToolResult{Turn: a.turn, CallID: parent, Name: "run_code", Content: events.Text("done")}},
	}
}

func (a *agentScript) reply(messageID, callID string) events.Message {
	m, err := events.NewReply(messageID, callID, a.asked[callID], a.answers(callID, a.r.IntN(4) == 0))
	if err != nil {
		panic(err)
	}
	return m
}

func (a *agentScript) pick(list []string) (string, bool) {
	if len(list) == 0 {
		return "", false
	}
	return list[a.r.IntN(len(list))], true
}

// splice puts a late reply to a paused call into the agent's inbox (D8).
func (a *agentScript) splice() []logRecord {
	callID, ok := a.pick(a.paused)
	if !ok {
		return nil
	}
	messageID := a.id("reply")
	a.replyTo[messageID] = callID
	a.queued = append(a.queued, messageID)
	return []logRecord{{body: &events.InboxSpliced{Turn: a.turn, Message: a.reply(messageID, callID), InboxSeq: uint64(a.n)}}}
}

func (a *agentScript) claim() []logRecord {
	messageID, ok := a.pick(a.queued)
	if !ok {
		return nil
	}
	return []logRecord{{body: &events.InboxClaimed{Turn: a.turn, MessageID: messageID}}}
}

// admit records a queued reply as a user message, which settles its call (D5).
func (a *agentScript) admit() []logRecord {
	messageID, ok := a.pick(a.queued)
	if !ok {
		return nil
	}
	a.queued = withoutString(a.queued, messageID)
	m := a.reply(messageID, a.replyTo[messageID])
	if a.r.IntN(6) == 0 {
		m.Content = events.Text("{garbled") // unreadable recorded text settles with an empty batch
	}
	return []logRecord{{body: &events.UserMessage{Turn: a.turn, Message: m}}}
}

func (a *agentScript) discard() []logRecord {
	messageID, ok := a.pick(a.queued)
	if !ok {
		return nil
	}
	a.queued = withoutString(a.queued, messageID)
	return []logRecord{{body: &events.InboxDiscarded{Turn: a.turn, MessageID: messageID, Reason: "cancelled"}}}
}

func (a *agentScript) userMessage() []logRecord {
	return []logRecord{{body: &events.UserMessage{Turn: a.turn, Message: events.Message{ID: a.id("user"), Role: "user", Content: events.Text("carry on"), Source: events.Source{Kind: events.SourceUser}}}}}
}

func (a *agentScript) assistant() []logRecord {
	return []logRecord{{body: &events.AssistantMessage{Turn: a.turn, ID: a.id("text"), Content: events.Text("Working on it.")}}}
}

// endTurn closes the Turn; replies it did not admit are released (D8).
func (a *agentScript) endTurn() []logRecord {
	turn := a.turn
	a.turn, a.queued = "", nil
	return []logRecord{{body: &events.TurnEnd{Turn: turn, Reason: "done"}}}
}

// unreadable is what this version cannot read: a type from a newer one,
// or a message that is not JSON at all. Both are passed over.
func (a *agentScript) unreadable() []logRecord {
	if a.r.IntN(2) == 0 {
		return []logRecord{{raw: fmt.Appendf(nil, `{"type":"future/thing","at":%q,"data":{"x":%d}}`, time.Now().UTC().Format(time.RFC3339Nano), a.n)}}
	}
	return []logRecord{{raw: []byte(`{"type":"tool/call","data":{`)}}
}

func withoutString(list []string, s string) []string {
	out := list[:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}
