package auth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/model/scripted"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
	"github.com/holdover-dev/holdover/worker"
)

// indirect is one row of the denial matrix's second half: an attack built
// only from subjects the attacker's role may use, written as the attacker
// would, that makes the server itself publish a stored message, or its
// own answer, to a subject of the attacker's choosing. Exactly one of
// refused, endpoint, into and consumer says how the attack is stopped,
// and so which event shows that NATS has done all it will with it.
type indirect struct {
	name string
	role auth.Role
	// refused: the server refuses the attack's request for want of
	// permission.
	refused bool
	// endpoint: the message reaches this service endpoint, and the worker
	// refuses it for its origin (auth.CheckOrigin).
	endpoint string
	// into: the server sends the message to this stream subject, in the
	// tenant's clients account, where no stream is (auth, accounts.go).
	into string
	// consumer: the push consumer the attack made finds nobody to deliver
	// to: nothing of the clients account listens in the data account on
	// its deliver subject (only inboxes cross back), and a stream's own
	// subscription is no subscriber to the server.
	consumer string
	act      func(ctx context.Context, nc *nats.Conn) error
}

// forgedAnswer is what an agent stores in its own Session's log to replay
// into the answer endpoint: another Session's answer, "by ana". Replayed
// onto the resume subject it names s2.
var forgedAnswer = []byte(`{"session":"s2","callId":"call_1","answers":[{"questionIndex":0,"selected":["yes"]}]}`)

// forgedDiscard is what an agent stores next in its own Session's log, to
// replay onto another Session's discard subject: a user's queued reply to
// drop.
var forgedDiscard = []byte(`{"session":"s3","messageId":"reply-1","reason":"taken back"}`)

func createConsumer(ctx context.Context, nc *nats.Conn, stream, name string, cfg map[string]any) error {
	cfg["name"] = name
	body, _ := json.Marshal(map[string]any{"stream_name": stream, "config": cfg})
	msg, err := nc.RequestWithContext(ctx, "$JS.API.CONSUMER.CREATE."+stream+"."+name, body)
	if err != nil {
		return err
	}
	if strings.Contains(string(msg.Data), `"error"`) {
		return fmt.Errorf("create %s: %s", name, msg.Data)
	}
	return nil
}

// The stream subjects a reply can name, one of each stream: the View of
// Session s2, its live root, its log, its call's reply subject, and a
// claim's frames.
const (
	viewKey    = "$KV.userQuestions.s2"
	rootKey    = "$KV.liveRoots.s2"
	s2Events   = "holdover.session.s2.events"
	s2Reply    = "holdover.session.s2.inbox.call_1"
	claimFrame = "holdover.claim.wait.s1.call_1.c1"
)

// s3 is the Session an agent runtime of the test runs as its live root,
// answering its discard requests, beside the resume pool it joined.
const s3 = "s3"

