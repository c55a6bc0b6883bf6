// Package userquestions is the wire of the userQuestions service: what
// crosses NATS between the question worker that serves it (package worker)
// and the two sides that call it, agents (package caller) and answerers,
// the gateways and terminal clients that answer for people (package
// answerer). It names the service, its endpoints and subjects, the headers
// and frames of the foreground calls, the waterfall's request, outcome and
// cancel notice, the claim names and frames, and the {code, message} error
// form, and decodes and encodes them. It holds no state and runs nothing:
// each side imports it and none imports another side.
package userquestions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/strictjson"
)

// Name is the micro service name, as `nats micro ls` shows it.
const Name = "userQuestions"

// Version is the version the service announces.
const Version = "0.1.0"

// Description is the micro service description.
const Description = "Holdover timed user questions: foreground waits and claims, late answers, the question projection"

// The endpoints of the service, each served at Subject(op).
const (
	OpAsk      = streams.EndpointAsk      // blocking ask, legacy or keyed (M1, M3)
	OpAskTimed = streams.EndpointAskTimed // bounded foreground wait (W1)
	OpInflight = streams.EndpointInflight // a Session's live requests, from every worker
	OpAnswer   = streams.EndpointAnswer   // a late answer (D6)
	OpView     = streams.EndpointView     // a Session's userQuestions projection
)

// Subject is the subject of the service endpoint op.
func Subject(op string) string { return streams.ServicePrefix + "." + op }

// DefaultCallTimeout bounds a short call (answer, view, inflight) whose
// context has no deadline of its own.
const DefaultCallTimeout = 10 * time.Second

// The headers of the foreground calls between an agent and the worker
// owning its wait. Every ask and askTimed names the caller's lease; the
// worker's first message back is an accepted frame naming its own lease,
// then the reply, so each side can tell when the other is gone.
const (
	// HeaderCallerLease names the caller's liveness lease. A request
	// without it is refused with BAD_REQUEST.
	HeaderCallerLease = "Holdover-Caller-Lease"
	// HeaderFrame marks the accepted frame ([FrameAccepted]).
	HeaderFrame   = "Holdover-Frame"
	FrameAccepted = "accepted"
	// HeaderOwnerStopped marks a reply from a worker that is stopping or
	// lost NATS: [StoppedEndedWait] when it ended the call's wait, which the
	// caller takes as the loss of the worker; any other value when it
	// refused the call before a wait existed, which the caller asks again.
	HeaderOwnerStopped = "Holdover-Owner-Stopped"
	StoppedEndedWait   = "ended"
)

// Accepted is the body of the accepted frame: the lease of the worker
// owning the wait, the request id to abort or ask the status of, and the
// worker's release bound, which a caller's backstop counts in (docs/
// agent-protocol.md §7): a caller cannot know it otherwise.
type Accepted struct {
	Owner     string `json:"owner"`
	RequestID string `json:"requestId"`
	// ReleaseBoundMs is the owning worker's release bound in milliseconds:
	// its lease ends that long after the worker is gone.
	ReleaseBoundMs int64 `json:"releaseBoundMs"`
}

// The requests the worker owning a wait takes from its caller on
// WorkerSubject(<worker lease>, verb); the body is the request id.
const (
	VerbAbort  = "abort"  // the caller stopped waiting: ASK_ABORTED
	VerbStatus = "status" // is the request still live? "live" or "gone"
)

// WorkerSubject is where the worker holding lease takes verb.
func WorkerSubject(lease, verb string) string {
	return streams.WaitPrefix + "." + lease + "." + verb
}

// ViewRequest asks for a Session's userQuestions projection.
type ViewRequest struct {
	Session string `json:"session"`
}

// InflightRequest lists the live foreground requests of a Session.
type InflightRequest struct {
	Session string `json:"session"`
}

// InflightResult is one worker's share of a Session's live requests.
type InflightResult struct {
	Requests []WaterfallRequest `json:"requests"`
}

// NewRequestID returns a fresh request id; it is a plain subject token.
func NewRequestID() string { return nuid.Next() }

// MaxRequestBytes bounds one request or response body. It is the NATS
// payload limit the embedded server and the streams are configured with.
const MaxRequestBytes = 1 << 20

// The headers an error reply carries: the micro-service convention, with the
// holdover code string (not a number) as the code, so `nats micro` and any
// non-Go client see the code without parsing the body.
const (
	ErrorCodeHeader = micro.ErrorCodeHeader
	ErrorHeader     = micro.ErrorHeader
)

// Decode parses one JSON body into v: a reply, a frame or a waterfall
// message. A body that is too large, is not one JSON object or has
// trailing data is BAD_REQUEST. Fields v does not know are ignored, so a
// newer peer may add some.
func Decode(data []byte, v any) error { return decode(data, v, false) }

