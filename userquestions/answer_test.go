package userquestions_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/steer/steertest"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
)

type durableRig struct {
	env     *embeddedtest.Env
	svc     *userquestions.Service
	client  *userquestions.Client
	log     *sessionlog.Log
	metrics *ops.Metrics
}

func startDurable(t *testing.T) *durableRig {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	m := ops.NewMetrics()
	logger := slog.New(slog.DiscardHandler)
	svc := userquestions.New(env.Conn, env.JS, env.Topology, userquestions.Config{Metrics: m, ResumeTimeout: 5 * time.Second}, logger)
	require.NoError(t, svc.Start(context.Background()))
	t.Cleanup(svc.Stop)
	return &durableRig{
		env: env, svc: svc, metrics: m,
		client: userquestions.NewClient(env.Conn, 10*time.Second),
		log:    sessionlog.New(env.JS, env.Topology.Sessions),
	}
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The service is a NATS micro service that `nats micro ls/info` shows,
// with its endpoints under holdover.q.
func TestServiceIsDiscoverable(t *testing.T) {
	r := startDurable(t)
	subject, err := micro.ControlSubject(micro.InfoVerb, userquestions.Name, "")
	require.NoError(t, err)
	msg, err := r.env.Conn.RequestWithContext(ctx10(t), subject, nil)
	require.NoError(t, err)
	var info micro.Info
	require.NoError(t, json.Unmarshal(msg.Data, &info))
	require.Equal(t, userquestions.Name, info.Name)
	require.Equal(t, userquestions.Version, info.Version)
	require.NotEmpty(t, info.Description)
	subjects := map[string]bool{}
	for _, ep := range info.Endpoints {
		subjects[ep.Subject] = true
	}
	require.True(t, subjects["holdover.q.answer"], "%v", subjects)
	require.True(t, subjects["holdover.q.view"], "%v", subjects)
}

// D6, §8: answers cross NATS and their errors come back with the same
// code, rebuilt as the typed error.
func TestD6AnswerOverNATS(t *testing.T) {
	r := startDurable(t)
	ctx := ctx10(t)
	qs := steertest.Questions("q1", "q2")
	steertest.NewSession(t, r.log, "s1").Continued("call-1", qs)

	res, err := r.client.Answer(ctx, holdover.AnswerRequest{Session: "s1", CallID: "nope", Answers: steertest.Choose(qs)})
	require.NoError(t, err)
	require.False(t, res.Accepted)

	_, err = r.client.Answer(ctx, holdover.AnswerRequest{Session: "s1", CallID: "call-1", Answers: steertest.Choose(qs)[:1]})
	require.Equal(t, holdover.CodeBadAnswer, holdover.CodeOf(err))
	var typed *holdover.Error
	require.ErrorAs(t, err, &typed)
	require.Contains(t, typed.Message, `"q2"`)

	res, err = r.client.Answer(ctx, holdover.AnswerRequest{Session: "s1", CallID: "call-1", Answers: steertest.Skip(qs)})
	require.NoError(t, err)
	require.True(t, res.Accepted)
	require.NotEmpty(t, res.MessageID)

	_, err = r.client.Answer(ctx, holdover.AnswerRequest{Session: "s1", CallID: "call-1", Answers: steertest.Choose(qs)})
	require.Equal(t, holdover.CodeReplyQueued, holdover.CodeOf(err))
	require.ErrorIs(t, err, &holdover.Error{Code: holdover.CodeReplyQueued})

	outcomes := func(label string) float64 { return counter(t, r.metrics, "holdover_answers_total", label) }
	require.Equal(t, 1.0, outcomes("accepted"))
	require.Equal(t, 1.0, outcomes("not_answerable"))
	require.Equal(t, 1.0, outcomes(string(holdover.CodeBadAnswer)))
	require.Equal(t, 1.0, outcomes(string(holdover.CodeReplyQueued)))
}

// counter reads the sample of counter family name whose one label is value.
func counter(t *testing.T, m *ops.Metrics, name, value string) float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetValue() == value {
					return s.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// Bad input gets BAD_REQUEST and changes nothing: malformed JSON, and
// Session ids that would be wildcards or extra subject tokens.
func TestD6MalformedRequestsAreBadRequest(t *testing.T) {
	r := startDurable(t)
	ctx := ctx10(t)
	for _, body := range []string{"{", "[]", `"answer"`, `{"session":"s1"} trailing`, `{"session":5}`, ""} {
		msg, err := r.env.Conn.RequestWithContext(ctx, userquestions.Subject("answer"), []byte(body))
		require.NoError(t, err)
		require.Equal(t, string(holdover.CodeBadRequest), msg.Header.Get(userquestions.ErrorCodeHeader), "%q", body)
		require.NotEmpty(t, msg.Header.Get(userquestions.ErrorHeader))
	}
	qs := steertest.Questions("q1")
	for _, sid := range []string{"a.b", "*", ">", "s1.events", ""} {
		_, err := r.client.Answer(ctx, holdover.AnswerRequest{Session: sid, CallID: "c1", Answers: steertest.Choose(qs)})
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "%q", sid)
		_, err = r.client.View(ctx, sid)
		require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "%q", sid)
	}
	_, err := r.client.Answer(ctx, holdover.AnswerRequest{Session: "s1", Answers: steertest.Choose(qs)})
	require.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err), "a call id is required")
}

