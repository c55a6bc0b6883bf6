package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/userquestions"
	"github.com/holdover-dev/holdover/waiter"
	"github.com/holdover-dev/holdover/waiter/waitertest"
)

func fgTimed(sid, call string, agent *holdover.AgentRef, ms int64) holdover.AskTimedRequest {
	return holdover.AskTimedRequest{Session: sid, CallID: call, Agent: agent, Questions: fgQuestions, TimeoutMs: ms}
}

// fgTimers counts the fake clock's armed timers: the wait deadlines that
// run now.
func fgTimers(clock *clockwork.FakeClock) int { return waitertest.Timers(clock) }

// watchedCall1 has a Client watch Session s1 and the agent ask call-1
// there with a five-second timeout. It returns the Client's recorder,
// where the call's result lands, and the request the Client got.
func (w *fgWorld) watchedCall1(ctx context.Context) (*fgRecorder, <-chan fgResult, *answerer.Delivery) {
	w.t.Helper()
	rec := w.watch("s1")
	done := w.askTimed(ctx, w.agent, fgTimed("s1", "call-1", w.live("s1"), 5000))
	return rec, done, rec.next(w.t)
}

// fgReturned waits for the agent's call and requires that it returned
// without an error.
func fgReturned(t testing.TB, done <-chan fgResult) fgResult {
	t.Helper()
	r := fgWait(t, done)
	require.NoError(t, r.err)
	return r
}

// fgSettle answers d with choice and returns the agent's call, which must
// return without an error.
func fgSettle(t testing.TB, d *answerer.Delivery, done <-chan fgResult, choice string) fgResult {
	t.Helper()
	require.NoError(t, d.Settle(fgAnswer(choice)))
	return fgReturned(t, done)
}

// W3, W4, W8: an answer in time reaches the agent; the claim got the
// time left as the worker computed it, and the worker closes it when the
// request settles.
func TestForegroundAnswerInTimeThroughTheWaterfall(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	rec, done, d := w.watchedCall1(context.Background())
	assert.Equal(t, &userquestions.WaitRef{CallID: "call-1", Timed: true}, d.Wait)
	assert.Equal(t, fgQuestions, d.Questions)
	w.clock.Advance(time.Second)
	claim, remaining := fgClaim(t, d)
	assert.Equal(t, 4000*time.Millisecond, remaining, "the frame counts from the original deadline")
	assert.Equal(t, 0, fgTimers(w.clock), "no deadline timer runs while a Client holds a claim (W2)")

	assert.Equal(t, holdover.Outcome{Answers: fgAnswer("yes")}, fgSettle(t, d, done, "yes").out)
	fgClosed(t, claim)
	assert.Equal(t, fgCancel{d.RequestID, userquestions.ReasonAnswered}, rec.cancel(t))
	w.waitsAre(w.worker, 0)
}

// W5: a Client countdown that runs out rejects with ASK_TIMED_OUT, which
// askTimed turns into pending.
func TestForegroundClientCountdownIsPending(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	rec, done, d := w.watchedCall1(context.Background())
	claim, _ := fgClaim(t, d)

	require.NoError(t, d.Reject(holdover.New(holdover.CodeAskTimedOut, "the countdown ran out")))
	assert.Equal(t, holdover.Outcome{Pending: true}, fgReturned(t, done).out)
	fgClosed(t, claim)
	assert.Equal(t, userquestions.ReasonExpired, rec.cancel(t).reason)
}

// W2, W5: with no claim, the deadline ends the wait as pending, to the
// millisecond of the fake clock.
func TestForegroundUnattendedDeadlineIsPending(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	rec, done, d := w.watchedCall1(context.Background()) // delivered, which is not a claim (W2)

	w.clock.Advance(4999 * time.Millisecond)
	assert.Equal(t, 1, fgTimers(w.clock), "the deadline still runs")
	fgPendingOnly(t, done)
	w.clock.Advance(time.Millisecond)
	assert.Equal(t, holdover.Outcome{Pending: true}, fgReturned(t, done).out)
	assert.Equal(t, fgCancel{d.RequestID, userquestions.ReasonExpired}, rec.cancel(t))
	w.waitsAre(w.worker, 0)
}

