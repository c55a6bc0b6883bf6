package worker_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/ops/opstest"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/steer/steertest"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
	"github.com/holdover-dev/holdover/worker"
)

type durableRig struct {
	env     *embeddedtest.Env
	svc     *worker.Worker
	running *ops.Started
	client  *answerer.Client
	log     *sessionlog.Log
	metrics *ops.Metrics
}

func startDurable(t *testing.T) *durableRig {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	m := ops.NewMetrics()
	logger := slog.New(slog.DiscardHandler)
	svc := worker.New(env.Conn, env.JS, env.Topology, worker.Config{Metrics: m, ResumeTimeout: 5 * time.Second}, logger)
	running := opstest.Start(t, ops.Component{Name: "userQuestions", Run: svc.Run})
	client, err := answerer.New(env.Conn, answerer.Config{CallTimeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, client.Close()) })
	return &durableRig{
		env: env, svc: svc, running: running, metrics: m,
		client: client,
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
	require.Equal(t, holdover.CodeCallUnknown, res.Reason.Code, "the refusal crosses NATS with its reason")

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
	require.Equal(t, 1.0, outcomes(string(holdover.CodeCallUnknown)))
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

// D7: an accepted answer asks the runtime pool to resume its Session when
// the registry names no live root, or a root whose root lease is gone (a
// runtime that died without releasing); one whose root holds its lease is
// left alone. Either way the reply is already queued: the resume is not
// part of the answer.
func TestD7AnswerWithoutLiveRootRequestsResume(t *testing.T) {
	r := startDurable(t)
	ctx := ctx10(t)
	resumed := r.servePool(t)

	qs := steertest.Questions("q1")
	for _, sid := range []string{"idle", "busy", "lost"} {
		steertest.NewSession(t, r.log, sid).Continued("call-1", qs)
	}
	r.liveRoot(t, "busy", "runtime-a")
	_, err := r.svc.Roots().Register(ctx, "lost", "runtime-gone") // its lease is gone
	require.NoError(t, err)

	for _, sid := range []string{"busy", "idle", "lost"} {
		res, err := r.client.Answer(ctx, holdover.AnswerRequest{Session: sid, CallID: "call-1", Answers: steertest.Choose(qs)})
		require.NoError(t, err)
		require.True(t, res.Accepted)
	}
	require.ElementsMatch(t, []string{"idle", "lost"}, []string{r.resumed(t, resumed), r.resumed(t, resumed)})
	require.NoError(t, r.running.Stop()) // waits for every resume the service started
	require.Empty(t, resumed, "a Session whose root holds its lease is not resumed")
	require.Equal(t, 1.0, counter(t, r.metrics, "holdover_answers_resume_requests_total", "no_root"))
	require.Equal(t, 1.0, counter(t, r.metrics, "holdover_answers_resume_requests_total", "root_lost"))
	for _, sid := range []string{"idle", "lost"} {
		rec, live, err := r.svc.Roots().Lookup(ctx, sid)
		require.NoError(t, err)
		require.True(t, live)
		require.Equal(t, "runtime-new", rec.Instance)
	}
}

// D7: a root that holds its lease when the answer comes is followed until
// the reply leaves the inbox. If its lease ends first (the runtime died
// before reading it), the Session is resumed; once the reply has been
// admitted, the root's end resumes nothing.
func TestD7RootThatDiesBeforeReadingTheReplyIsResumedFrom(t *testing.T) {
	r := startDurable(t)
	ctx := ctx10(t)
	resumed := r.servePool(t)
	qs := steertest.Questions("q1")
	dies := steertest.NewSession(t, r.log, "dies")
	dies.Continued("call-1", qs)
	reads := steertest.NewSession(t, r.log, "reads")
	reads.Continued("call-1", qs)
	diesRoot := r.liveRoot(t, "dies", "runtime-a")
	readsRoot := r.liveRoot(t, "reads", "runtime-b")

	for _, sid := range []string{"dies", "reads"} {
		res, err := r.client.Answer(ctx, holdover.AnswerRequest{Session: sid, CallID: "call-1", Answers: steertest.Choose(qs)})
		require.NoError(t, err)
		require.True(t, res.Accepted)
	}
	// runtime-b reads its reply: spliced, claimed and admitted (D8).
	subject, err := streams.ReplySubject("reads", "call-1")
	require.NoError(t, err)
	raw, err := r.env.Topology.Sessions.GetLastMsgForSubject(ctx, subject)
	require.NoError(t, err)
	reply, err := inbox.Decode(raw.Data)
	require.NoError(t, err)
	reads.Splice(reply, raw.Sequence)
	reads.Claim(reply.ID)
	reads.Admit(reply)
	// No projection worker runs here, so the release is not marked yet:
	// inbox reads it from the log.
	views := projection.NewStore(r.env.JS, r.env.Topology.Sessions, r.env.Topology.Questions)
	held, err := inbox.NewReplies(r.env.JS, r.env.Topology.Sessions, views).Held(ctx, "reads", "call-1", reply.ID)
	require.NoError(t, err)
	require.False(t, held, "the admitted reply's reservation is released")
	require.NoError(t, readsRoot.End(ctx))
	require.NoError(t, diesRoot.End(ctx)) // as NATS does the release bound after a SIGKILL

	require.Equal(t, "dies", r.resumed(t, resumed))
	require.NoError(t, r.running.Stop())
	require.Empty(t, resumed, "a root that read the reply is not resumed from")
	require.Equal(t, 1.0, counter(t, r.metrics, "holdover_answers_resume_requests_total", "root_lost"))
}

// servePool answers resume requests as a pool runtime does: it holds its
// root lease, registers the Session as runtime-new, and says which
// Session it took.
func (r *durableRig) servePool(t *testing.T) <-chan string {
	resumed := make(chan string, 4)
	l, err := liveroot.HoldLease(context.Background(), r.env.Conn, r.env.JS, "runtime-new", lease.MinReleaseBound)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.End(context.Background()) })
	sub, err := liveroot.ServeResume(context.Background(), r.env.Conn, ops.NewOrigins(ops.NewMetrics(), slog.New(slog.DiscardHandler)), func(ctx context.Context, sid string) (string, error) {
		_, err := r.svc.Roots().Register(ctx, sid, "runtime-new")
		resumed <- sid
		return "runtime-new", err
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, r.env.Conn.Flush())
	return resumed
}