// DecodeRequest is [Decode] for the request of an endpoint, which crossed
// a trust boundary and must mean one thing only (strictjson.Check): every
// member named exactly as its field, none twice, none that v does not know.
// A misspelt, misplaced, doubled or case-folded field ("Session",
// "ſession") is refused with BAD_REQUEST naming where it is
// ("agent.session"), never ignored and never read as another. Nothing has
// been done yet, so the caller can fix its input and retry.
func DecodeRequest(data []byte, v any) error { return decode(data, v, true) }

func decode(data []byte, v any, strict bool) error {
	if len(data) > MaxRequestBytes {
		return holdover.Newf(holdover.CodeBadRequest, "request is %d bytes, over the %d byte limit", len(data), MaxRequestBytes)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return holdover.New(holdover.CodeBadRequest, "request must be one JSON object")
	}
	if strict {
		if err := strictjson.Check(trimmed, reflect.TypeOf(v)); err != nil {
			return err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(v); err != nil {
		return holdover.Wrap(err, holdover.CodeBadRequest, "request is not valid JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return holdover.New(holdover.CodeBadRequest, "request has data after its JSON object")
	}
	return nil
}

// Encode renders a body, refusing one over the payload limit.
func Encode(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "encode reply")
	}
	if len(data) > MaxRequestBytes {
		return nil, holdover.Newf(holdover.CodeInternal, "reply is %d bytes, over the %d byte limit", len(data), MaxRequestBytes)
	}
	return data, nil
}

// ErrorMsg is the reply that carries err across the wire: its code and
// message in the headers and, as {code, message}, in the body.
func ErrorMsg(subject string, err error) *nats.Msg {
	w := holdover.Wire(err)
	body, _ := json.Marshal(w) // a struct of two strings always encodes
	msg := nats.NewMsg(subject)
	msg.Header.Set(ErrorCodeHeader, string(w.Code))
	msg.Header.Set(ErrorHeader, w.Message)
	msg.Data = body
	return msg
}

// ReplyError rebuilds the typed error a reply carries, or returns nil for a
// successful reply. The body is preferred, since headers lose newlines; a
// reply whose body is not the {code, message} object falls back to the
// headers.
func ReplyError(msg *nats.Msg) error {
	code := msg.Header.Get(ErrorCodeHeader)
	if code == "" {
		return nil
	}
	var w holdover.Error
	if json.Unmarshal(msg.Data, &w) != nil || w.Code == "" {
		w = holdover.Error{Code: holdover.Code(code), Message: msg.Header.Get(ErrorHeader)}
	}
	return &w
}

// IsNoResponders reports whether m is the server's "no responders" status.
func IsNoResponders(m *nats.Msg) bool {
	return len(m.Data) == 0 && m.Header.Get("Status") == "503"
}

// TransportError describes a call of op that got no reply. It is INTERNAL
// (the caller's input was not judged) and still matches context.Canceled
// or context.DeadlineExceeded with errors.Is when ctx ended.
func TransportError(ctx context.Context, op string, err error) error {
	if errors.Is(err, nats.ErrNoResponders) {
		return holdover.Newf(holdover.CodeInternal, "no %s service answers %s: is a question worker running?", Name, Subject(op))
	}
	coded := holdover.Wrapf(err, holdover.CodeInternal, "call %s", Subject(op))
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", coded, ctx.Err())
	}
	return coded
}

// Call sends in to the endpoint op and decodes its reply into out: the
// short calls (answer, view) that both sides make. A ctx without a
// deadline gets timeout.
func Call(ctx context.Context, nc *nats.Conn, timeout time.Duration, op string, in, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	data, err := Encode(in)
	if err != nil {
		return err
	}
	msg, err := nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: Subject(op), Data: data})
	if err != nil {
		return TransportError(ctx, op, err)
	}
	if err := ReplyError(msg); err != nil {
		return err
	}
	return holdover.Wrapf(Decode(msg.Data, out), holdover.CodeInternal, "%s reply", op)
}

// CheckCall validates a call id from a request; call ids are tokenised
// before they enter a subject or key, so only emptiness and length matter.
func CheckCall(callID string) error {
	_, err := streams.Token(callID)
	return holdover.Wrap(err, holdover.CodeBadRequest, "call id")
}

// Flush waits until the server has processed everything sent on nc, so
// subscriptions are in place before what depends on them. ctx without a
// deadline gets DefaultCallTimeout.
func Flush(ctx context.Context, nc *nats.Conn) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCallTimeout)
		defer cancel()
	}
	return holdover.Wrap(nc.FlushWithContext(ctx), holdover.CodeInternal, "flush subscriptions")
}