// The view is caught up to the Session's last event (C4, C5): an answer's
// effects show at once, with no projection worker running.
func TestViewIsCaughtUp(t *testing.T) {
	r := startDurable(t)
	ctx := ctx10(t)
	v, err := r.client.View(ctx, "empty")
	require.NoError(t, err)
	require.Empty(t, v.Active)
	require.Zero(t, v.LastSeq)

	qs := steertest.Questions("q1")
	s := steertest.NewSession(t, r.log, "s1")
	s.Continued("call-1", qs)
	v, err = r.client.View(ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, s.Last(), v.LastSeq)
	require.Len(t, v.Active, 1)
	require.Equal(t, "continued", string(v.Active[0].Status))
}

// D7: an accepted answer for a Session with no live root asks the runtime
// pool to resume it; one with a live root is left alone. Either way the
// reply is already queued: the resume is not part of the answer.
func TestD7AnswerWithoutLiveRootRequestsResume(t *testing.T) {
	r := startDurable(t)
	ctx := ctx10(t)
	resumed := make(chan string, 4)
	sub, err := liveroot.ServeResume(ctx, r.env.Conn, func(ctx context.Context, sid string) (string, error) {
		_, err := r.svc.Roots().Register(ctx, sid, "runtime-new")
		resumed <- sid
		return "runtime-new", err
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, r.env.Conn.Flush())

	qs := steertest.Questions("q1")
	steertest.NewSession(t, r.log, "idle").Continued("call-1", qs)
	steertest.NewSession(t, r.log, "busy").Continued("call-1", qs)
	_, err = r.svc.Roots().Register(ctx, "busy", "runtime-a")
	require.NoError(t, err)

	for _, sid := range []string{"busy", "idle"} {
		res, err := r.client.Answer(ctx, holdover.AnswerRequest{Session: sid, CallID: "call-1", Answers: steertest.Choose(qs)})
		require.NoError(t, err)
		require.True(t, res.Accepted)
	}
	select {
	case sid := <-resumed:
		require.Equal(t, "idle", sid)
	case <-ctx.Done():
		t.Fatal("no resume request for the Session without a live root")
	}
	r.svc.Stop() // waits for every resume the service started
	require.Empty(t, resumed, "a Session with a live root is not resumed")
	// One resume was sent; Stop may have ended the wait for its reply.
	sent := counter(t, r.metrics, "holdover_answers_resume_requests_total", "resumed") +
		counter(t, r.metrics, "holdover_answers_resume_requests_total", string(holdover.CodeInternal))
	require.Equal(t, 1.0, sent)
	_, live, err := r.svc.Roots().Lookup(ctx, "idle")
	require.NoError(t, err)
	require.True(t, live)
}

// A stopped service answers nothing; the client says so with a code.
func TestClientReportsAMissingService(t *testing.T) {
	r := startDurable(t)
	r.svc.Stop()
	_, err := r.client.View(ctx10(t), "s1")
	require.Equal(t, holdover.CodeInternal, holdover.CodeOf(err))
	require.ErrorContains(t, err, "no userQuestions service")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = r.client.View(ctx, "s1")
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, holdover.CodeInternal, holdover.CodeOf(err))
}

func TestServiceStartsOnceAndStopsIdempotently(t *testing.T) {
	r := startDurable(t)
	require.Equal(t, holdover.CodeInternal, holdover.CodeOf(r.svc.Start(context.Background())))
	r.svc.Stop()
	r.svc.Stop()
}
