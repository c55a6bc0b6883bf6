package projection

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
)

// New returns the View of a Session with no events: no calls, not timed.
func New() View { return View{Active: []Call{}, Settled: []Settled{}} }

// Fold folds a whole Session log, in order, from the empty View.
func Fold(log []events.Event) View {
	v := New()
	for _, e := range log {
		v.Apply(e)
	}
	return v
}

// Apply folds one event into v (D2–D5). It is deterministic and does no
// I/O. An event whose Seq is not past v.LastSeq is ignored, so a redelivered
// event changes nothing; otherwise v.LastSeq becomes e.Seq. Session seqs
// start at 1. Events that say nothing about questions, including event
// types this version does not know, change only LastSeq.
func (v *View) Apply(e events.Event) {
	if e.Seq <= v.LastSeq {
		return
	}
	v.LastSeq, v.SessionSeq = e.Seq, 0
	switch b := e.Body.(type) {
	case *events.RequestHeader:
		v.Timed = offersTimedTool(b.Tools)
	case *events.ToolCall:
		v.applyCall(b, e.Seq)
	case *events.ToolResult:
		v.applyResult(b, e.Seq)
	case *events.PTCDispatch:
		v.applyDispatch(b, e.Seq)
	case *events.UserMessage:
		v.applyReservations(e)
		v.applyAdmission(b.Message, e.Seq)
	case *events.InboxSpliced, *events.InboxClaimed, *events.InboxDiscarded, *events.TurnEnd:
		v.applyReservations(e)
	}
}

// Clone returns a deep copy of v that shares no memory with it, so a
// cached View can be folded further without touching the original.
func (v View) Clone() View {
	out := View{
		Active:     make([]Call, len(v.Active)),
		Settled:    make([]Settled, len(v.Settled)),
		Timed:      v.Timed,
		LastSeq:    v.LastSeq,
		SessionSeq: v.SessionSeq,
	}
	for i, c := range v.Active {
		c.Questions = cloneQuestions(c.Questions)
		c.Queued, c.Released = c.Queued.clone(), c.Released.clone()
		out.Active[i] = c
	}
	for i, s := range v.Settled {
		s.Questions = cloneQuestions(s.Questions)
		s.Answers = cloneAnswers(s.Answers)
		out.Settled[i] = s
	}
	return out
}

// applyCall opens a native ask_user_question call made under a timed
// header (D3). Legacy and invalid calls are not tracked (M1).
func (v *View) applyCall(c *events.ToolCall, seq uint64) {
	if !v.Timed || c.Name != holdover.ToolName {
		return
	}
	v.trackAsk(Call{CallID: c.CallID, Status: Open, Seq: seq}, c.Arguments)
}

// applyResult moves an open call on by its tool result (D3): pending or a
// resume repair continues it, a valid answer batch settles it, anything
// else removes it. Results for calls that are not open change nothing.
func (v *View) applyResult(r *events.ToolResult, seq uint64) {
	i := v.activeIndex(r.CallID)
	if i < 0 || v.Active[i].Status != Open {
		return
	}
	call := &v.Active[i]
	if r.Error != nil && r.Error.Code == holdover.CodeToolOutcomeUnknown {
		call.Status = Continued
		return
	}
	if failed(r.IsError, r.Error) {
		v.removeActive(i)
		return
	}
	text := events.JoinText(r.Content)
	if _, pending := holdover.ParsePending(text); pending {
		call.Status = Continued
		return
	}
	batch, err := holdover.ParseBatch([]byte(text))
	if err != nil || holdover.ValidateBatch(call.Questions, batch.Answers) != nil {
		v.removeActive(i)
		return
	}
	v.settle(i, batch.Answers, false, seq)
}

// applyDispatch enters a run_code sub-call that returned pending (D4). The
// header lists only run_code, so this does not depend on Timed.
func (v *View) applyDispatch(d *events.PTCDispatch, seq uint64) {
	if d.Name != holdover.ToolName || failed(d.IsError, d.Error) {
		return
	}
	if _, pending := holdover.ParsePending(events.JoinText(d.Content)); !pending {
		return
	}
	v.trackAsk(Call{CallID: d.CallID, Status: Continued, ParentCallID: d.ParentCallID, Seq: seq}, d.Arguments)
}

// applyAdmission settles the active call a late reply names once the reply
// is admitted into the agent's context (D5). The source, not the text,
// identifies a reply (G1); unreadable text settles with an empty batch.
func (v *View) applyAdmission(m events.Message, seq uint64) {
	if i := v.repliedIndex(m); i >= 0 {
		v.settle(i, replyAnswers(m, v.Active[i].Questions), true, seq)
		v.Settled[len(v.Settled)-1].By = m.Source.User
	}
}

// trackAsk tracks c with the questions and blocking flag of its
// ask_user_question arguments raw; a call whose arguments are not a valid
// ask is not tracked (M2–M4).
func (v *View) trackAsk(c Call, raw json.RawMessage) {
	args, err := CheckArguments(raw)
	if err != nil {
		return // Reject names the problem
	}
	c.Questions = args.Questions
	c.Blocking = args.Timeout != nil && *args.Timeout == holdover.BlockingTimeout
	v.track(c)
}