// liveRoot registers instance as sid's root and holds its root lease, as
// a running runtime does.
func (r *durableRig) liveRoot(t *testing.T, sid, instance string) *lease.Lease {
	ctx := context.Background()
	l, err := liveroot.HoldLease(ctx, r.env.Conn, r.env.JS, instance, lease.MinReleaseBound)
	require.NoError(t, err)
	_, err = r.svc.Roots().Register(ctx, sid, instance)
	require.NoError(t, err)
	return l
}

func (r *durableRig) resumed(t *testing.T, resumed <-chan string) string {
	t.Helper()
	select {
	case sid := <-resumed:
		return sid
	case <-time.After(10 * time.Second):
		t.Fatal("no resume request")
		return ""
	}
}

// A stopped service answers nothing; the client says so with a code.
func TestClientReportsAMissingService(t *testing.T) {
	r := startDurable(t)
	require.NoError(t, r.running.Stop())
	_, err := r.client.View(ctx10(t), "s1")
	require.Equal(t, holdover.CodeInternal, holdover.CodeOf(err))
	require.ErrorContains(t, err, "no userQuestions service")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = r.client.View(ctx, "s1")
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, holdover.CodeInternal, holdover.CodeOf(err))
}

func TestServiceRunsOnceAtATimeAndStopsIdempotently(t *testing.T) {
	r := startDurable(t)
	require.Equal(t, holdover.CodeInternal, holdover.CodeOf(r.svc.Run(context.Background(), func() {})))
	require.NoError(t, r.running.Stop())
	require.NoError(t, r.running.Stop())
}

