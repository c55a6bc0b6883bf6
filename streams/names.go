package streams

import (
	"encoding/base64"
	"regexp"
	"strings"

	"github.com/holdover-dev/holdover"
)

// Stream and bucket names.
const (
	// SessionsStream holds every Session's log and its inbox: the events
	// subject, the inbox subject of steered messages and the reply subject
	// of each call, so one fenced write can expect the whole Session
	// (holdover.session.<sid>.>) to be as a reader saw it.
	SessionsStream = "SESSIONS"
	// LegacyInboxStream is where versions before it kept the inbox
	// subjects; Provision moves what it holds into SESSIONS.
	LegacyInboxStream = "INBOX"
	QuestionsBucket   = "userQuestions"
	RootsBucket       = "liveRoots"
	// ClaimsStream holds the Client claims and liveness leases (ephemeral
	// consumers) and the short-lived frames workers send into claims.
	ClaimsStream = "CLAIMS"
)

// Subject prefixes.
const (
	root          = "holdover"
	sessionPrefix = root + ".session."
	// ServicePrefix is the subject group of the userQuestions micro service.
	ServicePrefix = root + ".q"
	// ResumeSubject is where the runtime pool takes resume requests (D7).
	ResumeSubject = root + ".runtime.resume"
	// ClaimPrefix starts every subject of the claims stream.
	ClaimPrefix = root + ".claim"
	// ClaimFramePrefix starts the subjects of a Client claim's frames:
	// <prefix>.<session>.<call token>.<claim id>.
	ClaimFramePrefix = ClaimPrefix + ".wait"
	// LeasePrefix starts the (never used) subject a liveness lease
	// filters on: <prefix>.<role>.<id>, so the role is a token NATS
	// permissions can match.
	LeasePrefix = ClaimPrefix + ".lease"
	// WaitPrefix starts the subjects on which the worker owning a wait
	// takes its caller's requests: <prefix>.<owner lease>.<verb>.
	WaitPrefix = ServicePrefix + ".wait"
	// OutcomePrefix starts the reply subjects of waterfall requests,
	// <prefix>.<worker id>.<request id>: answerers reply there, apart from
	// the worker's own _INBOX, which only the server and the worker write.
	OutcomePrefix = root + ".outcome"
)

// The roles of liveness leases (package lease), each one token of the
// lease's subject <LeasePrefix>.<role>.<id> and of its name.
const (
	LeaseWorker = "worker" // a question worker's lease on its waits
	LeaseCaller = "caller" // an agent Client's lease on its calls
	LeaseRoot   = "root"   // a runtime instance's root lease (D7)
)

// The endpoints of the userQuestions service, each served on
// <ServicePrefix>.<endpoint>.
const (
	EndpointAsk      = "ask"
	EndpointAskTimed = "askTimed"
	EndpointInflight = "inflight"
	EndpointAnswer   = "answer"
	EndpointView     = "view"
)

// The durable consumers on SESSIONS that workers, and notifiers, share.
// Only their owners may create or pull from them; every other role is
// denied them by name (package auth), since a consumer name is one token
// no wildcard narrows.
const (
	ProjectionDurable = "projection"
	// NotifyDurable is the one notifier processes share (package notify).
	NotifyDurable = "notify"
	// RepliesDurable delivers every message of the calls' reply subjects
	// to the workers, which make sure a runtime reads each reply queued
	// there (D7, package worker): the follow-up of an accepted late
	// answer is durable, not the request that queued it.
	RepliesDurable = "replies"
)

// Wildcards over every Session's subject of one kind: the stream filters,
// and what NATS permissions grant (package auth).
const (
	AllEvents   = sessionPrefix + "*." + eventsSuffix
	AllInboxes  = sessionPrefix + "*." + inboxSuffix
	AllAsks     = sessionPrefix + "*." + askSuffix
	AllCancels  = sessionPrefix + "*." + cancelSuffix
	AllDiscards = sessionPrefix + "*." + DiscardSuffix
)

// How JetStream stores a KV bucket b: in the stream <KVStreamPrefix>b,
// each key k on the subject <KVSubjectPrefix>b.k.
const (
	KVStreamPrefix  = "KV_"
	KVSubjectPrefix = "$KV."
)

// MaxIDLength bounds Session and call ids.
const MaxIDLength = 128

var plainID = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// CheckSession rejects a Session id that is empty, too long, or holds
// anything but letters, digits, '-' and '_'. Session ids name subjects and
// KV keys as they are, so an operator can type them.
func CheckSession(id string) error {
	switch {
	case id == "":
		return holdover.New(holdover.CodeBadRequest, "session id is empty")
	case len(id) > MaxIDLength:
		return holdover.Newf(holdover.CodeBadRequest, "session id is %d bytes, over the %d byte limit", len(id), MaxIDLength)
	case !plainID.MatchString(id):
		return holdover.Newf(holdover.CodeBadRequest, "session id %q may hold only letters, digits, '-' and '_'", id)
	}
	return nil
}

