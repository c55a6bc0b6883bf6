package auth

import (
	"slices"
	"strings"
	"time"

	"github.com/holdover-dev/holdover/streams"
)

// Role is one kind of Holdover process, and the NATS rights it holds.
// Every process of a role connects with that role's credentials; NATS
// permissions are a user's, so the processes of one role are not told
// apart from each other (docs/design.md, "Least privilege on NATS").
type Role string

// The roles.
const (
	// Worker folds Session logs into the projection and serves the
	// userQuestions service: waits, claims' frames, late answers.
	Worker Role = "worker"
	// Gateway carries browser Clients: it calls the Client-facing
	// endpoints, holds its Clients' claims and reads Sessions and the
	// projection. It never appends an event and never writes KV.
	Gateway Role = "gateway"
	// Agent is an agent runtime: it appends its Sessions' events, asks
	// questions, reads its inbox, holds its leases and joins the resume
	// pool. It never answers, discards or writes the projection, and
	// deletes no claim, lease or shared durable; it may delete a reader's
	// consumer on SESSIONS, another runtime's too (names are one token),
	// which that reader makes again and catches up from.
	Agent Role = "agent"
	// Operator reads: stream and consumer info, single messages and KV
	// values by direct get, the service's discovery. It changes nothing
	// and creates no consumer, so however it is used it takes nothing
	// from the consumers the other roles need (NATS bounds them per
	// stream and account, never per role).
	Operator Role = "operator"
	// Notifier follows the Session logs through its own shared durable and
	// posts new and pending questions to webhooks (holdover notify): it
	// reads, and writes nothing on NATS.
	Notifier Role = "notifier"
	// Admin provisions the topology and repairs it (rebuild, replaying the
	// projection): everything in its tenant's account.
	Admin Role = "admin"
)

// Roles lists every role, in the order docs and tests show them.
var Roles = []Role{Worker, Gateway, Agent, Operator, Notifier, Admin}

// Known reports whether r is one of [Roles].
func (r Role) Known() bool {
	for _, k := range Roles {
		if r == k {
			return true
		}
	}
	return false
}

// InboxPrefix is the prefix of the reply subjects of role r's
// connections (nats.CustomInboxPrefix): a role may subscribe only below
// its own, so no role reads another's replies.
func (r Role) InboxPrefix() string { return "_INBOX." + string(r) }

// Rule is one subject a role may (or may not) use, and why.
type Rule struct {
	Subject string
	Why     string
}

// Permissions are what a role may publish and subscribe to. A published
// subject is allowed when a Pub rule matches it and no DenyPub rule does;
// deny rules only narrow an allow wildcard, since a consumer or key name
// is one token and no wildcard can match part of it.
type Permissions struct {
	Pub, Sub []Rule
	DenyPub  []Rule
	// Replies, when not empty, says why the role may publish one reply to
	// each request it received, within ReplyWindow, on whatever reply
	// subject the request named (NATS "allow_responses"): for requests it
	// answers at once.
	Replies string
}

// ReplyWindow bounds how long after a request a role with
// [Permissions.Replies] may still reply to it.
const ReplyWindow = time.Minute

// The subjects of the JetStream API and its events.
const (
	jsAPI      = "$JS.API."
	jsAck      = "$JS.ACK."
	jsFC       = "$JS.FC."
	advisories = "$JS.EVENT.ADVISORY.CONSUMER."
	micro      = "$SRV."
)

// topology lets a role look up every stream and bucket of the topology
// (streams.Open): their configuration and counts, never their messages.
func topology() []Rule {
	const why = "look the topology up (streams.Open): configuration and counts, no messages; it provisions nothing"
	var out []Rule
	for _, n := range []string{streams.SessionsStream, streams.ClaimsStream,
		kvStream(streams.QuestionsBucket), kvStream(streams.RootsBucket)} {
		out = append(out, Rule{jsAPI + "STREAM.INFO." + n, why})
	}
	return out
}

func kvStream(bucket string) string { return streams.KVStreamPrefix + bucket }
func kvKeys(bucket string) string   { return streams.KVSubjectPrefix + bucket + ".>" }

// directGet lets a role read single messages of stream: by sequence, and
// the last one of a subject (a KV key's value).
func directGet(stream, why string) []Rule {
	return []Rule{
		{jsAPI + "DIRECT.GET." + stream, why},
		{jsAPI + "DIRECT.GET." + stream + ".>", why},
	}
}

