package holdover

import (
	"fmt"

	"github.com/cockroachdb/errors"
)

// Code is a stable error code. It is part of the protocol: agents, Clients
// and operators branch on it, so a code is never renamed.
type Code string

// The error codes of docs/spec.md §8.
const (
	CodeAskTimedOut        Code = "ASK_TIMED_OUT"
	CodeAskAborted         Code = "ASK_ABORTED"
	CodeAskCancelled       Code = "ASK_CANCELLED"
	CodeNoProvider         Code = "NO_PROVIDER"
	CodeBadTimeout         Code = "BAD_TIMEOUT"
	CodeDuplicateWait      Code = "DUPLICATE_WAIT"
	CodeEmptyQuestions     Code = "EMPTY_QUESTIONS"
	CodeBadIntent          Code = "BAD_INTENT"
	CodeCallerNotLive      Code = "CALLER_NOT_LIVE"
	CodeDelegatedCaller    Code = "DELEGATED_CALLER"
	CodeReplyQueued        Code = "REPLY_QUEUED"
	CodeBadAnswer          Code = "BAD_ANSWER"
	CodeToolOutcomeUnknown Code = "TOOL_OUTCOME_UNKNOWN"
	// CodeUntrackedCall ends, instead of pending, a timed wait for a call
	// the Session's log does not track, which no answer could reach after
	// the wait: no tool/call recorded, arguments that are not a valid ask,
	// a legacy header (docs/spec.md W9).
	CodeUntrackedCall Code = "UNTRACKED_CALL"
)

// The reasons a late answer is refused (AnswerResult.Reason, D6): why the
// call takes no answer now. They are no errors: the request was fine.
const (
	// CodeCallOpen: the call is open; its foreground wait may be running,
	// and it takes a late answer once it continues.
	CodeCallOpen Code = "CALL_OPEN"
	// CodeCallUnknown: no active or settled call with that id is tracked:
	// never asked in a timed Session, or removed by a failed result.
	CodeCallUnknown Code = "CALL_UNKNOWN"
	// CodeCallSettled: the call is settled already, in time or late.
	CodeCallSettled Code = "CALL_SETTLED"
	// CodeNoAgent: the call is open, no live agent serves its Session, and
	// no runtime of the resume pool took it over to repair the call.
	CodeNoAgent Code = "NO_AGENT"
)

// Codes for input and infrastructure failures that are not question
// semantics but still cross process boundaries with a stable meaning.
const (
	// CodeBadRequest marks input that could not be parsed or names an
	// invalid id; nothing was changed.
	CodeBadRequest Code = "BAD_REQUEST"
	// CodeNotFound marks an unknown Session or call where the operation
	// needs one to exist.
	CodeNotFound Code = "NOT_FOUND"
	// CodeInternal marks a failure the caller cannot fix by changing its input.
	CodeInternal Code = "INTERNAL"
	// CodeConflict marks a write that lost to a concurrent one, such as an
	// append by a stale Session writer.
	CodeConflict Code = "CONFLICT"
)

// Error is an error with a stable code. Build one with [New] or [Newf], or
// around a cause with [Wrap] or [Wrapf], and read the code back with
// [CodeOf]; wrapping keeps the code.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// cause is what went wrong underneath, kept so errors.Is and errors.As
	// see through the code; it never crosses the wire except as text.
	cause error
}

// Error returns the message, followed by the cause's when there is one.
func (e *Error) Error() string {
	if e.cause == nil {
		return e.Message
	}
	return e.Message + ": " + e.cause.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &holdover.Error{Code: c}) matches any message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// New returns an error with code and message, carrying a stack trace.
func New(code Code, message string) error {
	return errors.WithStackDepth(&Error{Code: code, Message: message}, 1)
}

// Newf is [New] with a format.
func Newf(code Code, format string, args ...any) error {
	return errors.WithStackDepth(&Error{Code: code, Message: fmt.Sprintf(format, args...)}, 1)
}

// Wrap returns an error with code whose message says what failed, keeping
// cause as its cause: errors.Is and errors.As reach cause through it, and
// its Error text ends with cause's. An empty code keeps the code of cause
// (CodeInternal when it has none). A nil cause gives nil.
func Wrap(cause error, code Code, message string) error {
	if cause == nil {
		return nil
	}
	if code == "" {
		code = Wire(cause).Code
	}
	return errors.WithStackDepth(&Error{Code: code, Message: message, cause: cause}, 1)
}

// Wrapf is [Wrap] with a format.
func Wrapf(cause error, code Code, format string, args ...any) error {
	if cause == nil {
		return nil
	}
	if code == "" {
		code = Wire(cause).Code
	}
	return errors.WithStackDepth(&Error{Code: code, Message: fmt.Sprintf(format, args...), cause: cause}, 1)
}

// CodeOf returns the code of the first *Error in err's chain, or "" when
// err is nil or carries no code.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// HasCode reports whether err carries code.
func HasCode(err error, code Code) bool { return err != nil && CodeOf(err) == code }

// Wire returns the form of err that crosses a process boundary: its code
// (CodeInternal when it has none) and its full message.
func Wire(err error) *Error {
	code := CodeOf(err)
	if code == "" {
		code = CodeInternal
	}
	return &Error{Code: code, Message: err.Error()}
}