// track adds c at the end of Active, replacing any active or settled
// entry with the same call id, so call ids stay unique across the View.
func (v *View) track(c Call) {
	if i := v.activeIndex(c.CallID); i >= 0 {
		v.removeActive(i)
	}
	if i := v.settledIndex(c.CallID); i >= 0 {
		v.Settled = slices.Delete(v.Settled, i, i+1)
	}
	v.Active = append(v.Active, c)
}

// settle moves Active[i] to the end of Settled with answers.
func (v *View) settle(i int, answers []holdover.Answer, late bool, seq uint64) {
	c := v.Active[i]
	v.removeActive(i)
	v.Settled = append(v.Settled, Settled{CallID: c.CallID, Questions: c.Questions, Answers: answers, Late: late, Seq: seq})
}

func (v *View) removeActive(i int) { v.Active = slices.Delete(v.Active, i, i+1) }

func (v *View) activeIndex(callID string) int {
	return slices.IndexFunc(v.Active, func(c Call) bool { return c.CallID == callID })
}

// repliedIndex is the index in Active of the call a late reply m names,
// or -1 when m is no reply or its call is not active. The source, not the
// text, identifies a reply (G1).
func (v *View) repliedIndex(m events.Message) int {
	if !m.Source.IsQuestionReply() {
		return -1
	}
	return v.activeIndex(m.Source.CallID)
}

func (v *View) settledIndex(callID string) int {
	return slices.IndexFunc(v.Settled, func(s Settled) bool { return s.CallID == callID })
}

// offersTimedTool reports whether a request header's tools hold the timed
// ask_user_question schema: one whose input schema has a timeout
// property (D2, M2). A legacy schema has none.
func offersTimedTool(tools []events.ToolSchema) bool {
	for _, t := range tools {
		if t.Name == holdover.ToolName && hasTimeoutProperty(t.InputSchema) {
			return true
		}
	}
	return false
}

// schemaVerdicts remembers parseTimeoutProperty by schema text. Every model
// request of a Session records the same few tool schemas, and parsing the
// question tool's schema again for each header would be most of the cost
// of a fold. The verdict depends only on the text, so the fold stays pure.
var schemaVerdicts = verdictCache{verdicts: map[string]bool{}}

// The cache is bounded: a deployment offers a handful of distinct question
// schemas of a few KiB, so more means unusual input; the cache then starts
// over, and a huge schema is parsed each time rather than kept.
const (
	maxCachedSchemas     = 64
	maxCachedSchemaBytes = 16 << 10
)

type verdictCache struct {
	mu       sync.RWMutex
	verdicts map[string]bool
}

func (c *verdictCache) timed(schema json.RawMessage) bool {
	c.mu.RLock()
	verdict, ok := c.verdicts[string(schema)]
	c.mu.RUnlock()
	if ok {
		return verdict
	}
	verdict = parseTimeoutProperty(schema)
	if len(schema) > maxCachedSchemaBytes {
		return verdict
	}
	c.mu.Lock()
	if len(c.verdicts) >= maxCachedSchemas {
		clear(c.verdicts)
	}
	c.verdicts[string(schema)] = verdict
	c.mu.Unlock()
	return verdict
}

// hasTimeoutProperty is parseTimeoutProperty, remembered.
func hasTimeoutProperty(schema json.RawMessage) bool { return schemaVerdicts.timed(schema) }

// parseTimeoutProperty reports whether schema is an object schema (its
// type, when given, is "object") whose properties name timeout. An
// unparsable schema has no properties.
func parseTimeoutProperty(schema json.RawMessage) bool {
	var s struct {
		Type       *string                    `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || (s.Type != nil && *s.Type != "object") {
		return false
	}
	timeout, ok := s.Properties["timeout"]
	return ok && string(timeout) != "null"
}

// replyAnswers reads the answers of a late reply to a call with
// questions. Text that is unreadable, or answers that do not fit the
// questions, give an empty batch: the reply still counts (D5).
func replyAnswers(m events.Message, questions []holdover.Question) []holdover.Answer {
	r, err := events.ParseReply(events.JoinText(m.Content))
	if err != nil || holdover.ValidateBatch(questions, r.Answers) != nil {
		return []holdover.Answer{}
	}
	return r.Answers
}

// failed reports whether a tool outcome is an error, by flag or by a
// structured error.
func failed(isError bool, err *events.ToolError) bool { return isError || err != nil }

func cloneQuestions(qs []holdover.Question) []holdover.Question {
	return cloneEach(qs, func(q *holdover.Question) { q.Options = slices.Clone(q.Options) })
}

func cloneAnswers(as []holdover.Answer) []holdover.Answer {
	return cloneEach(as, func(a *holdover.Answer) { a.Selected = slices.Clone(a.Selected) })
}

// cloneEach copies xs (nil stays nil) and lets deep copy what each element
// shares through its own slices.
func cloneEach[T any](xs []T, deep func(*T)) []T {
	out := slices.Clone(xs)
	for i := range out {
		deep(&out[i])
	}
	return out
}
