package auth_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/model/scripted"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/worker"
)

// floodLimit is the consumers SESSIONS holds in TestAnOperatorFloodTakesNoConsumer:
// small, so a flood that made even a few would leave an agent none.
const floodLimit = 2

// An operator that creates consumers until the limit (the attack filled
// an account with 993 durables, after which agents' new Sessions and
// holdover inspect failed) makes none: every create subject, ephemeral or
// durable, on every stream, is refused by the server. After it an agent
// still starts a Session (its first event and its inbox consumer, on a
// stream that holds floodLimit consumers) and the operator's inspect still
// reads the Session and its View.
func TestAnOperatorFloodTakesNoConsumer(t *testing.T) {
	env := embeddedtest.StartSecure(t, streams.Config{Memory: true, MaxConsumers: floodLimit})
	ctx := context.Background()
	op := newProber(t, env, env.Tenant, auth.Operator)
	streamsOf := []string{streams.SessionsStream, streams.ClaimsStream,
		streams.KVStreamPrefix + streams.QuestionsBucket, streams.KVStreamPrefix + streams.RootsBucket}
	consumers := func() int {
		n := 0
		for _, s := range streamsOf {
			info, err := env.JS.Stream(ctx, s)
			require.NoError(t, err)
			n += info.CachedInfo().State.Consumers
		}
		return n
	}
	before := consumers()

	refused := 0
	for i := range 5 * floodLimit {
		for _, s := range streamsOf {
			name := fmt.Sprintf("flood%d", i)
			cfg := map[string]any{"stream_name": s, "config": map[string]any{"durable_name": name, "ack_policy": "none"}}
			ephemeral := map[string]any{"stream_name": s, "config": map[string]any{"ack_policy": "none", "inactive_threshold": int64(1 << 62)}}
			for _, try := range []func(ctx context.Context, p *prober) error{
				api(jsAPI("CONSUMER.CREATE."+s), ephemeral),
				api(jsAPI("CONSUMER.CREATE."+s+"."+name), cfg),
				api(jsAPI("CONSUMER.CREATE."+s+"."+name+".holdover.session.s1.events"), cfg),
				api(jsAPI("CONSUMER.DURABLE.CREATE."+s+"."+name), cfg),
			} {
				denied, detail := op.try(try)
				require.True(t, denied, "the operator created a consumer on %s: %s", s, detail)
				require.Contains(t, detail, "Permissions Violation")
				refused++
			}
		}
	}
	require.Equal(t, before, consumers(), "after %d refused creates", refused)

	// An agent starts a new Session: its first event, then the consumer
	// its runtime reads the Session's inbox with.
	_, agentJS := env.As(t, auth.Agent)
	sessions, err := agentJS.Stream(ctx, streams.SessionsStream)
	require.NoError(t, err)
	seq, err := sessionlog.New(agentJS, sessions).Append(ctx, "s9", 0, events.New(time.Now(), &events.TurnStart{Turn: "t1"}))
	require.NoError(t, err)
	inboxes, err := streams.InboxSubjects("s9")
	require.NoError(t, err)
	_, err = sessions.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Name: "inbox-rt-0", FilterSubjects: inboxes, AckPolicy: jetstream.AckNonePolicy})
	require.NoError(t, err, "the agent's inbox consumer")

	// The operator inspects it: the log, and the View against its fold.
	_, opJS := env.As(t, auth.Operator)
	opSessions, err := opJS.Stream(ctx, streams.SessionsStream)
	require.NoError(t, err)
	views, err := opJS.KeyValue(ctx, streams.QuestionsBucket)
	require.NoError(t, err)
	log, err := sessionlog.NewDirect(opJS, opSessions).ReadStored(ctx, "s9", 0)
	require.NoError(t, err)
	require.Len(t, log, 1)
	require.Equal(t, seq, log[0].Seq)
	_, folded, _, err := projection.NewDirectStore(opJS, opSessions, views).Check(ctx, "s9")
	require.NoError(t, err)
	require.Equal(t, seq, folded.LastSeq)
	t.Logf("the operator's %d creates were refused; consumers before %d, after %d", refused, before, consumers())
}