// W6: nobody watches the Session, so NATS answers "no responders"; a timed
// wait is not over for it. A Client that joins later gets the request from
// inflight and answers through the same reply subject.
func TestForegroundNoProviderThenLateClientAnswersThroughInflight(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	done := w.askTimed(context.Background(), w.agent, fgTimed("s1", "call-1", w.live("s1"), 5000))
	w.waitsAre(w.worker, 1)

	listed, err := w.agent.Inflight(context.Background(), "s1")
	require.NoError(t, err)
	require.Len(t, listed, 1)
	assert.Equal(t, "call-1", listed[0].CallID)
	assert.NotEmpty(t, listed[0].Reply)

	rec := w.watch("s1") // the late Client
	d := rec.next(t)
	assert.Equal(t, listed[0].RequestID, d.RequestID)
	_, remaining := fgClaim(t, d)
	assert.Equal(t, 5*time.Second, remaining)
	assert.Equal(t, fgAnswer("no"), fgSettle(t, d, done, "no").out.Answers)
}

// W6: a keyed blocking ask (timeout -1, M3) keeps waiting through
// NO_PROVIDER for a Client to join; its claim has no countdown.
func TestForegroundKeyedBlockingAskWaitsForALateClient(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	done := w.ask(context.Background(), w.agent, holdover.AskRequest{Session: "s1", CallID: "call-1", Agent: w.live("s1"), Questions: fgQuestions})
	w.waitsAre(w.worker, 1)
	w.clock.Advance(24 * time.Hour)
	fgPendingOnly(t, done)

	rec := w.watch("s1")
	d := rec.next(t)
	assert.Equal(t, &userquestions.WaitRef{CallID: "call-1"}, d.Wait)
	_, remaining := fgClaim(t, d)
	assert.Equal(t, waiter.NoDeadline, remaining)
	assert.Equal(t, fgAnswer("yes"), fgSettle(t, d, done, "yes").answers)
}

// W6: a legacy ask with nobody to answer fails NO_PROVIDER at once.
func TestForegroundLegacyAskWithoutAnswererIsNoProvider(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	_, err := w.agent.Ask(context.Background(), holdover.AskRequest{Session: "s1", Questions: fgQuestions})
	assert.Equal(t, holdover.CodeNoProvider, holdover.CodeOf(err), "%v", err)
	w.waitsAre(w.worker, 0)
}

// W5, C2: a legacy request carries no wait and cannot be claimed; closing
// its panel rejects with ASK_CANCELLED, which the agent gets unchanged.
func TestForegroundLegacyRejectionPropagates(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	rec := w.watch("s1")
	done := w.ask(context.Background(), w.agent, holdover.AskRequest{Session: "s1", Questions: fgQuestions})
	d := rec.next(t)
	assert.Nil(t, d.Wait)
	_, err := d.AttachWait(context.Background())
	assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))

	require.NoError(t, d.Reject(holdover.New(holdover.CodeAskCancelled, "the user closed the panel")))
	r := fgWait(t, done)
	assert.Equal(t, holdover.CodeAskCancelled, holdover.CodeOf(r.err))
	assert.Equal(t, "the user closed the panel", r.err.Error())
}

// W2: a claim holds the wait open past its deadline; the answer still wins.
func TestForegroundClaimHeldPastTheDeadlineThenAnswered(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	_, done, d := w.watchedCall1(context.Background())
	claim, _ := fgClaim(t, d)

	w.clock.Advance(time.Minute)
	assert.Equal(t, 0, fgTimers(w.clock))
	fgPendingOnly(t, done)
	assert.Equal(t, fgAnswer("yes"), fgSettle(t, d, done, "yes").out.Answers)
	fgClosed(t, claim)
}

