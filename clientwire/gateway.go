package clientwire

import (
	"encoding/json"
	"time"

	"github.com/holdover-dev/holdover"
)

// The types of the frames the gateway sends (and TypeClose, which goes
// both ways).
const (
	TypeWelcome = "welcome"
	TypeEvents  = "events"
	TypeView    = "view"
	TypeReady   = "ready"
	TypeSummary = "summary"
	TypeRequest = "request"
	TypeCancel  = "cancel"
	TypeFrame   = "frame"
	TypeResult  = "result"
	TypeError   = "error"
)

// gatewayFrames is the catalog of the frames the gateway sends, in the
// order docs/protocol.md shows them.
var gatewayFrames = []Spec{
	specOf[WelcomeFrame](), specOf[EventsFrame](), specOf[ViewFrame](), specOf[ReadyFrame](),
	specOf[SummaryFrame](), specOf[RequestFrame](), specOf[CancelFrame](),
	specOf[StreamFrame](), specOf[ClosedFrame](), specOf[ResultFrame](), specOf[ErrorFrame](),
}

// WelcomeFrame answers hello: the version spoken on the connection, the
// connection's name in the gateway's logs and claims, the token's user
// and the Sessions it grants ("*" for every one).
type WelcomeFrame struct {
	Type     string   `json:"type"`
	Protocol int      `json:"protocol"`
	ClientID string   `json:"clientId"`
	User     string   `json:"user"`
	Sessions []string `json:"sessions"`
}

// EventsFrame carries events of the Session the watch ID follows, in seq
// order.
type EventsFrame struct {
	Type    string         `json:"type"`
	ID      string         `json:"id"`
	Session string         `json:"session"`
	Events  []SessionEvent `json:"events"`
}

// SessionEvent is a Session event as a watch delivers it: the type, time
// and data the Session log records, with its Session seq.
type SessionEvent struct {
	Seq  uint64          `json:"seq"`
	Type string          `json:"type"`
	At   time.Time       `json:"at"`
	Data json.RawMessage `json:"data,omitempty"`
}

// ViewFrame carries the projection view of the Session the watch ID
// follows, as the userQuestions bucket holds it, or null while the
// Session has none.
type ViewFrame struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Session string          `json:"session"`
	View    json.RawMessage `json:"view"`
}

// ReadyFrame says the watch ID (with its Session) or the inbox feed ID
// (without) has sent what existed when it started; what follows arrives
// as it happens.
type ReadyFrame struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Session string `json:"session,omitempty"`
}

// SummaryFrame carries Sessions of the inbox feed ID whose questions
// changed.
type SummaryFrame struct {
	Type     string           `json:"type"`
	ID       string           `json:"id"`
	Sessions []SessionSummary `json:"sessions"`
}

// SessionSummary is one Session as the inbox feed shows it: the active
// calls of its projection, the count of its settled ones, its last folded
// seq, and the Host deadlines of its live timed waits by call id (for
// display only: a countdown comes from a claim, W3).
type SessionSummary struct {
	Session   string               `json:"session"`
	Active    []json.RawMessage    `json:"active"`
	Settled   int                  `json:"settled"`
	LastSeq   uint64               `json:"lastSeq"`
	Deadlines map[string]time.Time `json:"deadlines,omitempty"`
}

// RequestFrame forwards a Remote Event request of a watched Session: ID
// is the Host's request id, Event the Remote Event name, Payload the
// request body unchanged. It takes one settle, reject or delegate.
type RequestFrame struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Session string          `json:"session"`
	Event   string          `json:"event"`
	Payload json.RawMessage `json:"payload"`
}

// CancelFrame says the forwarded request ID has ended at the Host. It
// never says the question was answered (C5).
type CancelFrame struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Session string `json:"session"`
	Reason  string `json:"reason,omitempty"`
}

// StreamFrame carries one message of the Remote stream ID.
type StreamFrame struct {
	Type string          `json:"type"`
	ID   string          `json:"id"`
	Data json.RawMessage `json:"data"`
}

// ClosedFrame is the gateway's close: the stream or inbox feed ID has
// ended, with Error when it failed.
type ClosedFrame struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Error *holdover.Error `json:"error,omitempty"`
}

// ResultFrame is the result of the call ID.
type ResultFrame struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Result json.RawMessage `json:"result"`
}

// ErrorFrame refuses the frame ID, or ends the call or watch ID; without
// an id it concerns the connection.
type ErrorFrame struct {
	Type    string        `json:"type"`
	ID      string        `json:"id,omitempty"`
	Code    holdover.Code `json:"code"`
	Message string        `json:"message"`
}

func (WelcomeFrame) FrameType() string { return TypeWelcome }
func (EventsFrame) FrameType() string  { return TypeEvents }
func (ViewFrame) FrameType() string    { return TypeView }
func (ReadyFrame) FrameType() string   { return TypeReady }
func (SummaryFrame) FrameType() string { return TypeSummary }
func (RequestFrame) FrameType() string { return TypeRequest }
func (CancelFrame) FrameType() string  { return TypeCancel }
func (StreamFrame) FrameType() string  { return TypeFrame }
func (ClosedFrame) FrameType() string  { return TypeClose }
func (ResultFrame) FrameType() string  { return TypeResult }
func (ErrorFrame) FrameType() string   { return TypeError }

// Check says what the frame lacks of what its type needs (BAD_FRAME: a
// Client passes it over).
func (f WelcomeFrame) Check() error {
	return check(f, has(f.Protocol != 0, "a protocol"))
}

func (f EventsFrame) Check() error {
	seqs := true
	for _, e := range f.Events {
		seqs = seqs && e.Seq != 0
	}
	return check(f, has(f.ID != "", "an id"), has(f.Session != "", "a session"), has(seqs, "a seq on every event"))
}

func (f ViewFrame) Check() error {
	// A null view: the Session has no projection yet.
	return check(f, has(f.ID != "", "an id"), has(isObject(f.View) || isNull(f.View), "a view object or null"))
}

func (f ReadyFrame) Check() error   { return check(f, has(f.ID != "", "an id")) }
func (f SummaryFrame) Check() error { return check(f, has(f.ID != "", "an id")) }

func (f RequestFrame) Check() error {
	return check(f, has(f.ID != "", "an id"), has(f.Session != "", "a session"), has(f.Event != "", "an event"))
}

func (f CancelFrame) Check() error {
	return check(f, has(f.ID != "", "an id"), has(f.Session != "", "a session"))
}

func (f StreamFrame) Check() error { return check(f, has(f.ID != "", "an id")) }

func (f ClosedFrame) Check() error {
	return check(f, has(f.ID != "", "an id"), has(f.Error == nil || f.Error.Code != "", "an error with a code"))
}

func (f ResultFrame) Check() error { return check(f, has(f.ID != "", "an id")) }
func (f ErrorFrame) Check() error  { return check(f, has(f.Code != "", "a code")) }

func (WelcomeFrame) gatewayFrame() {}
func (EventsFrame) gatewayFrame()  {}
func (ViewFrame) gatewayFrame()    {}
func (ReadyFrame) gatewayFrame()   {}
func (SummaryFrame) gatewayFrame() {}
func (RequestFrame) gatewayFrame() {}
func (CancelFrame) gatewayFrame()  {}
func (StreamFrame) gatewayFrame()  {}
func (ClosedFrame) gatewayFrame()  {}
func (ResultFrame) gatewayFrame()  {}
func (ErrorFrame) gatewayFrame()   {}