// A consumer name is one token, and a NATS permission matches whole
// tokens, so no rule can give one runtime the delete of its own
// inbox-<instance>-<n> and not another's: an agent may delete any reader's
// consumer on SESSIONS (never the shared durables, a claim or a lease:
// TestDenialMatrix). What holds instead is that such a delete costs the
// reader nothing: runtime a's inbox consumer, deleted by runtime b, is
// made again, and a reads every steered message once, in order, those
// stored while the consumer was gone included.
func TestAnAgentDeletesAnotherRuntimesInboxConsumer(t *testing.T) {
	env := embeddedtest.StartSecure(t, streams.Config{Memory: true})
	ctx := context.Background()
	_, aJS := env.As(t, auth.Agent)
	aSessions, err := aJS.Stream(ctx, streams.SessionsStream)
	require.NoError(t, err)
	reader, err := inbox.NewReader(aSessions, inbox.ReaderConfig{Name: "rta", Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, reader.Close()) })
	got := make(chan string, 8)
	stop, err := reader.Follow(ctx, "s1", 0, func(q inbox.Queued) { got <- q.Message.ID })
	require.NoError(t, err)
	defer stop()
	steer := func(id string) {
		t.Helper()
		_, err := inbox.Publish(ctx, env.JS, "s1", events.Message{ID: id, Role: "user", Content: events.Text(id), Source: events.Source{Kind: events.SourceUser}})
		require.NoError(t, err)
	}
	next := func() string {
		t.Helper()
		select {
		case id := <-got:
			return id
		case <-time.After(patience):
			t.Fatal("runtime a read nothing")
			return ""
		}
	}
	steer("before")
	require.Equal(t, "before", next())

	_, bJS := env.As(t, auth.Agent)
	require.NoError(t, bJS.DeleteConsumer(ctx, streams.SessionsStream, "inbox-rta-0"), "runtime b deletes runtime a's inbox consumer")
	for i := range 3 {
		steer(fmt.Sprintf("after%d", i))
	}
	steer("end")
	// In stream order, so a message read twice would come before "end".
	require.Equal(t, []string{"after0", "after1", "after2", "end"}, []string{next(), next(), next(), next()})
	_, err = env.Topology.Sessions.Consumer(ctx, "inbox-rta-0")
	require.NoError(t, err, "runtime a made its consumer again")
}

// floodCap is the consumers each stream of a tenant holds in
// TestAFloodOfConsumersIsBounded (holdover auth init --max-consumers).
const floodCap = 12

// floodCreate is one form of consumer create a role may send: its API
// subject and filter for the consumer name.
type floodCreate struct {
	stream  string
	subject func(name string) string
	filter  func(name string) string
}

// floods are the create forms each role that may create consumers has, on
// every stream it may create them on.
var floods = map[auth.Role][]floodCreate{
	auth.Agent: {
		{stream: streams.SessionsStream, subject: func(n string) string { return "CONSUMER.CREATE.SESSIONS." + n }},
		{stream: streams.ClaimsStream, subject: func(n string) string { return "CONSUMER.CREATE.CLAIMS." + n + ".holdover.claim.lease.caller." + n },
			filter: func(n string) string { return "holdover.claim.lease.caller." + n }},
	},
	auth.Gateway: {
		{stream: streams.SessionsStream, subject: func(n string) string { return "CONSUMER.CREATE.SESSIONS." + n + ".holdover.session.s1.events" },
			filter: func(string) string { return "holdover.session.s1.events" }},
		{stream: "KV_userQuestions", subject: func(n string) string { return "CONSUMER.CREATE.KV_userQuestions." + n }},
		{stream: streams.ClaimsStream, subject: func(n string) string { return "CONSUMER.CREATE.CLAIMS." + n + ".holdover.claim.wait.s1.call_1." + n },
			filter: func(n string) string { return "holdover.claim.wait.s1.call_1." + n }},
	},
	auth.Notifier: {
		{stream: streams.SessionsStream, subject: func(n string) string { return "CONSUMER.DURABLE.CREATE.SESSIONS." + n }},
	},
}

