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
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
	"github.com/holdover-dev/holdover/worker"
)

// indirect is one row of the denial matrix's second half: an attack built
// only from subjects the attacker's role may use, written as the attacker
// would, that makes NATS itself carry a request to a service endpoint.
type indirect struct {
	name string
	role auth.Role
	// endpoint is the one the replayed message reaches.
	endpoint string
	act      func(ctx context.Context, nc *nats.Conn) error
}

// forgedAnswer is what an agent stores in its own Session's log to replay
// into the answer endpoint: another Session's answer, "by ana".
var forgedAnswer = []byte(`{"session":"s2","callId":"call_1","answers":[{"questionIndex":0,"selected":["yes"]}]}`)

func createConsumer(nc *nats.Conn, stream, name string, cfg map[string]any) error {
	cfg["name"] = name
	body, _ := json.Marshal(map[string]any{"stream_name": stream, "config": cfg})
	msg, err := nc.Request("$JS.API.CONSUMER.CREATE."+stream+"."+name, body, patience)
	if err != nil {
		return err
	}
	if strings.Contains(string(msg.Data), `"error"`) {
		return fmt.Errorf("create %s: %s", name, msg.Data)
	}
	return nil
}

func indirectAttacks(workerLease string) []indirect {
	answer := streams.ServicePrefix + "." + streams.EndpointAnswer
	push := func(role auth.Role, name string) func(ctx context.Context, nc *nats.Conn) error {
		return func(ctx context.Context, nc *nats.Conn) error {
			return createConsumer(nc, streams.SessionsStream, name, map[string]any{
				"deliver_subject": answer, "deliver_group": "userQuestions",
				"ack_policy": "none", "inactive_threshold": int64(time.Minute),
			})
		}
	}
	return []indirect{
		{name: "agent: push consumer on SESSIONS delivering its stored answer to holdover.q.answer (deliver_group userQuestions)", role: auth.Agent, endpoint: streams.EndpointAnswer, act: push(auth.Agent, "backdoor")},
		{name: "operator: push consumer bound to the worker's queue group on holdover.q.answer", role: auth.Operator, endpoint: streams.EndpointAnswer, act: push(auth.Operator, "opreplay")},
		{name: "notifier: push consumer bound to the worker's queue group on holdover.q.answer", role: auth.Notifier, endpoint: streams.EndpointAnswer, act: push(auth.Notifier, "nfreplay")},
		{name: "agent: pull its stored answer with the MSG.NEXT reply set to holdover.q.answer", role: auth.Agent, endpoint: streams.EndpointAnswer,
			act: func(ctx context.Context, nc *nats.Conn) error {
				if err := createConsumer(nc, streams.SessionsStream, "puller", map[string]any{"ack_policy": "none", "inactive_threshold": int64(time.Minute)}); err != nil {
					return err
				}
				return nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT.SESSIONS.puller", answer, []byte(`{"batch":1}`))
			}},
		{name: "agent: direct get of its stored answer with the reply set to holdover.q.answer", role: auth.Agent, endpoint: streams.EndpointAnswer,
			act: func(ctx context.Context, nc *nats.Conn) error {
				return nc.PublishRequest("$JS.API.DIRECT.GET.SESSIONS", answer, []byte(`{"seq":1}`))
			}},
		{name: "agent: direct get of a stored request id with the reply set to the worker's abort subject", role: auth.Agent, endpoint: userquestions.VerbAbort,
			act: func(ctx context.Context, nc *nats.Conn) error {
				return nc.PublishRequest("$JS.API.DIRECT.GET.SESSIONS", userquestions.WorkerSubject(workerLease, userquestions.VerbAbort), []byte(`{"seq":1}`))
			}},
	}
}

// TestIndirectDenials runs every indirect attack against a live worker on
// a server with authentication on: NATS delivers the replayed message to
// the endpoint (the worker counts it), and the worker refuses it for its
// origin, so no stream, consumer of note or View changes. The rows are
// printed (go test -v -run TestIndirectDenials).
func TestIndirectDenials(t *testing.T) {
	env := embeddedtest.StartSecure(t, streams.Config{Memory: true})
	w := &world{env: env, claim: "claim~" + sid + "~call_1~c1"}
	ctx := context.Background()
	subject, _ := streams.EventsSubject(sid)
	_, err := env.JS.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: forgedAnswer, Header: nats.Header{"Holdover-User": []string{"ana"}}})
	require.NoError(t, err)
	_, err = env.Topology.Questions.Put(ctx, "s2", []byte(`{"active":[],"settled":[],"lastSeq":1}`))
	require.NoError(t, err)

	m := ops.NewMetrics()
	wnc, wjs := env.As(t, auth.Worker)
	svc := worker.New(wnc, wjs, env.Topology, worker.Config{Metrics: m}, slog.New(slog.DiscardHandler))
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(svc.Stop)

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
		nc, _ := env.As(t, a.role)
		before := w.state(t)
		refused := refusedOrigin(t, m, a.endpoint)
		require.NoError(t, a.act(ctx, nc), a.name)
		require.Eventually(t, func() bool {
			return refusedOrigin(t, m, a.endpoint) > refused
		}, patience, 10*time.Millisecond, "%s: the replayed message never reached the worker", a.name)
		// The consumer the attack made is its vehicle, not an effect:
		// removed, so the state compares what it could have changed and
		// the next row starts from the same replayable log. The worker's
		// own consumer of the reply subjects stays.
		for n := range env.Topology.Sessions.ConsumerNames(ctx).Name() {
			if n == streams.RepliesDurable {
				continue
			}
			require.NoError(t, env.JS.DeleteConsumer(ctx, streams.SessionsStream, n))
		}
		require.Equal(t, before, w.state(t), "%s changed something", a.name)
		s2, err := env.Topology.Questions.Get(ctx, "s2")
		require.NoError(t, err)
		require.Equal(t, uint64(1), s2.Revision(), "%s: s2's View was written", a.name)
		fmt.Fprintf(&rows, "| %s | denied |\n", a.name)
	}
	t.Log("\n" + rows.String())
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
