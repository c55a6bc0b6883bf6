package auth

import (
	"strings"
	"sync"

	"github.com/holdover-dev/holdover"
)

// A JetStream consumer's creator chooses the subject the server publishes
// its messages to (deliver_subject), and a pull or direct-get request's
// sender chooses where the server sends what it reads (the request's
// reply subject), whatever the creator's own publish permissions say:
// nats-server checks neither (docs/permissions.md, "Indirect paths").
// What it does enforce is the reply subject of what it sends on those
// paths: a message a consumer delivers always replies to $JS.ACK…, and a
// direct get's or any API response replies to nothing. A process's own
// requests reply under its role's inbox prefix, the only subjects that
// role may subscribe to. So the reply subject tells a request a process
// sent from a stored message that JetStream replayed, and, under
// authentication, which role sent it.

// inboxRoot starts every reply subject a connection's own requests carry:
// nats.go's default inbox prefix, and the root of each role's
// ([Role.InboxPrefix]).
const inboxRoot = "_INBOX."

// CheckOrigin refuses a request on subject whose reply subject says a
// process did not send it itself: one that JetStream delivered or sent
// (a $JS.ACK reply, or none), or one whose reply is under the inbox
// prefix of a role that may not publish subject. A request from a
// connection without a role (no authentication: nats.go's own inbox
// prefix) passes. The error has code BAD_REQUEST; the caller sends no
// reply, since there is nobody to send it to, and counts the refusal.
func CheckOrigin(subject, reply string) error {
	rest, ok := strings.CutPrefix(reply, inboxRoot)
	if !ok {
		if reply == "" {
			return holdover.Newf(holdover.CodeBadRequest, "a request on %s without a reply subject: a stored message that a direct get or an API response sent there", subject)
		}
		return holdover.Newf(holdover.CodeBadRequest, "a request on %s replying to %s, not an inbox: a stored message that a JetStream consumer delivered there", subject, reply)
	}
	name, _, _ := strings.Cut(rest, ".")
	r := Role(name)
	if !r.Known() || r.MayPublish(subject) {
		return nil
	}
	return holdover.Newf(holdover.CodeBadRequest, "a request on %s from the %s role, which may not send it", subject, r)
}

// MayPublish reports whether role r's permissions let it publish subject:
// an allow rule matches it and no deny rule does.
func (r Role) MayPublish(subject string) bool {
	p, ok := compiled()[r]
	if !ok {
		return false
	}
	return matchesAny(p.Pub, subject) && !matchesAny(p.DenyPub, subject)
}

// compiled holds every role's permissions, built once: a request's check
// must not rebuild the tables.
var compiled = sync.OnceValue(func() map[Role]Permissions {
	out := make(map[Role]Permissions, len(Roles))
	for _, r := range Roles {
		out[r] = Of(r)
	}
	return out
})

func matchesAny(rules []Rule, subject string) bool {
	for _, rule := range rules {
		if subjectMatches(rule.Subject, subject) {
			return true
		}
	}
	return false
}

// subjectMatches reports whether the literal subject matches the NATS
// subject pattern: '*' matches one token, a final '>' one or more.
func subjectMatches(pattern, subject string) bool {
	for {
		p, prest, pmore := strings.Cut(pattern, ".")
		s, srest, smore := strings.Cut(subject, ".")
		switch {
		case p == ">" && !pmore:
			return true
		case p != "*" && p != s:
			return false
		case !pmore || !smore:
			return pmore == smore
		}
		pattern, subject = prest, srest
	}
}
