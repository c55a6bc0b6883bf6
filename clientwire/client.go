package clientwire

import (
	"encoding/json"

	"github.com/holdover-dev/holdover"
)

// The types of the frames a Client sends. A close goes both ways.
const (
	TypeHello    = "hello"
	TypeWatch    = "watch"
	TypeUnwatch  = "unwatch"
	TypeSettle   = "settle"
	TypeReject   = "reject"
	TypeDelegate = "delegate"
	TypeOpen     = "open"
	TypeClose    = "close"
	TypeCall     = "call"
	TypeInbox    = "inbox"
)

// clientFrames is the catalog of the frames a Client sends, in the order
// docs/protocol.md shows them.
var clientFrames = []Spec{
	specOf[HelloFrame](), specOf[WatchFrame](), specOf[UnwatchFrame](),
	specOf[SettleFrame](), specOf[RejectFrame](), specOf[DelegateFrame](),
	specOf[OpenFrame](), specOf[CloseFrame](), specOf[CallFrame](), specOf[InboxFrame](),
}

// HelloFrame is a Client's first frame: the newest protocol version it
// speaks, its name for the gateway's logs, and its access token unless
// the WebSocket's address carries it.
type HelloFrame struct {
	Type     string `json:"type"`
	Protocol int    `json:"protocol"`
	Client   string `json:"client"`
	Token    string `json:"token,omitempty"`
}

// WatchFrame watches a Session: its events with seq from FromSeq on (all
// of them when 0), then what follows, and its projection view.
type WatchFrame struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Session string `json:"session"`
	FromSeq uint64 `json:"fromSeq,omitempty"`
}

// UnwatchFrame ends the watch ID.
type UnwatchFrame struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// SettleFrame answers the forwarded request ID: Value is the Remote
// Event's result object.
type SettleFrame struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Value json.RawMessage `json:"value"`
}

// RejectFrame fails the forwarded request ID with a coded error.
type RejectFrame struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Error *holdover.Error `json:"error"`
}

// DelegateFrame passes the forwarded request ID on without answering it.
type DelegateFrame struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// OpenFrame opens the Remote stream Method ("<service>.<op>") with Params
// as the stream ID.
type OpenFrame struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// CloseFrame ends the Client's stream or inbox feed ID.
type CloseFrame struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// CallFrame calls the RPC Method ("<service>.<op>") with Params; the
// result or error frame names ID.
type CallFrame struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// InboxFrame opens the inbox feed ID: a summary of every Session the
// token grants that has questions. A close ends it.
type InboxFrame struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

func (HelloFrame) FrameType() string    { return TypeHello }
func (WatchFrame) FrameType() string    { return TypeWatch }
func (UnwatchFrame) FrameType() string  { return TypeUnwatch }
func (SettleFrame) FrameType() string   { return TypeSettle }
func (RejectFrame) FrameType() string   { return TypeReject }
func (DelegateFrame) FrameType() string { return TypeDelegate }
func (OpenFrame) FrameType() string     { return TypeOpen }
func (CloseFrame) FrameType() string    { return TypeClose }
func (CallFrame) FrameType() string     { return TypeCall }
func (InboxFrame) FrameType() string    { return TypeInbox }

// Check says what the frame lacks of what its type needs (BAD_REQUEST:
// the gateway refuses it).
func (f HelloFrame) Check() error {
	return check(f, has(f.Protocol != 0, "a protocol version"))
}

func (f WatchFrame) Check() error {
	return check(f, has(f.ID != "", "an id"), has(f.Session != "", "a session"))
}

func (f UnwatchFrame) Check() error  { return check(f, has(f.ID != "", "an id")) }
func (f DelegateFrame) Check() error { return check(f, has(f.ID != "", "an id")) }
func (f CloseFrame) Check() error    { return check(f, has(f.ID != "", "an id")) }
func (f InboxFrame) Check() error    { return check(f, has(f.ID != "", "an id")) }

func (f SettleFrame) Check() error {
	return check(f, has(f.ID != "", "an id"), has(isObject(f.Value), "a value object"))
}

func (f RejectFrame) Check() error {
	return check(f, has(f.ID != "", "an id"), has(f.Error != nil && f.Error.Code != "", "an error with a code"))
}

func (f OpenFrame) Check() error {
	return check(f, has(f.ID != "", "an id"), has(f.Method != "", "a method"), has(isObject(f.Params), "a params object"))
}

func (f CallFrame) Check() error {
	return check(f, has(f.ID != "", "an id"), has(f.Method != "", "a method"), has(isObject(f.Params), "a params object"))
}

func (HelloFrame) clientFrame()    {}
func (WatchFrame) clientFrame()    {}
func (UnwatchFrame) clientFrame()  {}
func (SettleFrame) clientFrame()   {}
func (RejectFrame) clientFrame()   {}
func (DelegateFrame) clientFrame() {}
func (OpenFrame) clientFrame()     {}
func (CloseFrame) clientFrame()    {}
func (CallFrame) clientFrame()     {}
func (InboxFrame) clientFrame()    {}
