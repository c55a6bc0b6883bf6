package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/coder/websocket"

	"github.com/holdover-dev/holdover"
)

// The protocol versions this gateway speaks (docs/protocol.md). A hello
// naming ProtocolVersion or a newer one is spoken to in ProtocolVersion;
// one naming an older version from OldestProtocolVersion on, in that one;
// the welcome says which. Version 2 lets a message from the gateway carry
// several frames (a JSON array); version 1 sends one frame a message.
const (
	ProtocolVersion       = 2
	OldestProtocolVersion = 1
)

// batchingProtocol is the first version whose Clients read several frames
// in one message.
const batchingProtocol = 2

// closeUnauthorized is the WebSocket close code after a refused token;
// Clients do not reconnect after it.
const closeUnauthorized websocket.StatusCode = 4401

// The codes the gateway itself gives frames it refuses. Codes from a
// service (NOT_FOUND, REPLY_QUEUED …) pass through unchanged.
const (
	// CodeUnauthorized: no hello yet, or a token the gateway does not know.
	CodeUnauthorized holdover.Code = "UNAUTHORIZED"
	// CodeForbidden: the token does not grant the Session the frame names.
	CodeForbidden holdover.Code = "FORBIDDEN"
	// CodeFrameTooLarge: the frame is over Limits.MaxFrameBytes.
	CodeFrameTooLarge holdover.Code = "FRAME_TOO_LARGE"
	// CodeRateLimited: the Client sends frames faster than Limits allow.
	CodeRateLimited holdover.Code = "RATE_LIMITED"
	// CodeLimit: the connection already holds as many watches, streams or
	// calls as Limits allow.
	CodeLimit holdover.Code = "LIMIT_EXCEEDED"
	// CodeUnavailable: the gateway cannot reach the backend right now.
	CodeUnavailable holdover.Code = "UNAVAILABLE"
	// CodeTooManyConnections: the token already holds
	// Limits.MaxConnsPerToken connections; the new one is closed (4429).
	CodeTooManyConnections holdover.Code = "TOO_MANY_CONNECTIONS"
)

// The frame types a Client sends.
const (
	typeHello    = "hello"
	typeWatch    = "watch"
	typeUnwatch  = "unwatch"
	typeSettle   = "settle"
	typeReject   = "reject"
	typeDelegate = "delegate"
	typeOpen     = "open"
	typeClose    = "close"
	typeCall     = "call"
	typeInbox    = "inbox"
)

// The frame types the gateway sends (besides close, shared with Clients).
const (
	typeWelcome = "welcome"
	typeEvents  = "events"
	typeView    = "view"
	typeReady   = "ready"
	typeRequest = "request"
	typeCancel  = "cancel"
	typeFrame   = "frame"
	typeResult  = "result"
	typeError   = "error"
	typeSummary = "summary"
)