// Token turns any non-empty id (a model's tool call id, say) into a string
// that is safe as a subject token, a KV key part and a consumer name. Plain
// ids stay as they are; others become '=' followed by their unpadded
// base64url form, which no plain id starts with, so Token is one-to-one.
func Token(id string) (string, error) {
	switch {
	case id == "":
		return "", holdover.New(holdover.CodeBadRequest, "id is empty")
	case len(id) > MaxIDLength:
		return "", holdover.Newf(holdover.CodeBadRequest, "id is %d bytes, over the %d byte limit", len(id), MaxIDLength)
	case plainID.MatchString(id):
		return id, nil
	}
	return "=" + base64.RawURLEncoding.EncodeToString([]byte(id)), nil
}

// FromToken reverses [Token].
func FromToken(tok string) (string, error) {
	enc, ok := strings.CutPrefix(tok, "=")
	if !ok {
		if !plainID.MatchString(tok) {
			return "", holdover.Newf(holdover.CodeBadRequest, "%q is not a token", tok)
		}
		return tok, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return "", holdover.Wrapf(err, holdover.CodeBadRequest, "%q is not a token", tok)
	}
	return string(raw), nil
}

// SessionSubject returns holdover.session.<sid>.<suffix> after checking sid.
func SessionSubject(sid, suffix string) (string, error) {
	if err := CheckSession(sid); err != nil {
		return "", err
	}
	return sessionPrefix + sid + "." + suffix, nil
}

// SessionFromSubject returns the Session id of a holdover.session.<sid>.… subject.
func SessionFromSubject(subject string) (string, bool) {
	rest, ok := strings.CutPrefix(subject, sessionPrefix)
	if !ok {
		return "", false
	}
	sid, _, ok := strings.Cut(rest, ".")
	return sid, ok && sid != ""
}

// Per-Session subject suffixes.
const (
	eventsSuffix = "events"
	inboxSuffix  = "inbox"
	askSuffix    = "ask"
	cancelSuffix = "ask.cancel"
	// DiscardSuffix names the core subject where a Session's live root
	// takes discard requests (package runtime).
	DiscardSuffix = "discard"
)

// EventsSubject is the Session log subject of sid.
func EventsSubject(sid string) (string, error) { return SessionSubject(sid, eventsSuffix) }

// InboxSubject is the durable inbox subject of sid, where steered
// messages other than late replies are queued.
func InboxSubject(sid string) (string, error) { return SessionSubject(sid, inboxSuffix) }

// ReplySubject is the inbox subject of the late replies to call callID of
// sid: holdover.session.<sid>.inbox.<call token>. Its last message is the
// call's reply reservation (D8): a reply, or a marker that releases or
// restores one.
func ReplySubject(sid, callID string) (string, error) {
	tok, err := Token(callID)
	if err != nil {
		return "", err
	}
	return SessionSubject(sid, inboxSuffix+"."+tok)
}

// ParseReplySubject returns the Session and the call of a reply subject,
// reversing [ReplySubject]; anything else is BAD_REQUEST.
func ParseReplySubject(subject string) (sid, callID string, err error) {
	rest, ok := strings.CutPrefix(subject, sessionPrefix)
	sid, tok, found := strings.Cut(rest, "."+inboxSuffix+".")
	if !ok || !found || strings.Contains(tok, ".") {
		return "", "", holdover.Newf(holdover.CodeBadRequest, "%q is not a reply subject", subject)
	}
	if err := CheckSession(sid); err != nil {
		return "", "", err
	}
	if callID, err = FromToken(tok); err != nil {
		return "", "", err
	}
	return sid, callID, nil
}

// ReplySubjects matches the reply subject of every call of every Session.
const ReplySubjects = sessionPrefix + "*." + inboxSuffix + ".*"

// SessionSubjects are the subjects of the SESSIONS stream: every
// Session's log, inbox and reply subjects.
var SessionSubjects = []string{AllEvents, AllInboxes, ReplySubjects}

// InboxSubjects are the subjects a reader of sid's inbox filters on: the
// Session's own inbox subject and every per-call reply subject.
func InboxSubjects(sid string) ([]string, error) {
	subject, err := InboxSubject(sid)
	if err != nil {
		return nil, err
	}
	return []string{subject, subject + ".*"}, nil
}

// SessionWildcard matches every subject of sid, holdover.session.<sid>.>:
// its log, its inbox and its reply subjects, all in SESSIONS. A write
// fenced on its last sequence is stored only if nothing at all happened in
// the Session since the message at that sequence.
func SessionWildcard(sid string) (string, error) { return SessionSubject(sid, ">") }

// AskSubject is the core subject where waterfall requests for sid go to
// the Clients watching it.
func AskSubject(sid string) (string, error) { return SessionSubject(sid, askSuffix) }

// CancelSubject is the core subject where the worker tells Clients a
// request of sid ended.
func CancelSubject(sid string) (string, error) { return SessionSubject(sid, cancelSuffix) }

// Key joins KV key parts, each already checked or tokenised, with '.'.
func Key(parts ...string) string { return strings.Join(parts, ".") }