func indirectAttacks(workerLease string) []indirect {
	answer := streams.ServicePrefix + "." + streams.EndpointAnswer
	push := func(name, deliver string, group string) func(ctx context.Context, nc *nats.Conn) error {
		return func(ctx context.Context, nc *nats.Conn) error {
			cfg := map[string]any{"deliver_subject": deliver, "ack_policy": "none", "inactive_threshold": int64(time.Minute)}
			if group != "" {
				cfg["deliver_group"] = group
			}
			return createConsumer(ctx, nc, streams.SessionsStream, name, cfg)
		}
	}
	directGetSeq := func(stream string, seq int, reply string) func(ctx context.Context, nc *nats.Conn) error {
		return func(ctx context.Context, nc *nats.Conn) error {
			return nc.PublishRequest("$JS.API.DIRECT.GET."+stream, reply, fmt.Appendf(nil, `{"seq":%d}`, seq))
		}
	}
	directGet := func(stream, reply string) func(ctx context.Context, nc *nats.Conn) error {
		return directGetSeq(stream, 1, reply)
	}
	pull := func(name, reply string) func(ctx context.Context, nc *nats.Conn) error {
		return func(ctx context.Context, nc *nats.Conn) error {
			if err := createConsumer(ctx, nc, streams.SessionsStream, name, map[string]any{"ack_policy": "none", "inactive_threshold": int64(time.Minute)}); err != nil {
				return err
			}
			return nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT.SESSIONS."+name, reply, []byte(`{"batch":1}`))
		}
	}
	return []indirect{
		{name: "agent: push consumer on SESSIONS delivering its stored answer to holdover.q.answer (deliver_group userQuestions)", role: auth.Agent, consumer: "backdoor", act: push("backdoor", answer, "userQuestions")},
		{name: "operator: push consumer bound to the worker's queue group on holdover.q.answer", role: auth.Operator, refused: true, act: push("opreplay", answer, "userQuestions")},
		{name: "notifier: push consumer bound to the worker's queue group on holdover.q.answer", role: auth.Notifier, consumer: "nfreplay", act: push("nfreplay", answer, "userQuestions")},
		{name: "agent: pull its stored answer with the MSG.NEXT reply set to holdover.q.answer", role: auth.Agent, endpoint: streams.EndpointAnswer, act: pull("puller", answer)},
		{name: "agent: direct get of its stored answer with the reply set to holdover.q.answer", role: auth.Agent, endpoint: streams.EndpointAnswer, act: directGet(streams.SessionsStream, answer)},
		{name: "agent: direct get of a stored request id with the reply set to the worker's abort subject", role: auth.Agent, endpoint: userquestions.VerbAbort,
			act: directGet(streams.SessionsStream, userquestions.WorkerSubject(workerLease, userquestions.VerbAbort))},
		{name: "agent: direct get of its stored answer replying to " + viewKey + " (KV_userQuestions: a forged View)", role: auth.Agent, into: viewKey, act: directGet(streams.SessionsStream, viewKey)},
		{name: "agent: direct get replying to " + rootKey + " (KV_liveRoots: a forged live root)", role: auth.Agent, into: rootKey, act: directGet(streams.SessionsStream, rootKey)},
		{name: "operator: direct get replying to " + s2Events + " (SESSIONS: a read-only role appends an event)", role: auth.Operator, into: s2Events, act: directGet(streams.SessionsStream, s2Events)},
		{name: "notifier: direct get replying to " + s2Reply + " (SESSIONS: a forged late reply)", role: auth.Notifier, into: s2Reply, act: directGet(streams.SessionsStream, s2Reply)},
		{name: "gateway: direct get of a View replying to " + claimFrame + " (CLAIMS: a forged frame)", role: auth.Gateway, into: claimFrame, act: directGet(streams.KVStreamPrefix+streams.QuestionsBucket, claimFrame)},
		{name: "agent: pull its stored answer with the MSG.NEXT reply set to " + viewKey, role: auth.Agent, into: viewKey, act: pull("kvpuller", viewKey)},
		{name: "agent: stream info of SESSIONS replying to " + viewKey + " (any API response)", role: auth.Agent, into: viewKey,
			act: func(ctx context.Context, nc *nats.Conn) error {
				return nc.PublishRequest("$JS.API.STREAM.INFO."+streams.SessionsStream, viewKey, nil)
			}},
		{name: "agent: push consumer on SESSIONS delivering its stored answer to " + viewKey, role: auth.Agent, consumer: "kvpusher", act: push("kvpusher", viewKey, "")},
		{name: "operator: $SRV.PING replying to " + viewKey + " (the worker's discovery answer, with the worker's rights)", role: auth.Operator, endpoint: "PING",
			act: func(ctx context.Context, nc *nats.Conn) error { return nc.PublishRequest("$SRV.PING", viewKey, nil) }},
		{name: "operator: $SRV.INFO.userQuestions replying to " + s2Reply + " (a forged late reply, with the worker's rights)", role: auth.Operator, endpoint: "INFO",
			act: func(ctx context.Context, nc *nats.Conn) error {
				return nc.PublishRequest("$SRV.INFO."+userquestions.Name, s2Reply, nil)
			}},
		{name: "gateway: discard request to " + s3 + "'s live root replying to " + s2Reply + " (the agent's answer, sent past its deny rules as a response, is a forged late reply)", role: auth.Gateway, endpoint: runtime.DiscardEndpoint,
			act: discard(s2Reply)},
		{name: "gateway: discard request to " + s3 + "'s live root replying to " + viewKey + " (the agent's answer writes another Session's View)", role: auth.Gateway, endpoint: runtime.DiscardEndpoint,
			act: discard(viewKey)},
		{name: "agent: direct get of its stored discard request replying to " + s3 + "'s discard subject (the live root drops a user's queued message)", role: auth.Agent, endpoint: runtime.DiscardEndpoint,
			act: directGetSeq(streams.SessionsStream, 2, discardSubject)},
		{name: "operator: direct get of a stored message naming s2 replying to " + streams.ResumeSubject + " (the pool takes s2 over as its live root)", role: auth.Operator, endpoint: liveroot.ResumeEndpoint,
			act: directGet(streams.SessionsStream, streams.ResumeSubject)},
	}
}

