package projection

import (
	"encoding/json"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/inbox"
)

// Status is the state of an active call.
type Status string

const (
	// Open: the tool call is recorded and its foreground wait may be running.
	Open Status = "open"
	// Continued: the tool returned pending (or was repaired as
	// TOOL_OUTCOME_UNKNOWN); the question is answerable through the late-answer RPC.
	Continued Status = "continued"
)

// Call is an active question call.
type Call struct {
	CallID    string              `json:"callId"`
	Status    Status              `json:"status"`
	Questions []holdover.Question `json:"questions"`
	// ParentCallID is the run_code call that dispatched this call (D4).
	ParentCallID string `json:"parentCallId,omitempty"`
	// Blocking marks a timed-schema call made with timeout -1 (M3).
	Blocking bool `json:"blocking,omitempty"`
	// Queued is the late reply the agent spliced into its inbox and has
	// not admitted yet, if any. It does not settle the call (D5); a
	// discard or a Turn end releases it (D8).
	Queued *Queued `json:"queued,omitempty"`
	// Released is the last late reply the log released unadmitted, kept
	// because the agent may claim it again after a restart, which queues
	// it again (D8).
	Released *Queued `json:"released,omitempty"`
	// Seq is the Session seq of the event that opened the call.
	Seq uint64 `json:"seq"`
	// Reply is the last message of the call's reply subject as of the
	// View's SessionSeq, when that is proven (see View.SessionSeq). It is
	// not stored: the bucket holds the fold of the log only.
	Reply inbox.Last `json:"-"`
}

// Queued is a late reply that was spliced into the agent's inbox. Seq is
// the Session seq of its splice.
type Queued struct {
	MessageID string            `json:"messageId"`
	Answers   []holdover.Answer `json:"answers"`
	// By is who gave the reply (its source's user), when known.
	By  string `json:"by,omitempty"`
	Seq uint64 `json:"seq"`
}

// Settled is a call with its answer batch. Settled batches stay, so the
// original tool row can show late answers while its own result is pending.
type Settled struct {
	CallID    string              `json:"callId"`
	Questions []holdover.Question `json:"questions"`
	Answers   []holdover.Answer   `json:"answers"`
	// Late is true when an admitted reply settled the call after it
	// continued, false when its tool result carried the batch.
	Late bool `json:"late"`
	// By is who gave a late reply (its source's user), when known.
	By string `json:"by,omitempty"`
	// Seq is the Session seq of the settling event.
	Seq uint64 `json:"seq"`
}

// View is the projection of one Session: what the userQuestions bucket
// stores under the Session id. Every seq in it is a Session seq: the
// SESSIONS stream sequence of an event's message, shared by all Sessions,
// so a Session's seqs skip the other Sessions' events (package sessionlog).
type View struct {
	Active  []Call    `json:"active"`
	Settled []Settled `json:"settled"`
	// Timed reports whether the latest request/header offered the timed
	// ask_user_question schema (D2).
	Timed bool `json:"timed"`
	// LastSeq is the Session seq (stream sequence) of the last folded
	// event; the next event of the Session names it in Holdover-Prev-Seq.
	LastSeq uint64 `json:"lastSeq"`
	// SessionSeq, when not 0, is the stream sequence of the last message
	// of the whole Session (holdover.session.<sid>.>: its log, its inbox
	// and its reply subjects) as of this View, proven by the projection
	// worker that wrote it ([Worker]): no event after LastSeq, and every
	// continued call's Reply is its reply subject's last message. A late
	// answer published expecting it as the Session's last sequence is
	// stored only if nothing at all happened in the Session since, so it
	// may decide from this View alone (package steer). It is kept in
	// memory beside the Views a Store wrote, never stored; folding an
	// event clears it.
	SessionSeq uint64 `json:"-"`
}

// MarshalJSON writes Active and Settled as [] rather than null, so an
// operator reading the bucket sees the same shape for every Session.
func (v View) MarshalJSON() ([]byte, error) {
	type plain View
	if v.Active == nil {
		v.Active = []Call{}
	}
	if v.Settled == nil {
		v.Settled = []Settled{}
	}
	return json.Marshal(plain(v))
}

// Find returns the active call with callID.
func (v *View) Find(callID string) (*Call, bool) {
	for i := range v.Active {
		if v.Active[i].CallID == callID {
			return &v.Active[i], true
		}
	}
	return nil, false
}

// FindSettled returns the settled call with callID.
func (v *View) FindSettled(callID string) (*Settled, bool) {
	for i := range v.Settled {
		if v.Settled[i].CallID == callID {
			return &v.Settled[i], true
		}
	}
	return nil, false
}