// orderedRead lets a role read stream through ordered consumers of its own
// that filter on filter: create (the filter is a token of the create
// subject, so no other filter is allowed), pull, look up, and delete the
// one it replaces when it resets. Names are one token, so the delete
// reaches other readers' ordered consumers too (they reset and go on);
// [workerDurables] keeps the shared durables out of reach.
func orderedRead(stream, filter, why string) []Rule {
	return []Rule{
		{jsAPI + "CONSUMER.CREATE." + stream + ".*." + filter, why},
		{jsAPI + "CONSUMER.MSG.NEXT." + stream + ".*", why},
		{jsAPI + "CONSUMER.INFO." + stream + ".*", why},
		{jsAPI + "CONSUMER.DELETE." + stream + ".*", why},
	}
}

// kvWatch lets a role watch bucket: the KV watcher is a push consumer
// created on the legacy ephemeral endpoint, which carries no filter, with
// flow control answered on $JS.FC, and deleted when the watch stops. A KV
// stream has no durable consumers.
func kvWatch(bucket, why string) []Rule {
	s := kvStream(bucket)
	return []Rule{
		{jsAPI + "CONSUMER.CREATE." + s, why},
		{jsAPI + "CONSUMER.CREATE." + s + ".>", why},
		{jsAPI + "CONSUMER.INFO." + s + ".*", why},
		{jsAPI + "CONSUMER.DELETE." + s + ".*", why},
		{jsFC + s + ".>", why},
	}
}

// holdLease lets a role hold leases of leaseRole on the claims stream: the
// lease's subject names its role, and the subject is a token of the
// consumer's create subject.
func holdLease(leaseRole, why string) Rule {
	return Rule{jsAPI + "CONSUMER.CREATE." + streams.ClaimsStream + ".*." + streams.LeasePrefix + "." + leaseRole + ".*", why}
}

// lookupLeases lets a role look leases and claims up by name.
func lookupLeases(why string) Rule {
	return Rule{jsAPI + "CONSUMER.INFO." + streams.ClaimsStream + ".*", why}
}

// leaseEnds lets a role hear that a lease or claim ended.
func leaseEnds(why string) Rule {
	return Rule{advisories + "DELETED." + streams.ClaimsStream + ".*", why}
}

// sessionConsumers lets a role that owns shared durables on SESSIONS use
// them and read Session logs through ordered consumers: consumers of any
// name and filter (workerDurables keeps other roles' durables out of
// reach), pulled and acknowledged, looked up, and deleted when a reader
// replaces one. what says which durables and reads.
func sessionConsumers(what string) []Rule {
	s := streams.SessionsStream
	return []Rule{
		{jsAPI + "CONSUMER.CREATE." + s + ".>", what},
		{jsAPI + "CONSUMER.DURABLE.CREATE." + s + ".*", what + ", on servers that create durables there"},
		{jsAPI + "CONSUMER.INFO." + s + ".*", "look its consumers up"},
		{jsAPI + "CONSUMER.MSG.NEXT." + s + ".*", "pull Session events"},
		{jsAPI + "CONSUMER.DELETE." + s + ".*", "delete the ordered consumer a reader replaces when it resets (never a shared durable: denied below)"},
		{jsAck + s + ".>", "acknowledge the events it handled"},
	}
}

// sweepConsumers lets the worker list the consumers of every stream of the
// topology and delete those of the KV streams, as it does on SESSIONS and
// CLAIMS already (package worker, sweep.go).
func sweepConsumers(why string) []Rule {
	var out []Rule
	for _, s := range []string{streams.SessionsStream, streams.ClaimsStream, kvStream(streams.QuestionsBucket), kvStream(streams.RootsBucket)} {
		out = append(out, Rule{jsAPI + "CONSUMER.LIST." + s, why})
	}
	return append(out, Rule{jsAPI + "CONSUMER.DELETE." + kvStream(streams.QuestionsBucket) + ".*", "end a consumer of the projection that would outlive its reader, once idle past --consumer-idle"})
}

// sharedDurables are the durable consumers on SESSIONS that the processes
// of one role share, by the role that owns them.
var sharedDurables = map[string]Role{
	streams.ProjectionDurable: Worker,
	streams.RepliesDurable:    Worker,
	streams.NotifyDurable:     Notifier,
}