// discardSubject is where the test's runtime takes s3's discard requests.
var discardSubject, _ = runtime.DiscardSubject(s3)

// discard sends a discard request to s3's live root as a gateway does for
// a Client, but replying to reply.
func discard(reply string) func(ctx context.Context, nc *nats.Conn) error {
	return func(ctx context.Context, nc *nats.Conn) error {
		return nc.PublishRequest(discardSubject, reply, []byte(`{"session":"s3","messageId":"reply-1"}`))
	}
}

// TestIndirectDenials runs every indirect attack against a live worker on
// a server with authentication on, waits for the event that shows NATS
// has done all it will with it (the row's endpoint, into or consumer),
// and checks that no stream, consumer of note or View changed. The rows
// are printed (go test -v -run TestIndirectDenials).
func TestIndirectDenials(t *testing.T) {
	env := embeddedtest.StartSecure(t, streams.Config{Memory: true})
	w := &world{env: env, claim: "claim~" + sid + "~call_1~c1"}
	ctx := context.Background()
	subject, _ := streams.EventsSubject(sid)
	_, err := env.JS.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: forgedAnswer, Header: nats.Header{"Holdover-User": []string{"ana"}}})
	require.NoError(t, err)
	_, err = env.JS.Publish(ctx, subject, forgedDiscard)
	require.NoError(t, err)
	_, err = env.Topology.Questions.Put(ctx, "s2", []byte(`{"active":[],"settled":[],"lastSeq":1}`))
	require.NoError(t, err)

	m := ops.NewMetrics()
	wnc, wjs := env.As(t, auth.Worker)
	svc := worker.New(wnc, wjs, env.Topology, worker.Config{Metrics: m}, slog.New(slog.DiscardHandler))
	opstest.Start(t, ops.Component{Name: "userQuestions", Run: svc.Run})
	rt := runAgent(t, env, m)

	var rows strings.Builder
	rows.WriteString("| indirect attack | result |\n|---|---|\n")
	var workerLease string
	for n := range env.Topology.Claims.ConsumerNames(ctx).Name() {
		if strings.HasPrefix(n, lease.Name(streams.LeaseWorker, "")) {
			workerLease = n
		}
	}
	require.NotEmpty(t, workerLease)
	for _, a := range indirectAttacks(workerLease) {
		p := newProber(t, env, env.Tenant, a.role)
		before := w.state(t)
		refused := refusedOrigin(t, m, a.endpoint)
		var spy *nats.Subscription
		if a.into != "" {
			spy, err = env.Conn.SubscribeSync(a.into)
			require.NoError(t, err)
			require.NoError(t, env.Conn.Flush())
		}
		if a.refused {
			denied, detail := p.try(func(ctx context.Context, p *prober) error { return a.act(ctx, p.nc) })
			require.True(t, denied, "%s was not refused: %s", a.name, detail)
		} else {
			require.NoError(t, a.act(ctx, p.nc), a.name)
		}
		switch {
		case a.endpoint != "":
			require.Eventually(t, func() bool {
				return refusedOrigin(t, m, a.endpoint) > refused
			}, patience, 10*time.Millisecond, "%s: the replayed message never reached the worker", a.name)
		case a.into != "":
			_, err := spy.NextMsg(patience)
			require.NoError(t, err, "%s: the server never sent it", a.name)
			require.NoError(t, spy.Unsubscribe())
			storedAllBefore(t, env, a.into)
		case a.consumer != "":
			info, err := env.JS.PushConsumer(ctx, streams.SessionsStream, a.consumer)
			require.NoError(t, err, a.name)
			require.False(t, info.CachedInfo().PushBound, "%s: the server found a subscriber to deliver to", a.name)
		}
		// The consumer the attack made is its vehicle, not an effect:
		// removed, so the state compares what it could have changed and
		// the next row starts from the same replayable log. The worker's
		// own consumer of the reply subjects and the runtime's inbox reader
		// stay.
		for n := range env.Topology.Sessions.ConsumerNames(ctx).Name() {
			if n == streams.RepliesDurable || strings.HasPrefix(n, rt.inboxes) {
				continue
			}
			require.NoError(t, env.JS.DeleteConsumer(ctx, streams.SessionsStream, n))
		}
		require.Equal(t, before, w.state(t), "%s changed something", a.name)
		s2, err := env.Topology.Questions.Get(ctx, "s2")
		require.NoError(t, err)
		require.Equal(t, `{"active":[],"settled":[],"lastSeq":1}`, string(s2.Value()), "%s: s2's View was written", a.name)
		fmt.Fprintf(&rows, "| %s | denied |\n", a.name)
	}
	t.Log("\n" + rows.String())
}

