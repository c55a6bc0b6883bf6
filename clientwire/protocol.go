package clientwire

import "github.com/holdover-dev/holdover"

// The protocol versions. A Client says in hello the newest it speaks; the
// gateway speaks to it in the newest both speak, min(hello.protocol,
// ProtocolVersion), and refuses one below OldestProtocolVersion. The
// welcome says which is spoken.
const (
	ProtocolVersion       = 2
	OldestProtocolVersion = 1
)

// BatchingProtocol is the first version in which a message from the
// gateway may carry several frames (a JSON array, SplitMessage); in
// version 1 every message is one frame.
const BatchingProtocol = 2

// MaxIDBytes bounds the ids a Client chooses: the gateway echoes them in
// every frame that belongs to what they started.
const MaxIDBytes = 128

// The codes the protocol gives failures of its own. Codes from a service
// (NOT_FOUND, REPLY_QUEUED …) pass through the gateway unchanged.
const (
	// CodeUnauthorized: no hello yet, or a token the gateway does not
	// accept (then the connection closes with CloseUnauthorized).
	CodeUnauthorized holdover.Code = "UNAUTHORIZED"
	// CodeForbidden: the token does not grant the Session a frame names.
	CodeForbidden holdover.Code = "FORBIDDEN"
	// CodeFrameTooLarge: a Client frame over the gateway's frame limit.
	CodeFrameTooLarge holdover.Code = "FRAME_TOO_LARGE"
	// CodeRateLimited: a Client sends frames faster than the gateway's
	// limits allow.
	CodeRateLimited holdover.Code = "RATE_LIMITED"
	// CodeLimit: the connection already holds as many watches, streams or
	// calls as the gateway allows.
	CodeLimit holdover.Code = "LIMIT_EXCEEDED"
	// CodeUnavailable: the gateway cannot reach the backend right now, or
	// a Client cannot reach the gateway.
	CodeUnavailable holdover.Code = "UNAVAILABLE"
	// CodeTooManyConnections: the token already holds as many connections
	// as the gateway allows; the new one closes with CloseTooMany.
	CodeTooManyConnections holdover.Code = "TOO_MANY_CONNECTIONS"
	// CodeBadFrame: a Client cannot read a frame the gateway sent. The
	// gateway's own word for a Client frame it cannot read is BAD_REQUEST.
	CodeBadFrame holdover.Code = "BAD_FRAME"
)

// The WebSocket close codes of the protocol, besides the standard ones
// (1001 going away, 1008 policy violation, 1009 too big).
const (
	// CloseUnauthorized follows a refused or expired token, or no hello in
	// time; a Client does not reconnect after it.
	CloseUnauthorized = 4401
	// CloseTooMany follows CodeTooManyConnections; a Client may try again
	// after its back-off.
	CloseTooMany = 4429
)

// QuestionRequestEvent is the Remote Event name of a foreground question
// request: the event of the request frames a question Client answers.
const QuestionRequestEvent = "user-questions/request"

// The methods of the userQuestions service a question Client calls or
// opens ("<service>.<op>"; the gateway forwards them by rule).
const (
	// MethodAnswer is the late-answer call (D6).
	MethodAnswer = "userQuestions.answer"
	// MethodView is the call for a Session's projection view.
	MethodView = "userQuestions.view"
	// MethodAttachWait opens the claim stream of a timed wait (W2-W4).
	MethodAttachWait = "userQuestions.attachWait"
)

// MethodDiscard is the call that takes a queued late reply back before the
// Session's agent admits it (D8); the Session's own process answers it.
const MethodDiscard = "session.discard"