// workerDurables denies a role the durables on SESSIONS other roles share
// (all of them for a role that owns none), which its wildcards over
// consumer names would otherwise reach: creating one of that name would
// change it, pulling from it would take events from its owners, deleting
// it would replay the log to them.
func workerDurables(own ...Role) []Rule {
	const why = "another role's shared consumer: re-creating it would change it, pulling from it would take events from its owners, deleting it would replay the log to them"
	var out []Rule
	for _, d := range []string{streams.ProjectionDurable, streams.RepliesDurable, streams.NotifyDurable} {
		if slices.Contains(own, sharedDurables[d]) {
			continue
		}
		s := streams.SessionsStream + "." + d
		out = append(out,
			Rule{jsAPI + "CONSUMER.CREATE." + s, why},
			Rule{jsAPI + "CONSUMER.CREATE." + s + ".>", why},
			Rule{jsAPI + "CONSUMER.DURABLE.CREATE." + s, why},
			Rule{jsAPI + "CONSUMER.MSG.NEXT." + s, why},
			Rule{jsAPI + "CONSUMER.DELETE." + s, why},
			Rule{jsAck + s + ".>", why},
		)
	}
	return out
}

// durablesKept denies the owners of shared durables their deletion:
// deleting one replays the whole log, which is an operator's repair
// (admin), never an owner's doing.
func durablesKept(owner Role) []Rule {
	var out []Rule
	for d, r := range sharedDurables {
		if r == owner {
			out = append(out, Rule{jsAPI + "CONSUMER.DELETE." + streams.SessionsStream + "." + d, "deleting a shared durable replays the whole log: an admin's repair"})
		}
	}
	slices.SortFunc(out, func(a, b Rule) int { return strings.Compare(a.Subject, b.Subject) })
	return out
}

func inbox(r Role) Rule {
	return Rule{r.InboxPrefix() + ".>", "replies to its own requests, JetStream acks and deliveries: only under its own inbox prefix"}
}

func service(endpoint string) string { return streams.ServicePrefix + "." + endpoint }

// Of returns role r's permissions. It panics on an unknown role, which is
// a programming error: roles come from [Roles] or [ParseRole].
func Of(r Role) Permissions {
	switch r {
	case Worker:
		return worker()
	case Gateway:
		return gateway()
	case Agent:
		return agent()
	case Operator:
		return operator()
	case Notifier:
		return notifier()
	case Admin:
		return Permissions{
			Pub: []Rule{{">", "provisioning (streams, buckets) and repair (holdover rebuild, replaying the projection): everything in its account"}},
			Sub: []Rule{{">", "everything in its account"}},
		}
	}
	panic("auth: unknown role " + string(r))
}

