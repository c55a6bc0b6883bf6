// Package logcheck checks a Session against the agent protocol, the way a
// runtime author needs when something they recorded does not show up:
// everything the question fold reads. Each message of the log against the
// schemas (schemas/event.json), the Holdover-Prev-Seq header every append
// carries, the events the question fold cannot use (projection.Reject,
// which checks an ask's arguments against tool/arguments.json), and the
// text of each ask_user_question tool/result against tool/pending.json or
// tool/answers.json; each message of the inbox against inbox/message.json;
// and that the stored View is the fold of the log. Each problem is said
// with the stream seq it is at.
//
// It reads nothing itself: it checks the messages sessionlog.ReadStored
// and inbox.ReadStored return, and the Views projection.Store.Check
// returns, so the same check runs on a live Session or a test's.
package logcheck

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/schemas"
	"github.com/holdover-dev/holdover/sessionlog"
)

// Problem is one thing wrong with one stored message.
type Problem struct {
	Seq uint64
	// Type is the event type as recorded, "" when none can be read.
	Type string
	What string
}

func (p Problem) String() string {
	typ := p.Type
	if typ == "" {
		typ = "(no type)"
	}
	return fmt.Sprintf("seq %d %s: %s", p.Seq, typ, p.What)
}

// Report is what Check found in one Session's log.
type Report struct {
	// Events is how many messages the log holds.
	Events int
	// Problems lists, in log order, the schema violations, the missing or
	// wrong Holdover-Prev-Seq headers and the rejected events (first for
	// their seq, saying what the fold does with them).
	Problems []Problem
	// Unread counts the events of types Holdover does not read, by type:
	// they are passed over, which is no problem, but a misspelt type shows
	// up here.
	Unread map[string]int
}

// Bad is how many messages have at least one problem.
func (r Report) Bad() int {
	seqs := map[uint64]bool{}
	for _, p := range r.Problems {
		seqs[p.Seq] = true
	}
	return len(seqs)
}

// UnreadTypes lists the types in Unread, sorted.
func (r Report) UnreadTypes() []string {
	out := make([]string, 0, len(r.Unread))
	for t := range r.Unread {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Check checks log, one Session's messages in order from its first.
func Check(log []sessionlog.Stored) (Report, error) {
	r := Report{Events: len(log), Unread: map[string]int{}}
	var prev uint64
	for _, m := range log {
		typ := recordedType(m.Data)
		add := func(what string) { r.Problems = append(r.Problems, Problem{Seq: m.Seq, Type: typ, What: what}) }

		e, decodeErr := decode(m)
		if rej, rejected := projection.Reject(e, decodeErr); rejected {
			add(fmt.Sprintf("the question fold passes over it (%s): %s", rej.Reason, rej.Detail))
		}
		if r, ok := e.Body.(*events.ToolResult); ok && decodeErr == nil {
			for _, what := range resultProblems(r) {
				add(what)
			}
		}
		problems, err := schemas.Validate(schemas.EventSchema, m.Data)
		if err != nil {
			return Report{}, err
		}
		for _, p := range problems {
			add(p.String())
		}
		switch {
		case !m.HasPrev:
			add(fmt.Sprintf("no %s header: append every event with it and Nats-Expected-Last-Subject-Sequence, both the seq of the Session's previous event (%d); without it every reader must read the log again to place the event", sessionlog.PrevHeader, prev))
		case m.Prev != prev:
			add(fmt.Sprintf("%s is %d, but the Session's previous event is seq %d", sessionlog.PrevHeader, m.Prev, prev))
		}
		if _, known := events.NewBody(events.Type(typ)); typ != "" && !known {
			r.Unread[typ]++
		}
		prev = m.Seq
	}
	return r, nil
}

// Rejected decodes one stored message and says whether the question fold
// can use it (projection.Reject).
func Rejected(m sessionlog.Stored) (projection.Rejection, bool) {
	return projection.Reject(decode(m))
}

func decode(m sessionlog.Stored) (events.Event, error) {
	e, err := events.Decode(m.Data)
	e.Seq = m.Seq
	return e, err
}

// The schemas of the text of an ask_user_question tool/result that is no
// error: the pending result (M6) or the answer batch (M7).
const (
	PendingSchema = "tool/pending.json"
	AnswersSchema = "tool/answers.json"
)

// resultProblems checks the text of an ask_user_question result that is
// no error: the fold continues a call on a pending text, settles it on an
// answer batch, and removes it on anything else (D3), so text that fits
// neither schema is a call the user can no longer answer.
func resultProblems(r *events.ToolResult) []string {
	if r.Name != holdover.ToolName || r.IsError || r.Error != nil {
		return nil
	}
	text := events.JoinText(r.Content)
	schema, reading := AnswersSchema, "an answer batch, which settles the call"
	if _, pending := holdover.ParsePending(text); pending {
		schema, reading = PendingSchema, "pending, which continues the call"
	}
	problems, err := schemas.Validate(schema, []byte(text))
	if err != nil || len(problems) == 0 {
		return nil
	}
	out := make([]string, len(problems))
	for i, p := range problems {
		out[i] = fmt.Sprintf("the result text does not fit %s (%s): %s; write the tool's result as the service returned it, or as isError with its code, or the fold removes the call (D3)", schema, reading, p)
	}
	return out
}

// MessageSchema is the schema of an inbox message.
const MessageSchema = "inbox/message.json"

// CheckInbox checks msgs, one Session's inbox messages as stored, against
// MessageSchema and against what the runtime's reader decodes
// (inbox.Decode): a message either refuses is one the agent never reads.
func CheckInbox(msgs []inbox.Stored) ([]Problem, error) {
	var out []Problem
	for _, m := range msgs {
		add := func(what string) { out = append(out, Problem{Seq: m.Seq, Type: InboxType, What: what}) }
		problems, err := schemas.Validate(MessageSchema, m.Data)
		if err != nil {
			return nil, err
		}
		for _, p := range problems {
			add(fmt.Sprintf("%s; publish inbox messages as %s, or the agent's reader passes them over", p, MessageSchema))
		}
		if _, err := inbox.Decode(m.Data); err != nil && len(problems) == 0 {
			add(fmt.Sprintf("the agent's reader refuses it: %s", holdover.Wire(err).Message))
		}
	}
	return out, nil
}

// InboxType is the Type of a Problem with an inbox message.
const InboxType = "inbox message"

// CheckProjection says whether stored, the Session's View as the
// userQuestions bucket holds it, is folded, the fold of its whole log
// (projection.Store.Check): one problem when it is not, at the stored
// View's seq.
func CheckProjection(stored, folded projection.View, equal bool) []Problem {
	if equal {
		return nil
	}
	what := fmt.Sprintf("the stored View (lastSeq %d: %d active, %d settled) is not the fold of the log (lastSeq %d: %d active, %d settled); ",
		stored.LastSeq, len(stored.Active), len(stored.Settled), folded.LastSeq, len(folded.Active), len(folded.Settled))
	if stored.LastSeq < folded.LastSeq {
		what += "a projection worker has events left to fold: check that one runs (holdover_projection_fold_lag_seconds), then check again"
	} else {
		what += "run `holdover rebuild` to refold it from the log"
	}
	return []Problem{{Seq: stored.LastSeq, Type: ProjectionType, What: what}}
}

// ProjectionType is the Type of a Problem with the stored View.
const ProjectionType = "userQuestions View"

// recordedType reads the type a message names, "" when it names none.
func recordedType(data []byte) string {
	var e struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(data, &e)
	return e.Type
}
