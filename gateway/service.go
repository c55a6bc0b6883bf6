package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/holdover-dev/holdover"
)

// Service binds one backend to the names Clients use. The gateway reaches
// a service only through its binding, by the rule in the package doc;
// nothing else in the gateway names a service, a method or an event.
type Service struct {
	// Name is the first part of every method of the service:
	// "<Name>.<op>". It holds no '.'.
	Name string
	// Subjects is the NATS subject prefix of the service's RPC endpoints:
	// a call of "<Name>.<op>" is a request on "<Subjects>.<op>".
	Subjects string
	// SessionSubject, when set, replaces Subjects for a service that each
	// Session's own process answers (the live root's discard): a call of
	// "<Name>.<op>" is a request on SessionSubject(params.session, op).
	SessionSubject func(sid, op string) (string, error)
	// Calls lists the ops Clients may call. Every other endpoint of the
	// service (the agent's ask, say) stays out of a browser's reach.
	Calls []string
	// ReplyError, when set, reads the error a service reports in its reply
	// body rather than in the micro-service error headers; nil when the
	// reply is a result.
	ReplyError func(body []byte) *holdover.Error
	// Unanswered says, for a person, what it means that nothing answers a
	// call right now ("the Session's agent is not running").
	Unanswered string
	// Streams are the Remote streams Clients may open, by op.
	Streams map[string]Opener
	// Events, when set, follows the Remote Event requests the service
	// sends to the Clients watching a Session.
	Events EventSource
	// Deadlines, when set, tells the Host deadlines of a Session's live
	// timed waits by call id, for the inbox's time left (display only).
	Deadlines func(ctx context.Context, sid string) (map[string]time.Time, error)
}

func (s Service) check() error {
	switch {
	case s.Name == "" || strings.Contains(s.Name, "."):
		return holdover.Newf(holdover.CodeBadRequest, "gateway: service name %q must be non-empty and hold no '.'", s.Name)
	case len(s.Calls) > 0 && s.Subjects == "" && s.SessionSubject == nil:
		return holdover.Newf(holdover.CodeBadRequest, "gateway: service %q has calls but no subject prefix", s.Name)
	}
	return nil
}

// callSubject is the subject of a call to op for params naming Session
// sid ("" for none), if Clients may make it.
func (s Service) callSubject(op, sid string) (string, error) {
	switch {
	case !slices.Contains(s.Calls, op):
		return "", holdover.Newf(holdover.CodeNotFound, "service %s has no call %q that Clients may make", s.Name, op)
	case s.SessionSubject == nil:
		return s.Subjects + "." + op, nil
	case sid == "":
		return "", holdover.Newf(holdover.CodeBadRequest, "%s.%s needs params.session: the Session whose process answers it", s.Name, op)
	}
	return s.SessionSubject(sid, op)
}

// splitMethod splits "<service>.<op>".
func splitMethod(method string) (service, op string, ok bool) {
	service, op, ok = strings.Cut(method, ".")
	return service, op, ok && service != "" && op != ""
}

// An Opener runs one Remote stream for a Client: it sends the stream's
// frames with send and returns when the stream is over, nil when the Host
// ended it, an error when it failed. ctx ends when the Client closes the
// stream or goes away; the Opener must then let go of whatever it holds
// before it returns. send never blocks; each data is one JSON value.
type Opener func(ctx context.Context, params json.RawMessage, send func(data json.RawMessage)) error

// EventSource follows one service's Remote Event requests. The gateway
// follows each watched Session once, however many Clients watch it, and
// forwards every request to each of them.
type EventSource interface {
	// Follow delivers Session sid's live requests to sink, each once and
	// each before its end, until the returned Following is closed. Requests
	// already in flight when Follow is called are delivered too. ctx
	// bounds starting to follow, not the following itself.
	Follow(ctx context.Context, sid string, sink RequestSink) (Following, error)
}

// Following is one Session followed by an EventSource.
type Following interface {
	// Close stops following. Requests still live are passed on as a
	// Client teardown passes them (delegated).
	Close(ctx context.Context) error
}

// RequestSink receives a followed Session's requests. Its methods are
// called from one goroutine per Session, in order.
type RequestSink interface {
	Request(r Request)
	// End says request id is over; reason says how (answered, expired …),
	// for logs and display only.
	End(id, reason string)
}

// Request is one Remote Event request, shared by every Client the gateway
// forwards it to. Its outcomes are not acknowledged: the Host settles once
// and tells every Client through End.
type Request interface {
	// ID names the request in request, settle, reject, delegate and cancel frames.
	ID() string
	// Event is the Remote Event name Clients dispatch on.
	Event() string
	// Payload is the request as Clients see it, one JSON object.
	Payload() json.RawMessage
	// Settle answers the request with the Client's value object.
	Settle(value json.RawMessage) error
	// Reject fails the request with the Client's coded error.
	Reject(e *holdover.Error) error
	// Delegate passes the request on without answering it.
	Delegate(ctx context.Context) error
}
