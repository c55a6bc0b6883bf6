package userquestions

import (
	"time"

	"github.com/holdover-dev/holdover"
)

// The waterfall (W6, W8) carries one foreground request from the worker
// that owns its wait to every answerer watching the Session: the worker
// publishes it as a core request on streams.AskSubject with a reply subject
// of its own; gateways with Clients on the Session subscribe there and
// forward it. Answerers reply with a WaterfallOutcome on that reply
// subject. The first settle or reject wins, later outcomes are dropped,
// and delegation passes the request on without answering it. NATS answers
// "no responders" when nobody watches the Session. When the request ends,
// the worker publishes a CancelNotice on streams.CancelSubject so every
// other Client drops it; Clients that join later list in-flight requests
// with the inflight endpoint and answer through the same reply subject.

// WaterfallRequest is one foreground request as answerers see it.
type WaterfallRequest struct {
	// RequestID names this request; cancel notices and inflight listings
	// refer to it. A re-asked call gets a new one.
	RequestID string              `json:"requestId"`
	Session   string              `json:"session"`
	CallID    string              `json:"callId,omitempty"`
	Questions []holdover.Question `json:"questions"`
	Intent    *holdover.Intent    `json:"intent,omitempty"`
	// Wait is set for a keyed request: {callId, timed: true} for askTimed,
	// {callId} for a keyed blocking ask (M3). A legacy request has none and
	// cannot be claimed.
	Wait *WaitRef `json:"wait,omitempty"`
	// Deadline is the wait's original Host deadline, when it has one. It is
	// for display (an inbox's time left); a Client's countdown starts from
	// the remainingMs its claim receives (W3), which a claim may hold past it.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Owner is the lease of the worker that owns the request. Answerers
	// watch it, so that a dead worker's requests do not linger.
	Owner string `json:"owner"`
	// Reply is where outcomes go: the reply subject of the delivered
	// message, written out in inflight listings.
	Reply string `json:"reply,omitempty"`
}

// WaitRef is the wait of a keyed request (W3).
type WaitRef struct {
	CallID string `json:"callId"`
	Timed  bool   `json:"timed,omitempty"`
}

// The kinds of WaterfallOutcome.
const (
	// OutcomeSettle answers the request with a batch.
	OutcomeSettle = "settle"
	// OutcomeReject fails it with a coded error: ASK_TIMED_OUT from a
	// Client countdown (W5), ASK_CANCELLED from a closed panel (C2), …
	OutcomeReject = "reject"
	// OutcomeDelegate passes it on: never an answer; the request stays
	// with the other and later answerers.
	OutcomeDelegate = "delegate"
)

// WaterfallOutcome is what an answerer sends to a request's reply subject.
type WaterfallOutcome struct {
	Kind    string            `json:"kind"`
	Answers []holdover.Answer `json:"answers,omitempty"`
	Error   *holdover.Error   `json:"error,omitempty"`
}

// CancelNotice tells every answerer of a Session that a request ended.
type CancelNotice struct {
	RequestID string `json:"requestId"`
	CallID    string `json:"callId,omitempty"`
	// Reason says how it ended: answered, expired, rejected, aborted, or,
	// from an answerer's own bookkeeping, owner-lost or gone.
	Reason string `json:"reason"`
}

// The reasons of a CancelNotice.
const (
	ReasonAnswered  = "answered"
	ReasonExpired   = "expired"
	ReasonRejected  = "rejected"
	ReasonAborted   = "aborted"
	ReasonOwnerLost = "owner-lost"
	ReasonGone      = "gone"
)

// CancelReason names how a wait that ended with err ended.
func CancelReason(err error) string {
	switch holdover.CodeOf(err) {
	case "":
		return ReasonAnswered
	case holdover.CodeAskTimedOut:
		return ReasonExpired
	case holdover.CodeAskAborted:
		return ReasonAborted
	default:
		return ReasonRejected
	}
}

// ParseOutcome decodes an answerer's outcome, strictly, as a request
// ([DecodeRequest]): it comes from outside the worker. Anything that is not
// a well-formed settle, reject or delegate is BAD_REQUEST.
func ParseOutcome(data []byte) (WaterfallOutcome, error) {
	var out WaterfallOutcome
	if err := DecodeRequest(data, &out); err != nil {
		return WaterfallOutcome{}, err
	}
	switch out.Kind {
	case OutcomeSettle:
		// Whether the batch fits the questions is the wait's to judge.
	case OutcomeReject:
		if out.Error == nil || out.Error.Code == "" {
			return WaterfallOutcome{}, holdover.New(holdover.CodeBadRequest, "a reject outcome needs an error with a code")
		}
	case OutcomeDelegate:
	default:
		return WaterfallOutcome{}, holdover.Newf(holdover.CodeBadRequest, "unknown waterfall outcome kind %q", out.Kind)
	}
	return out, nil
}