// One truth for the shapes (issue 20): an answer without selected breaks
// the schema (Answer.selected is required), so the service refuses it,
// naming the field, rather than storing it as selected:[].
func TestAnswerWithoutSelectedIsRefusedAsTheSchemaSays(t *testing.T) {
	r := startDurable(t)
	ctx := ctx10(t)
	s := steertest.NewSession(t, r.log, "s1")
	s.Continued("call-1", steertest.Questions("q1"))
	msg, err := r.env.Conn.RequestWithContext(ctx, userquestions.Subject("answer"), []byte(`{"session":"s1","callId":"call-1","answers":[{"id":"q1"}]}`))
	require.NoError(t, err)
	require.Equal(t, string(holdover.CodeBadRequest), msg.Header.Get(userquestions.ErrorCodeHeader), "%s", msg.Data)
	require.Contains(t, string(msg.Data), "requests/answer.json: /answers/0: missing property 'selected'")
	v, err := r.client.View(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, v.Active, 1, "nothing was queued")
	require.Nil(t, v.Active[0].Queued)
}

// D7, issue 24 item 7: whether a reply awaits admission is read from the
// reply subject and the log, not from an answer request. A reply stored
// while no worker ran (its worker died after storing it) is followed by
// the next worker that starts: its Session is resumed. Until a runtime
// splices it, the view shows it queued.
func TestD7ReplyStoredWithNoWorkerIsFollowedWhenOneStarts(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	ctx := ctx10(t)
	qs := steertest.Questions("q1")
	s := steertest.NewSession(t, sessionlog.New(env.JS, env.Topology.Sessions), "stranded")
	s.Continued("call-1", qs)
	reply, err := events.NewReply("reply-1", "call-1", qs, steertest.Choose(qs))
	require.NoError(t, err)
	reply.Source.User = "ana"
	views := projection.NewStore(env.JS, env.Topology.Sessions, env.Topology.Questions)
	seq, err := inbox.NewReplies(env.JS, env.Topology.Sessions, views).Queue(ctx, "stranded", "call-1", reply, 0)
	require.NoError(t, err)

	m := ops.NewMetrics()
	svc := worker.New(env.Conn, env.JS, env.Topology, worker.Config{Metrics: m}, slog.New(slog.DiscardHandler))
	r := &durableRig{env: env, svc: svc, metrics: m}
	resumed := r.servePool(t)
	opstest.Start(t, ops.Component{Name: "userQuestions", Run: svc.Run})
	require.Equal(t, "stranded", r.resumed(t, resumed))
	require.Eventually(t, func() bool { return counter(t, m, "holdover_answers_resume_requests_total", "no_root") == 1 },
		10*time.Second, 5*time.Millisecond, "the worker counts the resume it requested once the pool answers")

	client, err := answerer.New(env.Conn, answerer.Config{CallTimeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, client.Close()) })
	v, err := client.View(ctx, "stranded")
	require.NoError(t, err)
	require.Len(t, v.Active, 1)
	require.Equal(t, &projection.Queued{MessageID: "reply-1", Answers: steertest.Choose(qs), By: "ana", Seq: seq}, v.Active[0].Queued,
		"stored and not spliced: shown queued")
	_, err = client.Answer(ctx, holdover.AnswerRequest{Session: "stranded", CallID: "call-1", Answers: steertest.Skip(qs)})
	require.Equal(t, holdover.CodeReplyQueued, holdover.CodeOf(err))

	s.Splice(reply, seq)
	s.Claim(reply.ID)
	s.Admit(reply)
	v, err = client.View(ctx, "stranded")
	require.NoError(t, err)
	require.Empty(t, v.Active, "admitted: settled late")
	require.Len(t, v.Settled, 1)
}