// inFrame is any frame a Client sends; which fields matter depends on Type.
type inFrame struct {
	Type string `json:"type"`
	ID   string `json:"id"`

	// hello
	Protocol int    `json:"protocol"`
	Client   string `json:"client"`
	Token    string `json:"token"`

	// watch
	Session string  `json:"session"`
	FromSeq *uint64 `json:"fromSeq"`

	// settle, reject
	Value json.RawMessage `json:"value"`
	Error *holdover.Error `json:"error"`

	// open, call
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// maxIDBytes bounds the ids a Client chooses; they are echoed in frames.
const maxIDBytes = 128

// parseFrame decodes one Client frame and checks the fields its type
// needs. The error is BAD_REQUEST; the frame it returns alongside carries
// whatever id could be read, so the error frame can name it. A type this
// version does not know is no error: a newer Client may send more, and
// the connection ignores it.
func parseFrame(data []byte) (inFrame, error) {
	var f inFrame
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return inFrame{}, holdover.Newf(holdover.CodeBadRequest, "frame is not a JSON object: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return inFrame{}, holdover.New(holdover.CodeBadRequest, "frame has data after its JSON object")
	}
	if len(f.ID) > maxIDBytes {
		return inFrame{}, holdover.Newf(holdover.CodeBadRequest, "frame id is %d bytes, over the %d byte limit", len(f.ID), maxIDBytes)
	}
	need := func(ok bool, field string) error {
		if ok {
			return nil
		}
		return holdover.Newf(holdover.CodeBadRequest, "a %s frame needs %s", f.Type, field)
	}
	var err error
	switch f.Type {
	case "":
		err = holdover.New(holdover.CodeBadRequest, "frame has no type")
	case typeHello:
		err = need(f.Protocol != 0, "a protocol version")
	case typeWatch:
		err = errors.Join(need(f.ID != "", "an id"), need(f.Session != "", "a session"))
	case typeUnwatch, typeDelegate, typeClose, typeInbox:
		err = need(f.ID != "", "an id")
	case typeSettle:
		err = errors.Join(need(f.ID != "", "an id"), need(isObject(f.Value), "a value object"))
	case typeReject:
		err = errors.Join(need(f.ID != "", "an id"), need(f.Error != nil && f.Error.Code != "", "an error with a code"))
	case typeOpen, typeCall:
		err = errors.Join(need(f.ID != "", "an id"), need(f.Method != "", "a method"), need(isObject(f.Params), "a params object"))
	}
	if err != nil {
		return f, holdover.New(holdover.CodeBadRequest, err.Error())
	}
	return f, nil
}

// frameLabel is the metrics label of a frame type: the type itself when
// this version knows it, "other" for anything a Client made up.
func frameLabel(typ string) string {
	switch typ {
	case typeHello, typeWatch, typeUnwatch, typeSettle, typeReject, typeDelegate, typeOpen, typeClose, typeCall, typeInbox:
		return typ
	}
	return "other"
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// Outgoing frames. Each is encoded once and may be written to many Clients.

type welcomeFrame struct {
	Type     string   `json:"type"`
	Protocol int      `json:"protocol"`
	ClientID string   `json:"clientId"`
	User     string   `json:"user"`
	Sessions []string `json:"sessions"`
}

type eventsFrame struct {
	Type    string      `json:"type"`
	ID      string      `json:"id"`
	Session string      `json:"session"`
	Events  []wireEvent `json:"events"`
}

// wireEvent is a Session event as Clients see it: the recorded event with
// its Session seq.
type wireEvent struct {
	Seq  uint64          `json:"seq"`
	Type string          `json:"type"`
	At   time.Time       `json:"at"`
	Data json.RawMessage `json:"data,omitempty"`
}

type viewFrame struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Session string          `json:"session"`
	View    json.RawMessage `json:"view"`
}

type requestFrame struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Session string          `json:"session"`
	Event   string          `json:"event"`
	Payload json.RawMessage `json:"payload"`
}

type cancelFrame struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Session string `json:"session"`
	Reason  string `json:"reason,omitempty"`
}

type streamFrame struct {
	Type string          `json:"type"`
	ID   string          `json:"id"`
	Data json.RawMessage `json:"data"`
}

type closeFrame struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Error *holdover.Error `json:"error,omitempty"`
}

type resultFrame struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Result json.RawMessage `json:"result"`
}

type errorFrame struct {
	Type    string        `json:"type"`
	ID      string        `json:"id,omitempty"`
	Code    holdover.Code `json:"code"`
	Message string        `json:"message"`
}

// encodeFrame renders an outgoing frame. Every frame type is plain data,
// so a failure is a programming error reported as INTERNAL.
func encodeFrame(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(errorFrame{Type: typeError, Code: holdover.CodeInternal, Message: "encode frame: " + err.Error()})
	}
	return data
}

// errorOf renders err as an error frame about the frame with id.
func errorOf(id string, err error) []byte {
	w := holdover.Wire(err)
	return encodeFrame(errorFrame{Type: typeError, ID: id, Code: w.Code, Message: w.Message})
}