// W2, W4: delegation releases the claim first, so a wait past its deadline
// expires at once; before the deadline the request stays with others.
func TestForegroundDelegationReleasesTheClaim(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	a, b := w.watch("s1"), w.watch("s1")
	agent := w.live("s1")

	done := w.askTimed(context.Background(), w.agent, fgTimed("s1", "call-1", agent, 5000))
	da, db := a.next(t), b.next(t)
	fgClaim(t, da)
	require.NoError(t, da.Delegate(context.Background()))
	fgPendingOnly(t, done)
	require.NoError(t, db.Settle(fgAnswer("no")), "the request stayed with the other answerer")
	assert.Equal(t, fgAnswer("no"), fgReturned(t, done).out.Answers)

	done = w.askTimed(context.Background(), w.agent, fgTimed("s1", "call-2", agent, 5000))
	da = a.next(t)
	b.next(t)
	fgClaim(t, da)
	w.clock.Advance(10 * time.Second)
	fgPendingOnly(t, done)
	require.NoError(t, da.Delegate(context.Background()))
	assert.True(t, fgReturned(t, done).out.Pending, "losing the last claim past the deadline expires the wait at once")
}

// A killed Client connection ends its claim through NATS interest loss,
// with no heartbeat: the deadline, long passed, resumes within the
// release bound and the call turns pending.
func TestForegroundKilledClientConnectionResumesTheDeadline(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	nc := w.as(auth.Gateway)
	rec := w.watchWith(w.answerer(nc), "s1")
	done := w.askTimed(context.Background(), w.agent, fgTimed("s1", "call-1", w.live("s1"), 5000))
	d := rec.next(t)
	fgClaim(t, d)
	w.clock.Advance(time.Minute)
	fgPendingOnly(t, done)

	killed := time.Now()
	nc.Close()
	r := fgReturned(t, done)
	released := time.Since(killed)
	assert.True(t, r.out.Pending)
	t.Logf("claim released %v after its connection died (bound %v)", released, fgBound)
	assert.GreaterOrEqual(t, released, fgBound*9/10, "NATS keeps the claim for the bound")
	assert.Less(t, released, fgBound+3*time.Second, "and ends it soon after")
}