func worker() Permissions {
	p := Permissions{
		Pub: concat(
			topology(),
			sessionConsumers("the shared durable (projection) and ordered reads of one Session's log (a fold catching up, a late answer's check)"),
			directGet(streams.SessionsStream, "a Session's last event: is the View caught up (D6); a reply subject's last message: the call's reservation (D8)"),
			[]Rule{{streams.KVSubjectPrefix + streams.QuestionsBucket + ".*", "write the projection, compare-and-set (D1)"}},
			directGet(kvStream(streams.QuestionsBucket), "read Views"),
			directGet(kvStream(streams.RootsBucket), "check a caller is the live root (M9)"),
			kvWatch(streams.RootsBucket, "keep the live roots cached (M9)"),
			[]Rule{
				{streams.ReplySubjects, "queue an accepted late answer on its call's reply subject, one write that is the reservation and the reply (D6, D8); and, as the projection worker, the markers that release or restore a reply (D8)"},
			},
			[]Rule{
				holdLease(streams.LeaseWorker, "hold its lease on its waits"),
				{jsAPI + "CONSUMER.DELETE." + streams.ClaimsStream + ".*", "delete a claim once its wait settled, and its own lease when it stops (names are one token: this reaches every consumer of CLAIMS)"},
				{jsAPI + "CONSUMER.NAMES." + streams.ClaimsStream, "list claims and leases after a reconnect (reconcile)"},
				{jsAPI + "CONSUMER.LIST." + streams.ClaimsStream, "list claims and leases after a reconnect (reconcile)"},
				{streams.ClaimFramePrefix + ".>", "send a claim its frames: remaining time, closed (W2)"},
			},
			sweepConsumers("end the consumers that would outlive their readers once idle past --consumer-idle (a durable no role shares, a long inactive threshold): list them"),
			[]Rule{
				lookupLeases("look callers', roots' and claims' leases up"),
				{streams.AllAsks, "send waterfall requests to the Session's answerers (W1)"},
				{streams.AllCancels, "tell answerers a request ended"},
				{streams.ResumeSubject, "ask the resume pool to resume a Session after an answer (D7)"},
			},
		),
		Sub: concat(
			[]Rule{
				inbox(Worker),
				{advisories + "*." + streams.ClaimsStream + ".*", "hear of claims made on its waits (W2) and of leases and claims that ended, on one subscription"},
				{streams.OutcomePrefix + ".*.*", "answerers' outcomes of its waterfall requests"},
				{streams.ReplySubjects, "hear a reply released on its reply subject while it follows a root that may die before reading it (D7)"},
				{streams.WaitPrefix + ".*.*", "its callers' abort and status requests"},
				{micro + ">", "answer service discovery (nats micro ls)"},
				leaseEnds("hear that a caller, a root or a claim ended"),
			},
		),
		DenyPub: append(durablesKept(Worker), workerDurables(Worker)...),
	}
	for _, ep := range []string{streams.EndpointAsk, streams.EndpointAskTimed, streams.EndpointInflight, streams.EndpointAnswer, streams.EndpointView} {
		p.Sub = append(p.Sub, Rule{service(ep), "serve the userQuestions endpoint " + ep})
	}
	for _, r := range Roles {
		if r != Worker {
			p.Pub = append(p.Pub, Rule{r.InboxPrefix() + ".>", "reply to " + string(r) + " requests, some long after they came (a timed wait, a blocking ask)"})
		}
	}
	return p
}

func gateway() Permissions {
	return Permissions{
		Pub: concat(
			[]Rule{
				{service(streams.EndpointAnswer), "a Client's late answer (D6)"},
				{service(streams.EndpointView), "a Session's first View"},
				{service(streams.EndpointInflight), "the requests in flight when a Client starts watching"},
				{streams.AllDiscards, "a Client's 'discard the queued reply' (P5), answered by the live root"},
				{streams.OutcomePrefix + ".*.*", "a Client's outcome of a waterfall request (settle, reject, delegate)"},
			},
			topology(),
			orderedRead(streams.SessionsStream, streams.AllEvents, "send a watched Session's events"),
			directGet(streams.SessionsStream, "a watched Session's last event: where its history ends"),
			orderedRead(kvStream(streams.QuestionsBucket), streams.KVSubjectPrefix+streams.QuestionsBucket+".*", "follow a watched Session's View"),
			[]Rule{
				{jsAPI + "CONSUMER.CREATE." + kvStream(streams.QuestionsBucket) + ".*", "the inbox feed: one ordered consumer over the Views of every granted Session (several filters, which the create subject does not carry)"},
				{jsAPI + "CONSUMER.CREATE." + kvStream(streams.QuestionsBucket) + ".*." + streams.KVSubjectPrefix + streams.QuestionsBucket + ".>", "the inbox feed of a token granting every Session"},
			},
			directGet(kvStream(streams.QuestionsBucket), "a watched Session's current View"),
			[]Rule{
				{jsAPI + "CONSUMER.CREATE." + streams.ClaimsStream + ".*." + streams.ClaimFramePrefix + ".>", "hold its Clients' claims (W2)"},
				{jsAPI + "CONSUMER.DELETE." + streams.ClaimsStream + ".*", "release a claim to delegate or tear down (W4) (names are one token: this reaches every consumer of CLAIMS)"},
				lookupLeases("look up the worker owning a request"),
			},
		),
		Sub: concat(
			[]Rule{
				inbox(Gateway),
				{streams.AllAsks, "waterfall requests of the Sessions its Clients watch"},
				{streams.AllCancels, "end notices of those requests"},
				leaseEnds("hear that the worker owning a request is gone"),
			},
		),
		DenyPub: workerDurables(),
	}
}

