package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// patience bounds every wait for an answer or a refusal; it only turns a
// hang into a failure.
const patience = 10 * time.Second

const sid = "s1"

// prober is one role's connection, with the server's refusals of it.
type prober struct {
	role    auth.Role
	nc      *nats.Conn
	js      jetstream.JetStream
	refused chan error
}

func newProber(t *testing.T, env *embeddedtest.Env, tenant string, r auth.Role) *prober {
	p := &prober{role: r, refused: make(chan error, 64)}
	p.nc, p.js = env.AsTenant(t, tenant, r, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			p.refused <- err
		}
	}))
	return p
}

// try runs act and reports whether the server refused it for want of
// permission, with the refusal or act's own result. A refused request is
// not answered, so the refusal ends it; an act that returns is followed
// by a flush, which the server answers only after any refusal of what
// came before it, and the connection notes a refusal (LastError) as it
// reads it, before the flush returns.
func (p *prober) try(act func(ctx context.Context, p *prober) error) (bool, string) {
	for len(p.refused) > 0 {
		<-p.refused
	}
	last := p.nc.LastError()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- act(ctx, p) }()
	select {
	case err := <-p.refused:
		cancel()
		<-done
		return true, err.Error()
	case err := <-done:
		if ferr := p.nc.FlushTimeout(patience); ferr != nil {
			return false, "flush: " + ferr.Error()
		}
		if rerr := p.nc.LastError(); rerr != last && errors.Is(rerr, nats.ErrPermissionViolation) {
			return true, rerr.Error()
		}
		if err != nil {
			return false, err.Error()
		}
		return false, "ok"
	}
}

// request sends a core request and takes any reply, or "no responders",
// as the request having been allowed.
func request(subject string, body any) func(ctx context.Context, p *prober) error {
	return func(ctx context.Context, p *prober) error {
		data, _ := json.Marshal(body)
		_, err := p.nc.RequestWithContext(ctx, subject, data)
		if errors.Is(err, nats.ErrNoResponders) {
			return nil
		}
		return err
	}
}

// publish sends an empty core message: allowed unless the server
// refuses it.
func publish(subject string) func(ctx context.Context, p *prober) error {
	return func(ctx context.Context, p *prober) error { return p.nc.Publish(subject, nil) }
}

func api(subject string, body any) func(ctx context.Context, p *prober) error {
	return func(ctx context.Context, p *prober) error {
		data, _ := json.Marshal(body)
		msg, err := p.nc.RequestWithContext(ctx, subject, data)
		if err != nil {
			return err
		}
		var resp struct {
			Error *jetstream.APIError `json:"error"`
		}
		_ = json.Unmarshal(msg.Data, &resp)
		if resp.Error != nil {
			return resp.Error
		}
		return nil
	}
}

// action is one column of the matrix: what a role tries, and which roles
// may.
type action struct {
	name    string
	allowed []auth.Role
	// prepare restores what an allowed attempt before may have used up.
	prepare func(t *testing.T, w *world)
	act     func(ctx context.Context, p *prober) error
}

type world struct {
	env   *embeddedtest.Env
	claim string
}

// holdClaim makes sure a Client's claim exists on the claims stream, held
// by the test's admin connection as a gateway would hold it.
func (w *world) holdClaim(t *testing.T) {
	ctx := context.Background()
	if ok, err := lease.Exists(ctx, w.env.JS, w.claim); err == nil && ok {
		return
	}
	_, err := lease.HoldConsumer(ctx, w.env.Conn, w.env.JS, w.claim, streams.ClaimFramePrefix+"."+sid+".call_1.c1", time.Minute, nil, func(*nats.Msg) {})
	require.NoError(t, err)
}

// state is everything an action could change: stream contents, the
// projection's value, the consumers of SESSIONS and CLAIMS.
func (w *world) state(t *testing.T) string {
	ctx := context.Background()
	var b strings.Builder
	for _, name := range []string{streams.SessionsStream, streams.ClaimsStream, streams.KVStreamPrefix + streams.QuestionsBucket, streams.KVStreamPrefix + streams.RootsBucket} {
		s, err := w.env.JS.Stream(ctx, name)
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", name, err)
			continue
		}
		info, err := s.Info(ctx)
		require.NoError(t, err)
		var names []string
		for n := range s.ConsumerNames(ctx).Name() {
			if !strings.Contains(n, "_") { // ordered consumers of readers come and go
				names = append(names, n)
			}
		}
		slices.Sort(names)
		fmt.Fprintf(&b, "%s: msgs=%d last=%d consumers=%v\n", name, info.State.Msgs, info.State.LastSeq, names)
	}
	if e, err := w.env.Topology.Questions.Get(ctx, sid); err == nil {
		fmt.Fprintf(&b, "view=%s\n", e.Value())
	}
	return b.String()
}