// W8: fifty Clients answer the same call at the same moment; exactly one
// outcome reaches the agent. They sit behind five gateways, ten to a
// gateway's connection, as Clients do. The agent here is a raw NATS caller
// holding a caller lease, so every message it gets is counted: one
// accepted frame, then one reply.
func TestForegroundFiftyClientsOneOutcome(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	const clients, gateways = 50, 5
	conns := make([]*nats.Conn, gateways)
	for i := range conns {
		conns[i] = w.as(auth.Gateway)
	}
	recs := make([]*fgRecorder, clients)
	for i := range recs {
		recs[i] = w.watchWith(w.answerer(conns[i%gateways]), "s1")
	}
	agentNC := w.as(auth.Agent)
	agentJS, err := jetstream.New(agentNC)
	require.NoError(t, err)
	inbox := agentNC.NewInbox()
	callerLease, err := lease.Hold(context.Background(), agentNC, agentJS, userquestions.RoleCaller, "", fgBound)
	require.NoError(t, err)
	replies, err := agentNC.SubscribeSync(inbox)
	require.NoError(t, err)
	body, err := json.Marshal(fgTimed("s1", "call-1", w.live("s1"), 60000))
	require.NoError(t, err)
	ask := nats.NewMsg(userquestions.Subject(userquestions.OpAskTimed))
	ask.Reply, ask.Data = inbox, body
	ask.Header.Set(userquestions.HeaderCallerLease, callerLease.Name())
	require.NoError(t, agentNC.PublishMsg(ask))

	deliveries := make([]*answerer.Delivery, clients)
	for i, rec := range recs {
		deliveries[i] = rec.next(t)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, d := range deliveries {
		wg.Go(func() {
			<-start
			assert.NoError(t, d.Settle([]holdover.Answer{{ID: "deploy", Custom: fmt.Sprintf("client %d", i)}}))
		})
	}
	close(start)
	wg.Wait()

	var first *nats.Msg
	for accepted := 0; first == nil; {
		m, err := replies.NextMsg(fgPatience)
		require.NoError(t, err)
		if m.Header.Get(userquestions.HeaderFrame) == userquestions.FrameAccepted {
			accepted++
			require.Equal(t, 1, accepted, "one accepted frame")
			continue
		}
		first = m
	}
	var out holdover.Outcome
	require.NoError(t, json.Unmarshal(first.Data, &out))
	require.Len(t, out.Answers, 1)
	assert.Regexp(t, `^client \d+$`, out.Answers[0].Custom)
	for _, rec := range recs {
		assert.Equal(t, userquestions.ReasonAnswered, rec.cancel(t).reason, "every other Client drops the request")
	}
	// Every losing outcome reached the worker before the cancel notices went
	// out or is dropped as it arrives; none becomes a second reply.
	for {
		m, err := replies.NextMsg(200 * time.Millisecond)
		if err != nil {
			assert.ErrorIs(t, err, nats.ErrTimeout)
			break
		}
		require.Equal(t, userquestions.FrameAccepted, m.Header.Get(userquestions.HeaderFrame), "a second outcome reached the agent")
	}
}

// W1: a second wait for a live call is DUPLICATE_WAIT; the first goes on.
func TestForegroundDuplicateWait(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	rec := w.watch("s1")
	agent := w.live("s1")
	done := w.askTimed(context.Background(), w.agent, fgTimed("s1", "call-1", agent, 5000))
	d := rec.next(t)

	_, err := w.agent.AskTimed(context.Background(), fgTimed("s1", "call-1", agent, 5000))
	assert.Equal(t, holdover.CodeDuplicateWait, holdover.CodeOf(err), "%v", err)
	_, err = w.agent.Ask(context.Background(), holdover.AskRequest{Session: "s1", CallID: "call-1", Agent: agent, Questions: fgQuestions})
	assert.Equal(t, holdover.CodeDuplicateWait, holdover.CodeOf(err), "a keyed blocking ask shares the key")

	fgSettle(t, d, done, "yes")
	w.waitsAre(w.worker, 0)
	// Once the first settled, the call may wait again.
	done = w.askTimed(context.Background(), w.agent, fgTimed("s1", "call-1", agent, 5000))
	fgSettle(t, rec.next(t), done, "no")
}

// W5, W7: cancelling the agent's call (its Turn) ends the wait with
// ASK_ABORTED, closes its claims and leaves nothing in the registry.
func TestForegroundParentCancellationAborts(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	rec, done, d := w.watchedCall1(ctx)
	claim, _ := fgClaim(t, d)

	cancel()
	r := fgWait(t, done)
	assert.Equal(t, holdover.CodeAskAborted, holdover.CodeOf(r.err), "%v", r.err)
	fgClosed(t, claim)
	assert.Equal(t, fgCancel{d.RequestID, userquestions.ReasonAborted}, rec.cancel(t))
	w.waitsAre(w.worker, 0)
	assert.Equal(t, 0, fgTimers(w.clock))
}

// An agent Client that closes mid-wait ends its waits at once, though an
// agent may not delete its lease (issue 10): it aborts each call at the
// worker owning it. The lease outlives the test (a 30 s bound), so it is
// the aborts that end the waits, not the lease.
func TestForegroundClosedAgentAbortsItsWaits(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	rec := w.watch("s1")
	agent := newCaller(t, w.as(auth.Agent), caller.Config{ReleaseBound: 30 * time.Second, Log: w.log})
	ref := w.live("s1")
	var calls []<-chan fgResult
	for i := range 3 {
		calls = append(calls, w.askTimed(context.Background(), agent, fgTimed("s1", fmt.Sprintf("call-%d", i), ref, 5000)))
		rec.next(t)
	}
	w.waitsAre(w.worker, 3)

	agent.Close()
	for _, done := range calls {
		assert.Equal(t, holdover.CodeAskAborted, holdover.CodeOf(fgWait(t, done).err))
	}
	for range 3 {
		assert.Equal(t, userquestions.ReasonAborted, rec.cancel(t).reason)
	}
	w.waitsAre(w.worker, 0)
	assert.Equal(t, 0, fgTimers(w.clock), "no Host timer is left")
}

// An agent whose connection dies mid-wait leaves no orphan wait: its lease
// ends within the bound and the worker aborts its waits.
func TestForegroundDeadAgentLeavesNoWait(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	rec := w.watch("s1")
	nc := w.as(auth.Agent)
	agent := newCaller(t, nc, caller.Config{ReleaseBound: fgBound, Log: w.log})
	ref := w.live("s1")
	for i := range 3 {
		w.askTimed(context.Background(), agent, fgTimed("s1", fmt.Sprintf("call-%d", i), ref, 5000))
		rec.next(t)
	}
	w.waitsAre(w.worker, 3)

	nc.Close()
	for range 3 {
		assert.Equal(t, userquestions.ReasonAborted, rec.cancel(t).reason)
	}
	w.waitsAre(w.worker, 0)
	assert.Equal(t, 0, fgTimers(w.clock), "no deadline timer is left")
}

// A worker whose connection dies mid-wait leaves no agent call hanging:
// the call turns pending within the bound and Clients drop the request.
func TestForegroundDeadWorkerTurnsCallsPending(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	w.worker.Stop() // the world's own worker leaves; one on a connection of its own takes over
	nc := w.as(auth.Worker)
	w.startWorker(nc)
	rec := w.watch("s1")
	done := w.askTimed(context.Background(), w.agent, fgTimed("s1", "call-1", w.live("s1"), 60000))
	d := rec.next(t)
	fgClaim(t, d)

	nc.Close()
	assert.Equal(t, holdover.Outcome{Pending: true}, fgReturned(t, done).out)
	assert.Equal(t, fgCancel{d.RequestID, userquestions.ReasonOwnerLost}, rec.cancel(t))
}

// A worker that stops ends its waits at once: a timed call turns pending;
// a blocking ask is asked again of another worker and answered there.
func TestForegroundStoppingWorkerHandsOver(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	rec := w.watch("s1")
	agent := w.live("s1")
	timed := w.askTimed(context.Background(), w.agent, fgTimed("s1", "call-1", agent, 60000))
	rec.next(t)
	blocking := w.ask(context.Background(), w.agent, holdover.AskRequest{Session: "s1", CallID: "call-2", Agent: agent, Questions: fgQuestions})
	first := rec.next(t)

	w.startWorker(w.as(auth.Worker))
	w.worker.Stop()
	assert.True(t, fgReturned(t, timed).out.Pending)

	var again *answerer.Delivery
	for again == nil {
		d := rec.next(t)
		if d.CallID == "call-2" && d.RequestID != first.RequestID {
			again = d
		}
	}
	assert.Equal(t, fgAnswer("yes"), fgSettle(t, again, blocking, "yes").answers)
}

// An answer batch that does not fit the questions is dropped by the worker;
// the request stays open for a good one.
func TestForegroundMalformedBatchAnswersNothing(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	_, done, d := w.watchedCall1(context.Background())

	assert.Equal(t, holdover.CodeBadAnswer, holdover.CodeOf(d.Settle([]holdover.Answer{{ID: "other"}})), "checked before sending")
	nc := w.as(auth.Gateway)
	for _, raw := range []string{
		`{"kind":"settle","answers":[{"id":"other","selected":[]}]}`,
		`{"kind":"settle","answers":[]}`,
		`{"kind":"reject"}`,
		`{"kind":"shrug"}`,
		`not json`,
	} {
		require.NoError(t, nc.Publish(d.Reply, []byte(raw)))
	}
	require.NoError(t, nc.Flush())
	assert.Equal(t, fgAnswer("yes"), fgSettle(t, d, done, "yes").out.Answers)
}

// W3: attaching to a wait that has ended yields no frame.
func TestForegroundAttachToAnEndedWaitGetsNoFrame(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	rec, done, d := w.watchedCall1(context.Background())
	fgSettle(t, d, done, "yes")
	rec.cancel(t)

	claim, err := d.AttachWait(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = claim.Remaining(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, claim.Release(context.Background()))
}

// W1, M4, M8, M9: requests the service refuses before any wait exists.
func TestForegroundRefusals(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	agent := w.live("s1")
	stale := *agent
	stale.Epoch--
	_, err := w.roots().RegisterChild(context.Background(), "child", "runtime-child", "parent-agent")
	require.NoError(t, err)

	// A raw request naming the agent's caller lease, as every ask must.
	raw := func(op, body string) error {
		req := nats.NewMsg(userquestions.Subject(op))
		req.Data = []byte(body)
		req.Header.Set(userquestions.HeaderCallerLease, w.agent.Lease())
		msg, err := w.env.Conn.RequestMsg(req, fgPatience)
		require.NoError(t, err)
		if msg.Header.Get(userquestions.ErrorCodeHeader) == "" {
			return nil
		}
		var e holdover.Error
		require.NoError(t, json.Unmarshal(msg.Data, &e))
		return &e
	}
	agentJSON, _ := json.Marshal(agent)
	qs, _ := json.Marshal(fgQuestions)
	for _, ms := range []string{"0", "1.5", "2147483648", "-1", `"60"`} {
		err := raw("askTimed", fmt.Sprintf(`{"session":"s1","callId":"c","agent":%s,"questions":%s,"timeoutMs":%s}`, agentJSON, qs, ms))
		assert.Equal(t, holdover.CodeBadTimeout, holdover.CodeOf(err), "timeout %s: %v", ms, err)
	}

	timed := func(mod func(*holdover.AskTimedRequest)) error {
		req := fgTimed("s1", "c", agent, 5000)
		mod(&req)
		_, err := w.agent.AskTimed(context.Background(), req)
		return err
	}
	for name, tc := range map[string]struct {
		err  error
		code holdover.Code
	}{
		"no questions":   {timed(func(r *holdover.AskTimedRequest) { r.Questions = nil }), holdover.CodeEmptyQuestions},
		"no agent":       {timed(func(r *holdover.AskTimedRequest) { r.Agent = nil }), holdover.CodeCallerNotLive},
		"stale instance": {timed(func(r *holdover.AskTimedRequest) { r.Agent = &stale }), holdover.CodeCallerNotLive},
		"owned child": {timed(func(r *holdover.AskTimedRequest) {
			r.Session = "child"
			r.Agent = &holdover.AgentRef{Instance: "runtime-child", Epoch: 1, Owner: "parent-agent"}
		}), holdover.CodeDelegatedCaller},
		"wildcard sid":    {timed(func(r *holdover.AskTimedRequest) { r.Session = "s.*" }), holdover.CodeBadRequest},
		"no call id":      {timed(func(r *holdover.AskTimedRequest) { r.CallID = "" }), holdover.CodeBadRequest},
		"duplicate ids":   {timed(func(r *holdover.AskTimedRequest) { r.Questions = append(fgQuestions, fgQuestions...) }), holdover.CodeBadRequest},
		"plan, no detail": {plan(w, agent, ""), holdover.CodeBadIntent},
	} {
		assert.Equal(t, tc.code, holdover.CodeOf(tc.err), "%s: %v", name, tc.err)
	}
	w.waitsAre(w.worker, 0)
	assert.Equal(t, 0, fgTimers(w.clock))
}

// plan asks a plan review (M8) whose question carries detail.
func plan(w *fgWorld, agent *holdover.AgentRef, detail string) error {
	q := fgQuestions[0]
	q.Detail = detail
	_, err := w.agent.Ask(context.Background(), holdover.AskRequest{
		Session: "s1", CallID: "plan", Agent: agent, Questions: []holdover.Question{q},
		Intent: &holdover.Intent{Kind: holdover.IntentPlanReview, Approve: "yes"},
	})
	return err
}

// M8: a valid plan review keeps the blocking ask and its intent reaches
// the Client.
func TestForegroundPlanReviewKeepsTheBlockingAsk(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	rec := w.watch("s1")
	agent := w.live("s1")
	done := make(chan error, 1)
	go func() { done <- plan(w, agent, "1. migrate\n2. deploy") }()
	d := rec.next(t)
	assert.Equal(t, &holdover.Intent{Kind: holdover.IntentPlanReview, Approve: "yes"}, d.Intent)
	assert.Equal(t, &userquestions.WaitRef{CallID: "plan"}, d.Wait)
	require.NoError(t, d.Settle(fgAnswer("yes")))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(fgPatience):
		t.Fatal("plan review did not end")
	}
}
