package events

import (
	"encoding/json"
	"slices"
	"time"
)

// Type names an event kind in the Session log.
type Type string

// The event types of the Session log.
const (
	TypeRequestHeader    Type = "request/header"
	TypeAssistantMessage Type = "assistant/message"
	TypeToolCall         Type = "tool/call"
	TypeToolResult       Type = "tool/result"
	TypePTCDispatch      Type = "tool/ptc-dispatch"
	TypeUserMessage      Type = "user/message"
	TypeInboxSpliced     Type = "agent/inbox/spliced"
	TypeInboxClaimed     Type = "agent/inbox/claimed"
	TypeInboxDiscarded   Type = "agent/inbox/discarded"
	TypeTurnStart        Type = "turn/start"
	TypeTurnEnd          Type = "turn/end"
	TypeStepEnd          Type = "step/end"
)

// MaxEventBytes bounds one encoded event. It stays under the NATS default
// payload limit (1 MiB) with room for headers.
const MaxEventBytes = 1<<20 - 4<<10

// Body is the typed payload of one event.
type Body interface {
	// EventType names the event kind this body is recorded as.
	EventType() Type
	// Validate reports a missing or malformed required field.
	Validate() error
}

// Event is one entry of a Session log. Seq is the Session sequence (the
// JetStream stream sequence of the message); it is not part of the encoded
// form but set when the event is read back.
type Event struct {
	Seq  uint64    `json:"-"`
	Type Type      `json:"type"`
	At   time.Time `json:"at"`
	// Body is the decoded payload, nil when Type is not one this version
	// knows. Such events are kept in Data and passed over.
	Body Body `json:"-"`
	// Data is the payload as recorded.
	Data json.RawMessage `json:"data,omitempty"`
}

// Known reports whether the event's type is one this version decodes.
func (e Event) Known() bool { return e.Body != nil }

// New returns an event carrying body, stamped at.
func New(at time.Time, body Body) Event {
	return Event{Type: body.EventType(), At: at, Body: body}
}

// Encode validates and encodes e as one log message.
func Encode(e Event) ([]byte, error) { return fast.encode(e) }

// Decode parses one log message. Malformed JSON, a missing type or an
// invalid body of a known type is a BAD_REQUEST error; an unknown type
// decodes to an Event whose Body is nil. With the error of an invalid body
// comes the envelope as read (Type, At, Data; Body nil), so a reader can
// say which event failed and look at what it carried.
//
// Data keeps the payload as recorded for known types too (the gateway
// hands it to Clients as is), so a known body is parsed from Data in a
// second pass rather than together with the envelope.
func Decode(data []byte) (Event, error) { return fast.decode(data) }

// bodies maps each known type to a constructor of its body.
var bodies = map[Type]func() Body{
	TypeRequestHeader:    func() Body { return &RequestHeader{} },
	TypeAssistantMessage: func() Body { return &AssistantMessage{} },
	TypeToolCall:         func() Body { return &ToolCall{} },
	TypeToolResult:       func() Body { return &ToolResult{} },
	TypePTCDispatch:      func() Body { return &PTCDispatch{} },
	TypeUserMessage:      func() Body { return &UserMessage{} },
	TypeInboxSpliced:     func() Body { return &InboxSpliced{} },
	TypeInboxClaimed:     func() Body { return &InboxClaimed{} },
	TypeInboxDiscarded:   func() Body { return &InboxDiscarded{} },
	TypeTurnStart:        func() Body { return &TurnStart{} },
	TypeTurnEnd:          func() Body { return &TurnEnd{} },
	TypeStepEnd:          func() Body { return &StepEnd{} },
}

// Types lists the event types this version decodes, sorted: the ones the
// schema folder must describe.
func Types() []Type {
	out := make([]Type, 0, len(bodies))
	for t := range bodies {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// NewBody returns an empty body of type t, and false for a type this
// version does not know.
func NewBody(t Type) (Body, bool) {
	newBody, ok := bodies[t]
	if !ok {
		return nil, false
	}
	return newBody(), true
}