// A role that may create consumers floods every stream it reads with
// durables, kept in use while it floods (each pushes to a subscription of
// its own), as the attack that filled an account with 993 of them did.
// NATS bounds each stream at the tenant's --max-consumers and refuses the
// rest; another tenant's agent meanwhile starts a Session and asks. Once
// the flood stops, the worker deletes its consumers as idle ones that
// would outlive their reader, and an agent of the flooded tenant starts a
// Session and asks.
func TestAFloodOfConsumersIsBounded(t *testing.T) {
	env := embeddedtest.StartSecureWith(t, streams.Config{Memory: true}, auth.Limits{MaxConsumers: floodCap}, "a", "b")
	ctx := context.Background()
	_, bAdmin := env.AsTenant(t, "b", auth.Admin)
	_, err := streams.Provision(ctx, bAdmin, streams.Config{Memory: true})
	require.NoError(t, err)
	for _, tenant := range []string{"a", "b"} {
		wnc, wjs := env.AsTenant(t, tenant, auth.Worker)
		top, err := streams.Open(ctx, wjs)
		require.NoError(t, err)
		svc := worker.New(wnc, wjs, top, worker.Config{ConsumerIdle: 500 * time.Millisecond, SweepEvery: 100 * time.Millisecond}, slog.New(slog.DiscardHandler))
		opstest.Start(t, ops.Component{Name: "userQuestions", Run: svc.Run})
	}
	consumers := func(js jetstream.JetStream, stream string) (n int, flood int) {
		s, err := js.Stream(ctx, stream)
		require.NoError(t, err)
		for name := range s.ConsumerNames(ctx).Name() {
			n++
			if strings.HasPrefix(name, "flood") {
				flood++
			}
		}
		return n, flood
	}

	for _, role := range []auth.Role{auth.Agent, auth.Gateway, auth.Notifier} {
		t.Run(string(role), func(t *testing.T) {
			attacker := newProber(t, env, "a", role)
			inbox := role.InboxPrefix() + ".flood"
			held, err := attacker.nc.Subscribe(inbox+".>", func(*nats.Msg) {})
			require.NoError(t, err)
			for _, f := range floods[role] {
				var refused error
				for i := 0; refused == nil && i < 3*floodCap; i++ {
					name := fmt.Sprintf("flood-%s-%d", role, i)
					cfg := map[string]any{"durable_name": name, "deliver_subject": inbox + "." + name, "deliver_policy": "new", "ack_policy": "none"}
					if f.filter != nil {
						cfg["filter_subject"] = f.filter(name)
					}
					denied, detail := attacker.try(api(jsAPI(f.subject(name)), map[string]any{"stream_name": f.stream, "config": cfg}))
					require.False(t, denied, "the %s may create consumers on %s: %s", role, f.stream, detail)
					if detail != "ok" {
						refused = errors.New(detail)
					}
				}
				require.ErrorContains(t, refused, "maximum consumers limit reached", "the flood of %s was never refused", f.stream)
				n, flood := consumers(env.JS, f.stream)
				require.LessOrEqual(t, n, floodCap, "%s holds no more than the tenant's bound", f.stream)
				t.Logf("%s flooded %s: %d of its consumers, refused at %d (%s)", role, f.stream, flood, floodCap, refused)
			}

			// Another tenant is untouched: its agent starts a Session and asks.
			askInTenant(t, env, "b", "b-"+string(role))

			// The flood stops; the worker ends its idle consumers.
			require.NoError(t, held.Unsubscribe())
			for _, f := range floods[role] {
				require.Eventually(t, func() bool { _, flood := consumers(env.JS, f.stream); return flood == 0 },
					patience, 20*time.Millisecond, "the worker deleted the idle flood of %s", f.stream)
			}
			askInTenant(t, env, "a", "a-"+string(role))
		})
	}
}

// askInTenant runs a Go runtime on an agent's credentials of tenant that
// starts Session sid and asks a timed question, which goes pending, and
// waits for the Turn to end.
func askInTenant(t *testing.T, env *embeddedtest.Env, tenant, sid string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nc, js := env.AsTenant(t, tenant, auth.Agent)
	script, err := scripted.Parse(`call ask_user_question {"questions":[{"id":"go","question":"Go on?"}],"timeout":1}` + "\nsay Done.")
	require.NoError(t, err)
	rt, err := runtime.New(ctx, runtime.Config{Conn: nc, Model: script.Model(), Ask: askuser.Config{Mode: askuser.ModeTimed}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err, "tenant %s: a runtime starts", tenant)
	defer rt.Close()
	_, err = rt.Start(ctx, sid)
	require.NoError(t, err, "tenant %s: the runtime starts Session %s", tenant, sid)
	_, admin := env.AsTenant(t, tenant, auth.Admin)
	_, err = runtime.Steer(ctx, admin, sid, "", "Set up the service.")
	require.NoError(t, err)
	sessions, err := js.Stream(ctx, streams.SessionsStream)
	require.NoError(t, err)
	log := sessionlog.NewDirect(js, sessions) // direct gets: the polling makes no consumer
	require.Eventually(t, func() bool {
		evts, _, err := log.Read(ctx, sid, 0)
		if err != nil {
			return false
		}
		for _, e := range evts {
			if r, ok := e.Body.(*events.ToolResult); ok && r.Name == "ask_user_question" {
				require.Contains(t, events.JoinText(r.Content), `"pending":true`, "tenant %s: the question went pending", tenant)
				return true
			}
		}
		return false
	}, patience, 20*time.Millisecond, "tenant %s: Session %s asked", tenant, sid)
}