// D6, D7, issue 20 item 5: an answer to an open call is refused CALL_OPEN
// while a live root serves its Session. With none (its runtime died
// mid-call), the worker asks the resume pool to take the Session over:
// with no pool it is refused NO_AGENT; once a runtime took it and
// repaired the call, the same answer is accepted.
func TestD7AnswerToAnInterruptedCallResumesItOrSaysNoAgent(t *testing.T) {
	r := startDurable(t)
	ctx := ctx10(t)
	qs := steertest.Questions("q1")
	sessions := map[string]*steertest.Session{}
	for _, sid := range []string{"served", "orphan"} {
		sessions[sid] = steertest.NewSession(t, r.log, sid)
		sessions[sid].Header(true)
		sessions[sid].Ask("call-1", qs)
	}
	r.liveRoot(t, "served", "runtime-a")
	answer := func(sid string) holdover.AnswerResult {
		res, err := r.client.Answer(ctx, holdover.AnswerRequest{Session: sid, CallID: "call-1", Answers: steertest.Choose(qs)})
		require.NoError(t, err)
		return res
	}

	res := answer("served")
	require.False(t, res.Accepted)
	require.Equal(t, holdover.CodeCallOpen, res.Reason.Code, res.Reason.Message)
	res = answer("orphan")
	require.False(t, res.Accepted)
	require.Equal(t, holdover.CodeNoAgent, res.Reason.Code, res.Reason.Message)
	require.Contains(t, res.Reason.Message, "holdover agent --pool")

	l, err := liveroot.HoldLease(ctx, r.env.Conn, r.env.JS, "runtime-new", lease.MinReleaseBound)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.End(context.Background()) })
	sub, err := liveroot.ServeResume(ctx, r.env.Conn, ops.NewOrigins(ops.NewMetrics(), slog.New(slog.DiscardHandler)), func(ctx context.Context, sid string) (string, error) {
		if _, err := r.svc.Roots().Register(ctx, sid, "runtime-new"); err != nil {
			return "", err
		}
		sessions[sid].Repaired("call-1") // as a resumed runtime does before it answers
		return "runtime-new", nil
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, r.env.Conn.Flush())
	res = answer("orphan")
	require.True(t, res.Accepted, "%+v", res.Reason)
	outcomes := func(label string) float64 { return counter(t, r.metrics, "holdover_answers_total", label) }
	require.Equal(t, 1.0, outcomes(string(holdover.CodeCallOpen)))
	require.Equal(t, 1.0, outcomes(string(holdover.CodeNoAgent)))
	require.Equal(t, 1.0, outcomes("accepted"))
}

// D7, issue 20 item 4: with no runtime in the resume pool, an answer to a
// continued call is still accepted and queued, and its Session is
// resumed once a runtime joins the pool: the worker asks again, 1 s
// after the first try and doubling, until one takes it.
func TestD7ReplyQueuedWithNoPoolResumesWhenARuntimeJoins(t *testing.T) {
	r := startDurable(t)
	ctx := ctx10(t)
	qs := steertest.Questions("q1")
	steertest.NewSession(t, r.log, "waiting").Continued("call-1", qs)
	res, err := r.client.Answer(ctx, holdover.AnswerRequest{Session: "waiting", CallID: "call-1", Answers: steertest.Choose(qs)})
	require.NoError(t, err)
	require.True(t, res.Accepted, "accepted with no pool")
	require.Eventually(t, func() bool {
		return counter(t, r.metrics, "holdover_answers_resume_requests_total", "no_root") >= 1
	}, 10*time.Second, 5*time.Millisecond, "the worker tried the pool and found nobody")

	joined := time.Now()
	resumed := r.servePool(t)
	require.Equal(t, "waiting", r.resumed(t, resumed))
	t.Logf("resumed %v after a runtime joined the pool", time.Since(joined).Round(time.Millisecond))
}
