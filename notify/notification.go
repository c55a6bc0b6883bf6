package notify

import (
	"encoding/json"
	"net/url"
	"strconv"
	"time"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/streams"
)

// Kind is what happened to a question.
type Kind string

const (
	// KindQuestion: the fold opened a call (it became active and open);
	// its foreground wait is running.
	KindQuestion Kind = "question"
	// KindPending: the fold continued a call (open → continued, or a
	// run_code sub-call entering continued): the agent went on without
	// the answer, and the question stays answerable (D3, D4).
	KindPending Kind = "pending"
)

// Kinds lists every kind, in the order a call goes through them.
var Kinds = []Kind{KindQuestion, KindPending}

// KeyHeader carries [Notification.Key] on every delivery, so a receiver
// that dedupes sees each notification once.
const KeyHeader = "Idempotency-Key"

// Notification is the JSON body posted for one question transition
// (docs/operations.md, "Notifications", documents every field).
type Notification struct {
	Kind Kind `json:"kind"`
	// Key is <session>.<call token>.<call seq>.<kind>: the same for
	// every delivery of this notification, whichever process or attempt
	// sends it, and different for a call id asked again (D3).
	Key     string `json:"key"`
	Session string `json:"session"`
	CallID  string `json:"callId"`
	// CallSeq is the Session seq of the event that opened the call (the
	// projection's Call.Seq): with the call id, it names the question.
	CallSeq   uint64              `json:"callSeq"`
	Questions []holdover.Question `json:"questions"`
	// Deadline is when the foreground wait ends unanswered: the call's
	// recorded time plus the timeout its arguments name. Only a question
	// has one, and only when the model named a positive timeout.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Blocking marks a timed-schema call with timeout -1, which waits
	// without a deadline (M3).
	Blocking bool `json:"blocking,omitempty"`
	// ParentCallID is the run_code call that dispatched the call (D4).
	ParentCallID string `json:"parentCallId,omitempty"`
	// Seq is the Session seq of the event whose fold made the transition.
	Seq uint64 `json:"seq"`
	// At is when that event was recorded.
	At time.Time `json:"at"`
	// Link opens the Session's card in the web UI; absent without a web URL.
	Link string `json:"link,omitempty"`
}

// Key is the idempotency key of a transition of kind of the call callID
// that Session sid's event callSeq opened. (Session, call, kind) alone
// would not do: a call id asked again replaces the old call (D3), and a
// receiver deduping by key would drop the new question.
func Key(sid, callID string, callSeq uint64, kind Kind) (string, error) {
	if err := streams.CheckSession(sid); err != nil {
		return "", err
	}
	tok, err := streams.Token(callID)
	if err != nil {
		return "", err
	}
	return streams.Key(sid, tok, strconv.FormatUint(callSeq, 10), string(kind)), nil
}

// notification describes change c, which folding event e into Session
// sid's View made; link is the card's address ("" for none).
func notification(sid string, e events.Event, c change, link string) (Notification, error) {
	key, err := Key(sid, c.call.CallID, c.call.Seq, c.kind)
	if err != nil {
		return Notification{}, err
	}
	n := Notification{
		Kind: c.kind, Key: key, Session: sid, CallID: c.call.CallID, CallSeq: c.call.Seq, Questions: c.call.Questions,
		Blocking: c.call.Blocking, ParentCallID: c.call.ParentCallID, Seq: e.Seq, At: e.At, Link: link,
	}
	if c.kind == KindQuestion && !c.call.Blocking {
		n.Deadline = deadline(e, c.call)
	}
	return n, nil
}

// deadline reads the timeout of the tool call that opened call, when e
// is that call: the fold says the call opened; the timeout it drops is
// read from the same event's arguments. Nil when none is named: the
// runtime's configured default applies, and the log does not record it.
func deadline(e events.Event, call projection.Call) *time.Time {
	tc, ok := e.Body.(*events.ToolCall)
	if !ok || e.Seq != call.Seq || tc.CallID != call.CallID {
		return nil
	}
	var args struct {
		Timeout *int64 `json:"timeout"`
	}
	if json.Unmarshal(tc.Arguments, &args) != nil || args.Timeout == nil || *args.Timeout <= 0 {
		return nil
	}
	at := e.At.Add(time.Duration(*args.Timeout) * time.Second)
	return &at
}

// cardLink is the web UI address that opens Session sid: base with
// ?session=<sid> added to its query (other parameters kept) and the
// Session's page in the fragment (#/s/<sid>). Session ids hold only
// letters, digits, '-' and '_', so they need no escaping.
func cardLink(base *url.URL, sid string) string {
	if base == nil {
		return ""
	}
	u := *base
	q := u.Query()
	q.Set("session", sid)
	u.RawQuery = q.Encode()
	u.Fragment = "/s/" + sid
	return u.String()
}
