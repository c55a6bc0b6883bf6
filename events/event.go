package events

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/holdover-dev/holdover"
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
func Encode(e Event) ([]byte, error) {
	if e.Body == nil {
		return nil, holdover.Newf(holdover.CodeBadRequest, "event %q has no body", e.Type)
	}
	if e.Body.EventType() != e.Type {
		return nil, holdover.Newf(holdover.CodeBadRequest, "event type %q does not match its %q body", e.Type, e.Body.EventType())
	}
	if err := e.Body.Validate(); err != nil {
		return nil, err
	}
	data, err := json.Marshal(e.Body)
	if err != nil {
		return nil, holdover.Newf(holdover.CodeBadRequest, "encode %s: %v", e.Type, err)
	}
	out, err := json.Marshal(struct {
		Type Type            `json:"type"`
		At   time.Time       `json:"at"`
		Data json.RawMessage `json:"data"`
	}{e.Type, e.At.UTC(), data})
	if err != nil {
		return nil, holdover.Newf(holdover.CodeBadRequest, "encode %s: %v", e.Type, err)
	}
	if len(out) > MaxEventBytes {
		return nil, holdover.Newf(holdover.CodeBadRequest, "event %s is %d bytes, over the %d byte limit", e.Type, len(out), MaxEventBytes)
	}
	return out, nil
}

// Decode parses one log message. Malformed JSON, a missing type or an
// invalid body of a known type is a BAD_REQUEST error; an unknown type
// decodes to an Event whose Body is nil.
func Decode(data []byte) (Event, error) {
	if len(data) > MaxEventBytes {
		return Event{}, holdover.Newf(holdover.CodeBadRequest, "event is %d bytes, over the %d byte limit", len(data), MaxEventBytes)
	}
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return Event{}, holdover.Newf(holdover.CodeBadRequest, "event is not valid JSON: %v", err)
	}
	if e.Type == "" {
		return Event{}, holdover.New(holdover.CodeBadRequest, "event has no type")
	}
	// Encode writes At in UTC, and JSON times stop at year 9999: an offset
	// can carry a parsable time past that, which could never be written again.
	if y := e.At.UTC().Year(); y < 0 || y > 9999 {
		return Event{}, holdover.Newf(holdover.CodeBadRequest, "event time %s is outside the years 0 to 9999", e.At.Format(time.RFC3339))
	}
	newBody, ok := bodies[e.Type]
	if !ok {
		return e, nil
	}
	body := newBody()
	if len(bytes.TrimSpace(e.Data)) == 0 {
		return Event{}, holdover.Newf(holdover.CodeBadRequest, "event %s has no data", e.Type)
	}
	if err := json.Unmarshal(e.Data, body); err != nil {
		return Event{}, holdover.Newf(holdover.CodeBadRequest, "event %s: %v", e.Type, err)
	}
	if err := body.Validate(); err != nil {
		return Event{}, err
	}
	e.Body = body
	return e, nil
}

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
