// Package steertest builds real Session logs for late-answer tests: it
// appends the events an agent runtime would record (headers, question
// calls and their results, inbox splices, claims, admissions, discards and
// Turn ends) through sessionlog, so tests exercise the same log, fold and
// reservations that production does. [Start] gives those tests the real
// embedded server, Session log, projection and replies to run on, and
// [Env.RunWorker] the projection worker that marks a reply's reservation.
package steertest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/sessionlog"
)

// The ask_user_question input schemas a request header can offer: the
// timed one has a timeout property (M2, D2), the legacy one does not (M1).
const (
	TimedSchema  = `{"type":"object","properties":{"questions":{"type":"array"},"timeout":{"type":"integer"}},"required":["questions"]}`
	LegacySchema = `{"type":"object","properties":{"questions":{"type":"array"}},"required":["questions"]}`
)

// Session appends events to one Session log, each after the last.
type Session struct {
	t    testing.TB
	log  *sessionlog.Log
	ID   string
	Turn string
	last uint64
}

// NewSession starts writing Session sid in log, with Turn "t1".
func NewSession(t testing.TB, log *sessionlog.Log, sid string) *Session {
	return &Session{t: t, log: log, ID: sid, Turn: "t1"}
}

// Last is the Session seq of the last event appended.
func (s *Session) Last() uint64 { return s.last }

// Append records body as the next event and returns its Session seq.
func (s *Session) Append(body events.Body) uint64 {
	s.t.Helper()
	seq, err := s.log.Append(context.Background(), s.ID, s.last, events.New(time.Now(), body))
	if err != nil {
		s.t.Fatalf("append %s to session %s: %v", body.EventType(), s.ID, err)
	}
	s.last = seq
	return seq
}

// Header records a request header offering the timed or the legacy tool.
func (s *Session) Header(timed bool) uint64 {
	schema := LegacySchema
	if timed {
		schema = TimedSchema
	}
	return s.Append(&events.RequestHeader{Turn: s.Turn, Tools: []events.ToolSchema{{Name: holdover.ToolName, InputSchema: json.RawMessage(schema)}}})
}

// Ask records an ask_user_question call with a 30 s timeout.
func (s *Session) Ask(callID string, qs []holdover.Question) uint64 {
	timeout := int64(30)
	args, err := json.Marshal(holdover.ToolArgs{Questions: qs, Timeout: &timeout})
	if err != nil {
		s.t.Fatal(err)
	}
	return s.Append(&events.ToolCall{Turn: s.Turn, CallID: callID, Name: holdover.ToolName, Arguments: args})
}

// Pending records the pending tool result of callID (M6).
func (s *Session) Pending(callID string) uint64 {
	text, err := json.Marshal(holdover.Pending{Pending: true, CallID: callID, Message: "No answer batch arrived before the timeout."})
	if err != nil {
		s.t.Fatal(err)
	}
	return s.Append(&events.ToolResult{Turn: s.Turn, CallID: callID, Name: holdover.ToolName, Content: events.Text(string(text))})
}

// Repaired records the resume-repair result TOOL_OUTCOME_UNKNOWN of callID.
func (s *Session) Repaired(callID string) uint64 {
	return s.Append(&events.ToolResult{
		Turn: s.Turn, CallID: callID, Name: holdover.ToolName, IsError: true,
		Content: events.Text("the tool's outcome is unknown: the runtime restarted while it ran"),
		Error:   &events.ToolError{Code: holdover.CodeToolOutcomeUnknown},
	})
}

// Continued records a timed header, a call and its pending result, so the
// call is continued and answerable.
func (s *Session) Continued(callID string, qs []holdover.Question) uint64 {
	s.Header(true)
	s.Ask(callID, qs)
	return s.Pending(callID)
}

// Splice records that the agent spliced msg into its pending inbox.
func (s *Session) Splice(msg events.Message, inboxSeq uint64) uint64 {
	return s.Append(&events.InboxSpliced{Turn: s.Turn, Message: msg, InboxSeq: inboxSeq})
}

// Claim records that the agent claimed message id for its next step.
func (s *Session) Claim(id string) uint64 {
	return s.Append(&events.InboxClaimed{Turn: s.Turn, MessageID: id})
}

// Admit records msg admitted as a user message.
func (s *Session) Admit(msg events.Message) uint64 {
	return s.Append(&events.UserMessage{Turn: s.Turn, Message: msg})
}

// Discard records that message id was dropped unadmitted.
func (s *Session) Discard(id string) uint64 {
	return s.Append(&events.InboxDiscarded{Turn: s.Turn, MessageID: id, Reason: "test"})
}

// TurnEnd ends the current Turn and names the next one.
func (s *Session) TurnEnd(next string) uint64 {
	seq := s.Append(&events.TurnEnd{Turn: s.Turn})
	s.Turn = next
	return seq
}

// Questions returns single-choice questions with the given ids.
func Questions(ids ...string) []holdover.Question {
	qs := make([]holdover.Question, len(ids))
	for i, id := range ids {
		qs[i] = holdover.Question{ID: id, Question: "Which " + id + "?", Options: []holdover.Option{{Label: "yes"}, {Label: "no"}}}
	}
	return qs
}

// Choose answers every question with its first option.
func Choose(qs []holdover.Question) []holdover.Answer {
	as := make([]holdover.Answer, len(qs))
	for i, q := range qs {
		as[i] = holdover.Answer{ID: q.ID, Selected: []string{q.Options[0].Label}}
	}
	return as
}

// Skip skips every question: empty selection, no custom text (M5).
func Skip(qs []holdover.Question) []holdover.Answer {
	as := make([]holdover.Answer, len(qs))
	for i, q := range qs {
		as[i] = holdover.Answer{ID: q.ID, Selected: []string{}}
	}
	return as
}
