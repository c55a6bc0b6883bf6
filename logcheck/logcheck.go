// Package logcheck checks a Session's log against the agent protocol, the
// way a runtime author needs when something they recorded does not show
// up: every message against the schemas (schemas/event.json), the
// Holdover-Prev-Seq header every append carries, and the events the
// question fold cannot use (projection.Reject), each with the seq it is at.
//
// It reads nothing itself: it checks the messages sessionlog.ReadStored
// returns, so the same check runs on a live log or a test's.
package logcheck

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/holdover-dev/holdover/events"
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

		if rej, rejected := Rejected(m); rejected {
			add(fmt.Sprintf("the question fold passes over it (%s): %s", rej.Reason, rej.Detail))
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
	e, err := events.Decode(m.Data)
	e.Seq = m.Seq
	return projection.Reject(e, err)
}

// recordedType reads the type a message names, "" when it names none.
func recordedType(data []byte) string {
	var e struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(data, &e)
	return e.Type
}