func actions(w *world) []action {
	all := auth.Roles
	only := func(rs ...auth.Role) []auth.Role { return rs }
	event := []byte(`{"type":"turn/start","at":"2026-12-02T15:19:29Z","data":{"turn":"t9"}}`)
	return []action{
		{name: "append a Session event", allowed: only(auth.Agent, auth.Admin),
			act: func(ctx context.Context, p *prober) error {
				subject, _ := streams.EventsSubject(sid)
				_, err := p.js.Publish(ctx, subject, event)
				return err
			}},
		{name: "ask a question", allowed: only(auth.Agent, auth.Admin),
			act: request(streams.ServicePrefix+"."+streams.EndpointAskTimed, map[string]any{"session": sid})},
		{name: "answer a question", allowed: only(auth.Gateway, auth.Admin),
			act: request(streams.ServicePrefix+"."+streams.EndpointAnswer, map[string]any{"session": sid, "callId": "call_1", "answers": []any{}})},
		{name: "discard a queued reply", allowed: only(auth.Gateway, auth.Admin),
			act: request("holdover.session."+sid+"."+streams.DiscardSuffix, map[string]any{"messageId": "m1"})},
		{name: "queue a late reply", allowed: only(auth.Worker, auth.Admin),
			act: func(ctx context.Context, p *prober) error {
				subject, _ := streams.ReplySubject(sid, "call-1")
				_, err := p.js.Publish(ctx, subject, []byte(`{}`))
				return err
			}},
		{name: "write the projection", allowed: only(auth.Worker, auth.Admin),
			act: func(ctx context.Context, p *prober) error {
				_, err := p.js.Publish(ctx, streams.KVSubjectPrefix+streams.QuestionsBucket+"."+sid, []byte(`{"active":[],"settled":[],"lastSeq":99}`))
				return err
			}},
		{name: "read a Session's log by direct get", allowed: all,
			act: func(ctx context.Context, p *prober) error {
				s, err := p.js.Stream(ctx, streams.SessionsStream)
				if err != nil {
					return err
				}
				_, _, err = sessionlog.NewDirect(p.js, s).Read(ctx, sid, 0)
				return err
			}},
		{name: "create a durable consumer on SESSIONS", allowed: only(auth.Worker, auth.Gateway, auth.Agent, auth.Notifier, auth.Admin),
			act: func(ctx context.Context, p *prober) error {
				subject, _ := streams.EventsSubject(sid)
				_, err := p.js.CreateOrUpdateConsumer(ctx, streams.SessionsStream, jetstream.ConsumerConfig{Durable: "d-" + string(p.role), FilterSubject: subject, AckPolicy: jetstream.AckNonePolicy})
				return err
			}},
		{name: "read a Session's log through a consumer", allowed: only(auth.Worker, auth.Gateway, auth.Agent, auth.Notifier, auth.Admin),
			act: func(ctx context.Context, p *prober) error {
				subject, _ := streams.EventsSubject(sid)
				c, err := p.js.OrderedConsumer(ctx, streams.SessionsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
				if err != nil {
					return err
				}
				_, err = c.Next(jetstream.FetchMaxWait(patience))
				return err
			}},
		{name: "read the projection", allowed: only(auth.Worker, auth.Gateway, auth.Operator, auth.Notifier, auth.Admin),
			act: api(jsAPI("DIRECT.GET."+streams.KVStreamPrefix+streams.QuestionsBucket), map[string]any{"last_by_subj": streams.KVSubjectPrefix + streams.QuestionsBucket + "." + sid})},
		{name: "read the worker's replies", allowed: only(auth.Worker, auth.Admin),
			act: func(ctx context.Context, p *prober) error {
				_, err := p.nc.Subscribe(auth.Worker.InboxPrefix()+".>", func(*nats.Msg) {})
				return err
			}},
		{name: "hold a worker's lease", allowed: only(auth.Worker, auth.Admin),
			act: func(ctx context.Context, p *prober) error {
				id := "w-" + string(p.role)
				_, err := lease.HoldConsumer(ctx, p.nc, p.js, lease.Name(streams.LeaseWorker, id), lease.Subject(streams.LeaseWorker, id), time.Minute, nil, func(*nats.Msg) {})
				return err
			}},
		{name: "hold a caller lease", allowed: only(auth.Agent, auth.Admin),
			act: func(ctx context.Context, p *prober) error {
				id := "c-" + string(p.role)
				_, err := lease.HoldConsumer(ctx, p.nc, p.js, lease.Name(streams.LeaseCaller, id), lease.Subject(streams.LeaseCaller, id), time.Minute, nil, func(*nats.Msg) {})
				return err
			}},
		{name: "serve the answer endpoint", allowed: only(auth.Worker, auth.Admin),
			act: func(ctx context.Context, p *prober) error {
				_, err := p.nc.QueueSubscribe(streams.ServicePrefix+"."+streams.EndpointAnswer, "q", func(*nats.Msg) {})
				return err
			}},
		{name: "probe a claim's holder", allowed: only(auth.Worker, auth.Admin),
			act: publish(auth.Gateway.InboxPrefix() + ".claim1")},
		{name: "answer a claim probe", allowed: only(auth.Gateway, auth.Admin),
			act: publish(streams.OutcomePrefix + ".probe.p1")},
		{name: "delete a claim", allowed: only(auth.Worker, auth.Gateway, auth.Admin),
			prepare: func(t *testing.T, w *world) { w.holdClaim(t) },
			act:     api(jsAPI("CONSUMER.DELETE."+streams.ClaimsStream+"."+w.claim), nil)},
		{name: "pull the projection's events", allowed: only(auth.Worker, auth.Admin),
			act: request(jsAPI("CONSUMER.MSG.NEXT."+streams.SessionsStream+"."+streams.ProjectionDurable), map[string]any{"batch": 1, "no_wait": true})},
		{name: "pull the notifiers' events", allowed: only(auth.Notifier, auth.Admin),
			act: request(jsAPI("CONSUMER.MSG.NEXT."+streams.SessionsStream+"."+streams.NotifyDurable), map[string]any{"batch": 1, "no_wait": true})},
		{name: "pull the workers' queued replies", allowed: only(auth.Worker, auth.Admin),
			act: request(jsAPI("CONSUMER.MSG.NEXT."+streams.SessionsStream+"."+streams.RepliesDurable), map[string]any{"batch": 1, "no_wait": true})},
		{name: "delete the workers' consumer of the queued replies", allowed: only(auth.Admin),
			act: api(jsAPI("CONSUMER.DELETE."+streams.SessionsStream+"."+streams.RepliesDurable), nil)},
		{name: "delete the projection's consumer", allowed: only(auth.Admin),
			act: api(jsAPI("CONSUMER.DELETE."+streams.SessionsStream+"."+streams.ProjectionDurable), nil)},
		{name: "create a stream", allowed: only(auth.Admin),
			act: api(jsAPI("STREAM.CREATE.EXTRA"), map[string]any{"name": "EXTRA", "subjects": []string{"extra.>"}, "storage": "memory"})},
		{name: "purge the Session logs", allowed: only(auth.Admin),
			act: api(jsAPI("STREAM.PURGE."+streams.SessionsStream), nil)},
	}
}

func jsAPI(s string) string { return "$JS.API." + s }

// TestDenialMatrix tries every action as every role, on a server with
// authentication on, and checks that exactly the roles allowed to do it
// can: a forbidden action is refused as a permissions violation and
// changes nothing. The matrix is printed (go test -v -run TestDenialMatrix).
func TestDenialMatrix(t *testing.T) {
	env := embeddedtest.StartSecure(t, streams.Config{Memory: true})
	w := &world{env: env, claim: "claim~" + sid + "~call_1~c1"}
	ctx := context.Background()
	subject, _ := streams.EventsSubject(sid)
	_, err := env.JS.Publish(ctx, subject, []byte(`{"type":"turn/start","at":"2026-12-02T15:19:29Z","data":{"turn":"t1"}}`))
	require.NoError(t, err)
	_, err = env.Topology.Questions.Put(ctx, sid, []byte(`{"active":[],"settled":[],"lastSeq":1}`))
	require.NoError(t, err)
	_, err = env.Topology.Sessions.CreateOrUpdateConsumer(ctx, projection.WorkerConfig{}.ConsumerConfig())
	require.NoError(t, err)
	w.holdClaim(t)

	acts := actions(w)
	probers := map[auth.Role]*prober{}
	for _, r := range auth.Roles {
		probers[r] = newProber(t, env, env.Tenant, r)
	}
	got := map[string]map[auth.Role]bool{}
	for _, a := range acts {
		got[a.name] = map[auth.Role]bool{}
		for _, r := range auth.Roles {
			if a.prepare != nil {
				a.prepare(t, w)
			}
			before := w.state(t)
			denied, detail := probers[r].try(a.act)
			got[a.name][r] = !denied
			want := slices.Contains(a.allowed, r)
			if want {
				require.False(t, denied, "%s may %s: %s", r, a.name, detail)
				continue
			}
			require.True(t, denied, "%s may not %s, but it was not refused: %s", r, a.name, detail)
			require.Contains(t, detail, "Permissions Violation", "%s %s", r, a.name)
			require.Equal(t, before, w.state(t), "%s was refused to %s, yet something changed", r, a.name)
		}
	}
	t.Log("\n" + matrix(acts, got))
}

func matrix(acts []action, got map[string]map[auth.Role]bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| action |")
	for _, r := range auth.Roles {
		fmt.Fprintf(&b, " %s |", r)
	}
	b.WriteString("\n|---|")
	for range auth.Roles {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, a := range acts {
		fmt.Fprintf(&b, "| %s |", a.name)
		for _, r := range auth.Roles {
			if got[a.name][r] {
				b.WriteString(" allowed |")
			} else {
				b.WriteString(" denied |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
