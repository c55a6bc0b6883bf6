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
(` + "`CONSUMER.MSG.NEXT`" + `), a direct get or any JetStream API request (where
the server sends what it read, or its answer) against the requester's
publish permissions. What the server does fix is the reply subject of
what it sends on those paths: a message a consumer delivers always
replies to ` + "`$JS.ACK.…`" + `, and a direct get's or any API response replies
to nothing. So:

- **The streams are in an account no client is in.** Each tenant is two
  accounts: its data account holds the streams and buckets and no user
  (but, for a restore, whose chunks cannot cross an import, the expiring
  one ` + "`holdover auth restore-creds`" + ` makes, which may only snapshot and
  restore),
  its clients account holds every role's user and no JetStream, and
  imports from the data account only the subjects listed under
  "Accounts" below (each export requires an activation token made for
  that tenant's clients account alone). A request crossing the import
  reaches the data account with its reply replaced by a one-time
  ` + "`_R_.…`" + ` subject, so no reply the server sends there lands in a stream:
  a direct get, a pull or an API request whose reply names
  ` + "`$KV.userQuestions.<sid>`" + `, ` + "`$KV.liveRoots.<sid>`" + `, a Session's log or reply
  subject or a claim's frames writes nothing. In the clients account the
  answer goes to the subject the requester chose, where no stream is, and
  the import of that subject carries it on under its ` + "`_R_.…`" + ` subject, not
  the chosen one. Only inboxes and advisories cross back, so a push
  consumer delivering to any other subject (a service endpoint, a stream's
  subject) finds no subscriber and delivers nothing.
- **Requests are served by origin.** A process serves a request only
  when its reply subject is an inbox (` + "`_INBOX.…`" + `) and, if it is a role's
  (` + "`_INBOX.<role>.…`" + `), only when that role may publish the subject
  (` + "`auth.CheckOrigin`" + `). The worker applies it on ` + "`holdover.q.*`" + `, its waits'
  ` + "`holdover.q.wait.<lease>.abort|status`" + ` and its discovery's ` + "`$SRV.PING|INFO|STATS`" + `
  (whose reply it would otherwise send with its own rights, into the
  projection say); an agent runtime, Go or TypeScript (` + "`src/origin.ts`" + `, over
  a table generated from this one), on ` + "`holdover.runtime.resume`" + ` and
  ` + "`holdover.session.<sid>.discard`" + `, which it answers through NATS
  ` + "`allow_responses`" + `: one reply to whatever subject the request names,
  granted past its deny rules. A stored message that a pull or a direct
  get replays there (replying to ` + "`$JS.ACK.…`" + ` or to nothing), and a request
  replying into a stream (a gateway's discard request replying to another
  Session's reply subject, which the live root's answer would be stored
  in), are refused with no reply, counted in
  ` + "`holdover_requests_refused_origin_total{endpoint}`" + ` (the agent's with
  ` + "`holdover agent --metrics-addr`" + `) and logged at warn; nothing changes.
  Publish rights on the requesters' inboxes instead of ` + "`allow_responses`" + `
  would be worse: an agent reads a claim's deliver subject with
  ` + "`CONSUMER.INFO`" + ` and could forge frames into a gateway's claims.
  ` + "`go test -run TestIndirectDenials -v ./auth`" + ` shows each attack denied,
  one row per stream a reply could write into and per request a runtime
  answers; the conformance run has the runtime's rows for each runtime.
- **Only the worker decides what a claim is.** A consumer on CLAIMS named
  like a claim counts only if it is a push consumer on that claim's own
  frame subject, not durable, with an inactive threshold (as
  ` + "`lease.HoldConsumer`" + ` makes it; only the gateway may create consumers on
  frame subjects). Anything else (a durable pull consumer an agent makes
  through its lease right) is deleted, claims no wait and is counted in
  ` + "`holdover_claims_forged_total`" + `: the wait ends at its deadline
  (` + "`go test -run TestAForgedClaimHoldsNoWait ./worker`" + `).
- **Consumers are bounded per stream, and ended once they would outlive
  their reader.** NATS bounds consumers per stream only: by the stream's
  ` + "`max_consumers`" + ` (` + "`holdover provision --max-consumers`" + `) and by the account's
  consumer limit, which nats-server 2.15 applies to each stream of the
  account alone, never to the account's total (the data account's
  ` + "`jetstream.consumer`" + `, ` + "`holdover auth init --max-consumers`" + `, default 50,000).
  No rule can give a role a share of a stream: a consumer's name is one
  token of the create subject, and whether it is durable and how long it
  outlives its reader are in the request's body (` + "`durable_name`" + `,
  ` + "`inactive_threshold`" + `), which no permission reads. So a role that may read
  a stream may create consumers of any name there, the notifier too (its
  ` + "`notify`" + ` durable's create subject,
  ` + "`…CREATE.SESSIONS.notify.holdover.session.*.events`" + `, has the form of its
  ordered reads'). A flood stops at the stream's bound
  (` + "`maximum consumers limit reached`" + `), in its own tenant. What it made
  stays only while in use: the worker deletes any consumer on the topology's streams that the
  server would not end soon after its last use (a durable other than
  ` + "`projection`" + `, ` + "`replies`" + `, ` + "`notify`" + ` and those ` + "`holdover provision --durable`" + ` declares,
  or one whose inactive threshold is longer than
  ` + "`question-worker --consumer-idle`" + `, 10 minutes) once it has been idle that
  long (no pull waiting, no push subscriber, nothing delivered or
  acknowledged since), counted in ` + "`holdover_consumers_swept_total{stream}`" + `
  and logged. ` + "`go test -run TestAFloodOfConsumersIsBounded -v ./auth`" + ` has an
  agent, a gateway and a notifier each flood every stream it may create on, keeping every
  consumer in use, until refused at the bound; another tenant's agent
  starts a Session and asks meanwhile; once the flood stops the worker
  deletes it and the flooded tenant's agent starts a Session and asks.
  What NATS cannot bound: while its maker keeps each consumer of a flood in
  use (a pull waiting on each, a subscriber on each deliver subject), the
  stream stays at its bound, and the tenant's new readers of that stream
  are refused until the flood stops (on SESSIONS an agent's inbox reader
  or a gateway's watch; on CLAIMS leases and claims, so timed asks).
  nats-server 2.15 has no consumer quota per user, role or connection.
- **The operator creates no consumer.** Its rights are stream and
  consumer info, direct gets and ` + "`STREAM.MSG.GET`" + `, so however it is used it
  takes none of a stream's bound from the roles that need it.
  ` + "`nats stream get`" + `, ` + "`nats kv get`" + `, ` + "`holdover inspect`" + ` and ` + "`check`" + ` (which
  read the log by direct get, ` + "`sessionlog.NewDirect`" + `) work on its credentials; every nats
  CLI read that makes a consumer (` + "`stream view`" + `, ` + "`kv watch`" + `, ` + "`kv history`" + `,
  ` + "`kv ls <bucket>`" + `) takes admin's: docs/operations.md lists which command
  takes which. A flood of creates is refused one by one and leaves every
  stream's consumers as they were, and agents still start Sessions after
  it (` + "`go test -run TestAnOperatorFloodTakesNoConsumer ./auth`" + `). The
  operator's create subjects could not carry a share of their own either:
  the CLI creates its readers' consumers with the named, filtered form,
  which takes a durable as readily as an ephemeral.
- **A reader's consumer is anyone's to delete, and costs nothing.** A
  consumer name is one token and a permission matches whole tokens, so no
  rule can let a runtime delete its own ` + "`inbox-<instance>-<n>`" + ` and not
  another's: a role that may delete a consumer on SESSIONS (to end the
  ordered consumer it replaces) may delete any but the shared durables,
  which are denied by name; claims and leases are on CLAIMS, which only
  the worker and the gateway may delete on. A reader whose consumer is
  deleted makes it again and delivers what was stored meanwhile, once
  and in order (` + "`go test -run TestAnAgentDeletesAnotherRuntimesInboxConsumer ./auth`" + `).

## Accounts

What a tenant's clients account imports from its data account; nothing
else crosses. A service goes to the data account (a request, or a publish
into a stream), a stream comes back from it.

| subject | kind | why |
|---|---|---|
`)
	for _, c := range auth.Crossings() {
		kind := "service"
		if c.Stream {
			kind = "stream"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", c.Subject, kind, c.Why)
	}
	b.WriteString("\n")
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
