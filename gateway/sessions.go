package gateway

import (
	"encoding/json"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/streams"
)

// This file is the binding of the calls a Session's live root answers on
// the Session's own subjects (runtime.DiscardSubject). Like the
// userQuestions binding it only fills in a Service table entry.

// SessionServiceName is the service part of the Session calls:
// "session.discard".
const SessionServiceName = "session"

// sessionCalls are the live root's calls Clients may make: discarding a
// queued inbox message before admission (D8), which is how a person takes
// back a queued late reply (P5, C4, §7).
var sessionCalls = []string{"discard"}

// Sessions binds the live roots' Session calls: "session.<op>" with
// params {session, …} is a request on holdover.session.<session>.<op>,
// answered by that Session's running agent. Its reply is {} on success or
// {"error":{code,message}}; when no agent runs, nothing answers.
func Sessions() Service {
	return Service{
		Name:           SessionServiceName,
		SessionSubject: streams.SessionSubject,
		Calls:          sessionCalls,
		ReplyError:     envelopeError,
		Unanswered:     "the Session's agent is not running; it takes the request once it runs again",
	}
}

// envelopeError reads a live root's reply, {"error":{code,message}} on
// failure. A reply that does not decode is left to the caller as a result.
func envelopeError(body []byte) *holdover.Error {
	var reply struct {
		Error *holdover.Error `json:"error"`
	}
	if json.Unmarshal(body, &reply) != nil || reply.Error == nil || reply.Error.Code == "" {
		return nil
	}
	return reply.Error
}
