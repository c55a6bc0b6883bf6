package inbox

import (
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
)

// A call's reply reservation (D8) is kept in two places, each holding what
// only it can know, and this file is the one rule that reads them together:
//
//   - the call's reply subject (streams.ReplySubject), whose last message
//     is a reply queued there, or a marker the projection worker wrote
//     after the Session log released a reply or the agent claimed a
//     released one again ([Last]);
//   - the Session log, folded call by call with [Logged.Step] into the
//     projection's View: the reply the agent spliced and has not admitted,
//     discarded or dropped at a Turn end, and the last reply it released.
//
// The worker writes a marker before the View that folds its event, so the
// log's events the stored View has not folded yet are the only ones the
// reply subject may not show; a reader that folds the log to its last
// event (projection.Store.CaughtUp) and reads the subject at once has both.

// Marker headers. A marker is a message on a reply subject with an empty
// body: it is no message for the agent, and inbox readers pass over it
// ([IsMarker]).
const (
	// MarkerHeader says which marker a message is: [Released] or [Restored].
	MarkerHeader = "Holdover-Reservation"
	// MarkerMessageHeader names the reply the marker is about.
	MarkerMessageHeader = "Holdover-Message-Id"
	// MarkerSeqHeader is the Session seq the marker is current as of: the
	// last event of the fold that wrote it.
	MarkerSeqHeader = "Holdover-Session-Seq"
)

// Marker is the value of [MarkerHeader].
type Marker string

const (
	// Released: the Session log released the reply (admission, discard,
	// or a Turn that ended without admitting it); the call is free.
	Released Marker = "released"
	// Restored: the agent claimed the released reply again after a
	// restart; it holds the call again (D8).
	Restored Marker = "restored"
)

// Markers lists every marker this version writes and reads.
func Markers() []string { return []string{string(Released), string(Restored)} }

// IsMarker reports whether m is a reservation marker rather than a
// message for the agent. Every inbox reader must pass over markers.
func IsMarker(h nats.Header) bool { return h.Get(MarkerHeader) != "" }

// Last is the last message on a call's reply subject.
type Last struct {
	// Seq is its SESSIONS stream sequence, 0 when the subject is empty. A
	// reply to the call is published expecting it (D6).
	Seq uint64
	// MessageID is the reply it is (its Nats-Msg-Id) or names.
	MessageID string
	// Marker is "" for a reply.
	Marker Marker
	// SessionSeq is a marker's MarkerSeqHeader.
	SessionSeq uint64
}

// lastOf reads a stored reply-subject message.
func lastOf(seq uint64, h nats.Header) Last {
	if m := Marker(h.Get(MarkerHeader)); m != "" {
		at, _ := strconv.ParseUint(h.Get(MarkerSeqHeader), 10, 64)
		return Last{Seq: seq, MessageID: h.Get(MarkerMessageHeader), Marker: m, SessionSeq: at}
	}
	return Last{Seq: seq, MessageID: h.Get(nats.MsgIdHdr)}
}

// Holder is the reply this last message holds the call for: a reply
// holds for itself, a restore marker for the reply it names; a release
// marker or an empty subject hold nothing. A marker this version does not
// know holds the reply it names: a call stays unanswerable rather than
// take a second reply (D8).
func (l Last) Holder() string {
	if l.Marker == Released {
		return ""
	}
	return l.MessageID
}

// Logged is a call's reservation as its Session log records it. The
// projection keeps it for every active call (projection.Call's queued and
// released replies) and moves it on with [Logged.Step].
type Logged struct {
	// Held is the reply the log holds: spliced into the agent's inbox (or
	// claimed again after a release) and not yet admitted, discarded or
	// dropped. "" when none.
	Held string
	// Released is the last reply the log released, so that a claim of it
	// restores it (D8). "" when none.
	Released string
	// Admitted says a reply to the call was admitted: the call is settled
	// (D5) and nothing of it waits.
	Admitted bool
}

// Transition is what one Session event does to a call's reservation.
type Transition uint8

const (
	Unchanged Transition = iota
	// Hold: a reply to the call was spliced into the agent's inbox; it is
	// the reply the log holds from here on.
	Hold
	// Release: the held reply was admitted, discarded, or dropped by a
	// Turn that ended without admitting it.
	Release
	// Restore: the agent claimed the released reply again (after a
	// restart); it is held again (D8).
	Restore
)

// Step is the one transition function of a reply reservation: what event
// e does to the reservation l of call callID (D8). A splice of a reply to
// the call holds it; admission of the held reply, or of any reply to the
// call, releases it, as do its discard and a Turn end, because a Turn
// that ends has not admitted it; a claim of the released reply while none
// is held restores it. A reply queued but not yet spliced is in no Turn,
// so a Turn end leaves it alone: the log does not know it yet.
func (l Logged) Step(callID string, e events.Event) Transition {
	switch b := e.Body.(type) {
	case *events.InboxSpliced:
		if src := b.Message.Source; src.IsQuestionReply() && src.CallID == callID {
			return Hold
		}
	case *events.InboxClaimed:
		if l.Held == "" && l.Released != "" && b.MessageID == l.Released {
			return Restore
		}
	case *events.InboxDiscarded:
		if l.Held != "" && b.MessageID == l.Held {
			return Release
		}
	case *events.UserMessage:
		src := b.Message.Source
		if l.Held != "" && b.Message.ID == l.Held || src.IsQuestionReply() && src.CallID == callID {
			return Release
		}
	case *events.TurnEnd:
		if l.Held != "" {
			return Release
		}
	}
	return Unchanged
}

// holder is the rule that decides whether a reply to a call awaits
// admission, and which: the one the caught-up log holds; else the one the
// reply subject holds, unless the log has released exactly that reply (a
// release the projection worker has not marked yet); nothing once a reply
// was admitted.
func holder(logged Logged, last Last) string {
	switch h := last.Holder(); {
	case logged.Admitted:
		return ""
	case logged.Held != "":
		return logged.Held
	case h != logged.Released:
		return h
	}
	return ""
}

// Check decides whether a new reply to callID may be queued (D6, D8),
// from the call's reservation in the caught-up log and its reply
// subject's last message, read together. It returns the stream sequence
// the reply's publish must expect as the subject's last ([Replies.Queue]),
// or REPLY_QUEUED while another reply awaits admission. It is the one
// place that decides REPLY_QUEUED.
func Check(callID string, logged Logged, last Last) (uint64, error) {
	if h := holder(logged, last); h != "" {
		return 0, holdover.Newf(holdover.CodeReplyQueued,
			"call %s already has a reply (message %s) waiting for the agent to admit it; it can be answered again once that reply is admitted or discarded", callID, h)
	}
	return last.Seq, nil
}
