package auth_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
)

// permissionsDoc is the page that lists every role's permissions with
// their reasons, made from the table in roles.go.
const permissionsDoc = "../docs/permissions.md"

// The page an operator reads is the table the server enforces: a changed
// permission fails this test until the page is written again with
// HOLDOVER_UPDATE_DOCS=1 go test -run TestPermissionsDoc ./auth.
func TestPermissionsDoc(t *testing.T) {
	want := permissionsPage()
	if os.Getenv("HOLDOVER_UPDATE_DOCS") != "" {
		require.NoError(t, os.WriteFile(permissionsDoc, []byte(want), 0o644))
	}
	have, err := os.ReadFile(permissionsDoc)
	require.NoError(t, err)
	require.Equal(t, want, string(have), "docs/permissions.md is out of date: HOLDOVER_UPDATE_DOCS=1 go test -run TestPermissionsDoc ./auth")
}

func permissionsPage() string {
	var b strings.Builder
	b.WriteString(`# NATS permissions by role

Generated from ` + "`auth/roles.go`" + ` (` + "`HOLDOVER_UPDATE_DOCS=1 go test -run TestPermissionsDoc ./auth`" + `);
the design is in ` + "`docs/design.md`" + `, "Least privilege on NATS". Each role's user JWT
carries exactly these subjects. A subject is allowed when an allow rule
matches it and no deny rule does. Every role's connections use the inbox
prefix ` + "`_INBOX.<role>`" + `.

## Indirect paths

Subject rules cover what a connection publishes itself, not what the
server publishes for it. nats-server v2.15 checks neither a push
consumer's ` + "`deliver_subject`" + ` (its creator chooses where the server
publishes the stream's messages, and the consumer config may arrive in
the body of any create subject) nor the reply subject of a pull
(` + "`CONSUMER.MSG.NEXT`" + `) or direct-get request (where the server sends what
it read) against the creator's publish permissions. What the server does
fix is the reply subject of what it sends on those paths: a message a
consumer delivers always replies to ` + "`$JS.ACK.…`" + `, and a direct get's or
any API response replies to nothing. So:

- **Service requests are checked by origin.** The worker serves a request
  on ` + "`holdover.q.*`" + ` (and on its waits' ` + "`holdover.q.wait.<lease>.abort|status`" + `) only when its reply subject is an inbox
  (` + "`_INBOX.…`" + `) and, if it is a role's (` + "`_INBOX.<role>.…`" + `), only when
  that role may publish the subject (` + "`auth.CheckOrigin`" + `). A stored message
  that a consumer or a direct get replays there is refused with no reply
  and counted in ` + "`holdover_requests_refused_origin_total{endpoint}`" + ` with
  a warning log line; nothing changes. ` + "`go test -run TestIndirectDenials -v ./auth`" + `
  shows each attack denied.
- **Only the worker decides what a claim is.** A consumer on CLAIMS named
  like a claim counts only if it is a push consumer on that claim's own
  frame subject, not durable, with an inactive threshold (as
  ` + "`lease.HoldConsumer`" + ` makes it; only the gateway may create consumers on
  frame subjects). Anything else (a durable pull consumer an agent makes
  through its lease right) is deleted, claims no wait and is counted in
  ` + "`holdover_claims_forged_total`" + `: the wait ends at its deadline
  (` + "`go test -run TestAForgedClaimHoldsNoWait ./worker`" + `).
- **Open.** A direct get's reply subject can also name a stream subject,
  and the server stores the replayed message there: an agent's
  ` + "`$JS.API.DIRECT.GET.SESSIONS`" + ` request replying to ` + "`$KV.userQuestions.<sid>`" + `
  writes that key. No subject rule stops it; closing it needs the
  JetStream data in an account of its own that tenants reach only by
  import. Consumers per role are not bounded either (NATS bounds them per
  account and per stream only), and a role that may delete a consumer on
  SESSIONS may delete any (names are one token).

`)
	section := func(title string, rules []auth.Rule) {
		if len(rules) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s:\n\n| subject | why |\n|---|---|\n", title)
		for _, r := range rules {
			fmt.Fprintf(&b, "| `%s` | %s |\n", r.Subject, r.Why)
		}
		b.WriteString("\n")
	}
	for _, r := range auth.Roles {
		p := auth.Of(r)
		fmt.Fprintf(&b, "## %s\n\n", r)
		section("Publish", p.Pub)
		section("Publish, denied", p.DenyPub)
		section("Subscribe", p.Sub)
		if p.Replies != "" {
			fmt.Fprintf(&b, "Replies: one to each request it receives, within %v, on the request's reply subject: %s.\n\n", auth.ReplyWindow, p.Replies)
		}
	}
	return b.String()
}