func agent() Permissions {
	return Permissions{
		Pub: concat(
			[]Rule{{streams.AllEvents, "append its Sessions' events, fenced by the expected last sequence"}},
			topology(),
			orderedRead(streams.SessionsStream, streams.AllEvents, "read a Session's log to resume it"),
			directGet(streams.SessionsStream, "a Session's last event"),
			orderedRead(streams.SessionsStream, streams.AllInboxes, "read a Session's own inbox subject (steered messages)"),
			[]Rule{{jsAPI + "CONSUMER.CREATE." + streams.SessionsStream + ".*", "read Sessions' inboxes: a consumer over the inbox subjects and calls' reply subjects of one Session (ordered) or of up to 64 (inbox-<instance>-<n>, its filters updated by the same request) — several filters, which the create subject does not carry; the shared durables' names are denied below"}},
			[]Rule{{streams.KVSubjectPrefix + streams.RootsBucket + ".*", "register and release itself as a Session's live root (M9)"}},
			directGet(kvStream(streams.RootsBucket), "read the live root"),
			[]Rule{
				{service(streams.EndpointAsk), "ask a question (M1)"},
				{service(streams.EndpointAskTimed), "ask a timed question (M2)"},
				{service(streams.EndpointView), "read a Session's View"},
				{service(streams.EndpointInflight), "list requests in flight"},
				{streams.WaitPrefix + ".*.abort", "abort its call at the worker owning it"},
				{streams.WaitPrefix + ".*.status", "ask the worker owning its call whether it is live"},
				holdLease(streams.LeaseCaller, "hold its caller lease"),
				holdLease(streams.LeaseRoot, "hold its root lease (D7)"),
				lookupLeases("look up its own and its workers' leases"),
			},
		),
		Sub: concat(
			[]Rule{
				inbox(Agent),
				{streams.ResumeSubject, "take resume requests in the pool (D7)"},
				{streams.AllDiscards, "take discard requests as a Session's live root (P5)"},
				leaseEnds("hear that a worker owning its call is gone"),
			},
		),
		DenyPub: workerDurables(),
		Replies: "it answers resume and discard requests at once, only those sent from the inbox of a role that may send them (auth.CheckOrigin: a worker's resume, a gateway's discard), never a stored message replayed there nor a request replying to anything but an inbox",
	}
}

func operator() Permissions {
	const read = "read-only JetStream API: nats stream ls/info, consumer ls/info"
	const get = "nats stream get, kv get, holdover inspect and check: direct gets, which create nothing"
	return Permissions{
		Pub: []Rule{
			{jsAPI + "INFO", read},
			{jsAPI + "STREAM.NAMES", read},
			{jsAPI + "STREAM.LIST", read},
			{jsAPI + "STREAM.INFO.*", read},
			{jsAPI + "CONSUMER.NAMES.*", read},
			{jsAPI + "CONSUMER.LIST.*", read},
			{jsAPI + "CONSUMER.INFO.*.*", read},
			{jsAPI + "DIRECT.GET.>", get},
			{jsAPI + "STREAM.MSG.GET.*", get},
			{micro + ">", "nats micro ls, info, stats"},
			{service(streams.EndpointView), "a Session's View through the service"},
			{service(streams.EndpointInflight), "the requests in flight"},
		},
		Sub: []Rule{inbox(Operator)},
	}
}

func notifier() Permissions {
	return Permissions{
		Pub: concat(
			topology(),
			sessionConsumers("its shared durable (notify, or the name --durable gives) and ordered reads of a Session's log"),
			directGet(streams.SessionsStream, "a Session's last event: is the View caught up"),
			directGet(kvStream(streams.QuestionsBucket), "read Views: what a question's call looks like now"),
		),
		Sub:     []Rule{inbox(Notifier)},
		DenyPub: append(durablesKept(Notifier), workerDurables(Notifier)...),
	}
}

func concat(lists ...[]Rule) []Rule {
	var out []Rule
	for _, l := range lists {
		out = append(out, l...)
	}
	return dropDup(out)
}

// dropDup keeps the first rule of each subject.
func dropDup(rules []Rule) []Rule {
	seen := map[string]bool{}
	out := rules[:0:0]
	for _, r := range rules {
		if !seen[r.Subject] {
			seen[r.Subject] = true
			out = append(out, r)
		}
	}
	return out
}