// agentRuntime is the Go runtime TestIndirectDenials runs on an agent's
// credentials: the live root of s3 and a member of the resume pool.
type agentRuntime struct {
	inboxes string // the prefix of its inbox reader's consumers
}

// runAgent starts a runtime on an agent's credentials that runs s3 (idle:
// nothing is queued) and joins the resume pool, counting the requests it
// refuses in m, and stores at s3's log's first sequence what a discard
// request's replay would read.
func runAgent(t *testing.T, env *embeddedtest.Env, m *ops.Metrics) agentRuntime {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	nc, _ := env.As(t, auth.Agent)
	script, err := scripted.Parse("say Done.")
	require.NoError(t, err)
	const instance = "rt-indirect"
	rt, err := runtime.New(ctx, runtime.Config{Conn: nc, Model: script.Model(), Instance: instance, Metrics: m, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { cancel(); rt.Close() })
	_, err = rt.Start(ctx, s3)
	require.NoError(t, err)
	leave, err := rt.ServePool(ctx)
	require.NoError(t, err)
	t.Cleanup(leave)
	return agentRuntime{inboxes: "inbox-" + instance + "-"}
}

// storedAllBefore returns once the stream of subject has handled every
// message that reached it so far: it sends one the stream refuses (a
// wrong expected last sequence) through the same queue, so the refusal
// comes after whatever came before it was stored, and nothing changes.
func storedAllBefore(t *testing.T, env *embeddedtest.Env, subject string) {
	t.Helper()
	_, err := env.JS.PublishMsg(context.Background(), &nats.Msg{Subject: subject, Header: nats.Header{jetstream.ExpectedLastSeqHeader: []string{"18446744073709551615"}}})
	var apiErr *jetstream.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, jetstream.JSErrCodeStreamWrongLastSequence, apiErr.ErrorCode, "the barrier on %s", subject)
}

// refusedOrigin reads how many requests to endpoint the worker refused
// for their origin.
func refusedOrigin(t *testing.T, m *ops.Metrics, endpoint string) float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	require.NoError(t, err)
	i := slices.IndexFunc(families, func(f *dto.MetricFamily) bool { return f.GetName() == "holdover_requests_refused_origin_total" })
	if i < 0 {
		return 0 // nothing refused yet
	}
	for _, s := range families[i].GetMetric() {
		if s.GetLabel()[0].GetValue() == endpoint {
			return s.GetCounter().GetValue()
		}
	}
	return 0
}
