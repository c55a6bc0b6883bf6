package steer_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/projection/projectiontest"
	"github.com/holdover-dev/holdover/steer"
	"github.com/holdover-dev/holdover/steer/steertest"
	"github.com/holdover-dev/holdover/streams"
)

// rig is the shared late-answer Env with a steer Answerer on it, and,
// when marking, a projection worker writing Views and reservation markers.
type rig struct {
	*steertest.Env
	answerer *steer.Answerer
	marking  bool
}

func newRig(t *testing.T) *rig {
	env := steertest.Start(t)
	return &rig{Env: env, answerer: steer.New(env.Views, env.Replies)}
}

// newMarkingRig is newRig with a projection worker running.
func newMarkingRig(t *testing.T) *rig {
	r := newRig(t)
	r.RunWorker(t)
	r.marking = true
	return r
}

// bothWays runs test on a rig without a projection worker, where every
// release and restore is read from the log, and on one with a worker,
// where the test waits for each to be marked on the reply subject first
// (folded): the rule must give the same answers either way (D8).
func bothWays(t *testing.T, test func(t *testing.T, r *rig)) {
	t.Run("read from the log", func(t *testing.T) { test(t, newRig(t)) })
	t.Run("marked by the worker", func(t *testing.T) { test(t, newMarkingRig(t)) })
}

// folded waits, on a marking rig, until the projection worker has stored
// s's View as of its last event, and so marked what it released or
// restored.
func (r *rig) folded(t *testing.T, s *steertest.Session) {
	t.Helper()
	if r.marking {
		projectiontest.Folded(t, r.Topology.Questions, s.ID, s.Last())
	}
}

// lastReply reads the last message of callID's reply subject.
func (r *rig) lastReply(t *testing.T, sid, callID string) inbox.Last {
	t.Helper()
	l, err := r.Replies.Last(context.Background(), sid, callID)
	require.NoError(t, err)
	return l
}

func (r *rig) session(t *testing.T, sid string) *steertest.Session {
	return steertest.NewSession(t, r.Log, sid)
}

func (r *rig) answer(t *testing.T, sid, callID string, answers []holdover.Answer) (holdover.AnswerResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return r.answerer.Answer(ctx, holdover.AnswerRequest{Session: sid, CallID: callID, Answers: answers})
}

func (r *rig) accept(t *testing.T, sid, callID string, answers []holdover.Answer) string {
	t.Helper()
	res, err := r.answer(t, sid, callID, answers)
	require.NoError(t, err)
	require.True(t, res.Accepted)
	require.NotEmpty(t, res.MessageID)
	return res.MessageID
}

// refused asserts that an answer to callID fails with code and is not
// accepted.
func (r *rig) refused(t *testing.T, code holdover.Code, sid, callID string, answers []holdover.Answer) {
	t.Helper()
	res, err := r.answer(t, sid, callID, answers)
	require.Error(t, err)
	require.Equal(t, code, holdover.CodeOf(err), "%v", err)
	require.False(t, res.Accepted)
}

// notAnswerable asserts that an answer to callID is turned down with
// false, not an error (D6), for the reason code, and queues nothing.
func (r *rig) notAnswerable(t *testing.T, code holdover.Code, sid, callID string, answers []holdover.Answer, msgAndArgs ...any) {
	t.Helper()
	res, err := r.answer(t, sid, callID, answers)
	require.NoError(t, err, msgAndArgs...)
	require.False(t, res.Accepted, msgAndArgs...)
	require.Empty(t, res.MessageID, msgAndArgs...)
	require.NotNil(t, res.Reason, msgAndArgs...)
	require.Equal(t, code, res.Reason.Code, msgAndArgs...)
	require.Contains(t, res.Reason.Message, callID, msgAndArgs...)
}

// continuedCall writes Session s1 in which call-1, asking q1, is
// continued by its pending result, so it takes a late answer (D6).
func (r *rig) continuedCall(t *testing.T) (*steertest.Session, []holdover.Question) {
	qs := steertest.Questions("q1")
	s := r.session(t, "s1")
	s.Continued("call-1", qs)
	return s, qs
}

// openCall writes Session s1 in which the timed call-1, asking q1, is
// still running: no result yet.
func (r *rig) openCall(t *testing.T) (*steertest.Session, []holdover.Question) {
	qs := steertest.Questions("q1")
	s := r.session(t, "s1")
	s.Header(true)
	s.Ask("call-1", qs)
	return s, qs
}

// acceptedAndClaimed accepts an answer to call-1 and records the agent
// splicing the queued reply into its inbox and claiming it for its next
// step (D8); it returns the reply as queued.
func (r *rig) acceptedAndClaimed(t *testing.T, s *steertest.Session, qs []holdover.Question) inbox.Queued {
	t.Helper()
	id := r.accept(t, "s1", "call-1", steertest.Choose(qs))
	q := r.queued(t, "s1")
	s.Splice(q[0].Message, q[0].Seq)
	s.Claim(id)
	return q[0]
}

// queued reads every message in Session sid's inbox, passing over
// reservation markers.
func (r *rig) queued(t *testing.T, sid string) []inbox.Queued {
	return steertest.Queued(t, r.Topology.Sessions, sid)
}

// D6: an accepted answer is queued as a user message with the reply
// source and the answer_to_pending_question text naming the call, its
// original questions and the answers.
func TestD6AcceptedAnswerQueuesTheReplyMessage(t *testing.T) {
	r := newRig(t)
	s := r.session(t, "s1")
	qs := steertest.Questions("color", "size")
	s.Continued("call-1", qs)

	answers := []holdover.Answer{{ID: "size", Selected: []string{"no"}}, {ID: "color", Selected: []string{}, Custom: "teal"}}
	id := r.accept(t, "s1", "call-1", answers)

	q := r.queued(t, "s1")
	require.Len(t, q, 1)
	msg := q[0].Message
	require.Equal(t, id, msg.ID)
	require.Equal(t, "user", msg.Role)
	require.Equal(t, events.Source{Kind: events.SourceUserQuestionReply, CallID: "call-1", Outcome: events.OutcomeAnswered}, msg.Source)
	var text map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(events.JoinText(msg.Content)), &text))
	require.JSONEq(t, `"answer_to_pending_question"`, string(text["kind"]))
	require.JSONEq(t, `"ask_user_question"`, string(text["tool"]))
	require.JSONEq(t, `"call-1"`, string(text["callId"]))
	reply, err := events.ParseReply(events.JoinText(msg.Content))
	require.NoError(t, err)
	require.Equal(t, qs, reply.Questions)
	require.Equal(t, answers, reply.Answers)

	// The message id is the JetStream message id, so a retried publish is
	// not a second reply.
	raw, err := r.Topology.Sessions.GetMsg(context.Background(), q[0].Seq)
	require.NoError(t, err)
	require.Equal(t, id, raw.Header.Get(jetstream.MsgIDHeader))
}

// D6: an answer never settles the question; the call stays continued
// until the agent admits the reply (D5).
func TestD6AnswerDoesNotSettle(t *testing.T) {
	r := newRig(t)
	_, qs := r.continuedCall(t)
	r.accept(t, "s1", "call-1", steertest.Choose(qs))

	v, err := projection.NewStore(r.JS, r.Topology.Sessions, r.Topology.Questions).CaughtUp(context.Background(), "s1")
	require.NoError(t, err)
	c, ok := v.Find("call-1")
	require.True(t, ok)
	require.Equal(t, projection.Continued, c.Status)
}

// D6 (M5): a batch that skips every question is an answer, and accepted.
func TestD6AllSkippedBatchIsAccepted(t *testing.T) {
	r := newRig(t)
	qs := steertest.Questions("q1", "q2")
	r.session(t, "s1").Continued("call-1", qs)
	r.accept(t, "s1", "call-1", steertest.Skip(qs))
	// A skipped answer sent with selected omitted reads the same.
	r2 := r.session(t, "s2")
	r2.Continued("call-1", qs)
	r.accept(t, "s2", "call-1", []holdover.Answer{{ID: "q1"}, {ID: "q2"}})
}

// D6: BAD_ANSWER unless the batch names every question exactly once; a
// rejected batch queues nothing and leaves the call answerable.
func TestD6BatchMustNameEveryQuestionOnce(t *testing.T) {
	r := newRig(t)
	qs := steertest.Questions("q1", "q2")
	r.session(t, "s1").Continued("call-1", qs)
	yes := []string{"yes"}
	for name, answers := range map[string][]holdover.Answer{
		"empty":     {},
		"nil":       nil,
		"missing":   {{ID: "q1", Selected: yes}},
		"wrong id":  {{ID: "q1", Selected: yes}, {ID: "q3", Selected: yes}},
		"duplicate": {{ID: "q1", Selected: yes}, {ID: "q1", Selected: yes}},
		"extra":     {{ID: "q1", Selected: yes}, {ID: "q2", Selected: yes}, {ID: "q3", Selected: yes}},
		"repeat":    {{ID: "q1", Selected: yes}, {ID: "q2", Selected: yes}, {ID: "q2", Selected: yes}},
	} {
		t.Run(name, func(t *testing.T) {
			r.refused(t, holdover.CodeBadAnswer, "s1", "call-1", answers)
		})
	}
	require.Empty(t, r.queued(t, "s1"))
	r.accept(t, "s1", "call-1", steertest.Choose(qs))
}

// D6: false (not an error) for an unknown call or one that is not
// continued: open, settled in time, failed, or legacy.
func TestD6NotAnswerableIsFalse(t *testing.T) {
	r := newRig(t)
	qs := steertest.Questions("q1")
	s := r.session(t, "s1")
	s.Header(true)
	s.Ask("open", qs)
	s.Ask("settled", qs)
	answered, err := json.Marshal(holdover.Batch{Answers: steertest.Choose(qs)})
	require.NoError(t, err)
	s.Append(&events.ToolResult{CallID: "settled", Name: holdover.ToolName, Content: events.Text(string(answered))})
	s.Ask("failed", qs)
	s.Append(&events.ToolResult{CallID: "failed", Name: holdover.ToolName, IsError: true, Error: &events.ToolError{Code: holdover.CodeAskAborted}})
	// M1, D2, D3: a legacy call repaired as TOOL_OUTCOME_UNKNOWN is never
	// tracked, so it is not answerable.
	s.Header(false)
	s.Ask("legacy", qs)
	s.Repaired("legacy")

	for callID, code := range map[string]holdover.Code{
		"unknown": holdover.CodeCallUnknown,
		"open":    holdover.CodeCallOpen,
		"settled": holdover.CodeCallSettled,
		"failed":  holdover.CodeCallUnknown,
		"legacy":  holdover.CodeCallUnknown,
	} {
		r.notAnswerable(t, code, "s1", callID, steertest.Choose(qs), callID)
	}
	r.notAnswerable(t, holdover.CodeCallUnknown, "no-such-session", "call-1", steertest.Choose(qs))
	require.Empty(t, r.queued(t, "s1"))
}

// D3: a timed call repaired as TOOL_OUTCOME_UNKNOWN is continued, so it
// takes a late answer.
func TestD6RepairedTimedCallIsAnswerable(t *testing.T) {
	r := newRig(t)
	s, qs := r.openCall(t)
	s.Repaired("call-1")
	r.accept(t, "s1", "call-1", steertest.Choose(qs))
}

// D6 is validated against the projection caught up to the Session's last
// event: no projection worker runs here, and the KV bucket is empty.
func TestD6ValidatesAgainstTheCaughtUpLog(t *testing.T) {
	r := newRig(t)
	s, qs := r.openCall(t)
	r.notAnswerable(t, holdover.CodeCallOpen, "s1", "call-1", steertest.Choose(qs), "an open call is not answerable")

	s.Pending("call-1")
	r.accept(t, "s1", "call-1", steertest.Choose(qs))
	_, err := r.Topology.Questions.Get(context.Background(), "s1")
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound, "steer reads the log, it never writes the projection")
}

// D6: out-of-order answers to two continued calls queue in submission
// order.
func TestD6AnswersQueueInSubmissionOrder(t *testing.T) {
	r := newRig(t)
	qs := steertest.Questions("q1")
	s := r.session(t, "s1")
	s.Continued("first", qs)
	s.Continued("second", qs)

	idSecond := r.accept(t, "s1", "second", steertest.Choose(qs))
	idFirst := r.accept(t, "s1", "first", steertest.Skip(qs))

	q := r.queued(t, "s1")
	require.Len(t, q, 2)
	require.Equal(t, []string{idSecond, idFirst}, []string{q[0].Message.ID, q[1].Message.ID})
	require.Equal(t, "second", q[0].Message.Source.CallID)
	require.Equal(t, "first", q[1].Message.Source.CallID)
	require.Less(t, q[0].Seq, q[1].Seq)
}

// D8: a second answer is REPLY_QUEUED while the first awaits admission,
// through splice and claim, and accepted again after a discard.
func TestD8SecondAnswerQueuedUntilDiscard(t *testing.T) {
	bothWays(t, func(t *testing.T, r *rig) {
		s, qs := r.continuedCall(t)
		first := r.accept(t, "s1", "call-1", steertest.Choose(qs))

		r.refused(t, holdover.CodeReplyQueued, "s1", "call-1", steertest.Skip(qs))
		// D6: REPLY_QUEUED comes before BAD_ANSWER, also while only the
		// reply subject knows the reply (not spliced yet).
		r.refused(t, holdover.CodeReplyQueued, "s1", "call-1", nil)

		q := r.queued(t, "s1")
		s.Splice(q[0].Message, q[0].Seq)
		r.folded(t, s)
		r.refused(t, holdover.CodeReplyQueued, "s1", "call-1", steertest.Skip(qs))
		s.Claim(first)
		r.folded(t, s)
		r.refused(t, holdover.CodeReplyQueued, "s1", "call-1", steertest.Skip(qs))

		// P5, §7: the queued reply is cancelled before admission; the
		// question stays answerable.
		s.Discard(first)
		r.folded(t, s)
		second := r.accept(t, "s1", "call-1", steertest.Skip(qs))
		require.NotEqual(t, first, second)
		require.Len(t, r.queued(t, "s1"), 2)
		r.refused(t, holdover.CodeReplyQueued, "s1", "call-1", steertest.Skip(qs))
	})
}

// D8: a Turn that ends without admitting a spliced reply releases it; a
// Turn end before the reply entered the agent's inbox does not, because
// the reply is still on its way into the next Turn.
func TestD8UnadmittedTurnEndReleases(t *testing.T) {
	bothWays(t, func(t *testing.T, r *rig) {
		s, qs := r.continuedCall(t)
		r.accept(t, "s1", "call-1", steertest.Choose(qs))

		s.TurnEnd("t2")
		r.folded(t, s)
		r.refused(t, holdover.CodeReplyQueued, "s1", "call-1", steertest.Skip(qs))

		q := r.queued(t, "s1")
		s.Splice(q[0].Message, q[0].Seq)
		s.TurnEnd("t3")
		r.folded(t, s)
		r.accept(t, "s1", "call-1", steertest.Skip(qs))
	})
}

// D5, D8: admission settles the call; it is then no longer answerable.
func TestD8AdmissionSettles(t *testing.T) {
	bothWays(t, func(t *testing.T, r *rig) {
		s, qs := r.continuedCall(t)
		reply := r.acceptedAndClaimed(t, s, qs)
		s.Admit(reply.Message)
		s.TurnEnd("t2")
		r.folded(t, s)

		r.notAnswerable(t, holdover.CodeCallSettled, "s1", "call-1", steertest.Skip(qs))
		if r.marking {
			require.Equal(t, inbox.Released, r.lastReply(t, "s1", "call-1").Marker)
		}
	})
}

// D8: a reply restored after a restart and claimed again re-creates its
// reservation, which blocks a new answer until the reply is admitted.
func TestD8RestoredReclaimedReplyBlocksANewOne(t *testing.T) {
	bothWays(t, func(t *testing.T, r *rig) {
		ctx := context.Background()
		s, qs := r.continuedCall(t)
		reply := r.acceptedAndClaimed(t, s, qs)
		// The runtime dies; the repair ends the Turn without admission,
		// which releases the reservation.
		s.TurnEnd("t2")
		r.folded(t, s)
		held, err := r.Replies.Held(ctx, "s1", "call-1", reply.Message.ID)
		require.NoError(t, err)
		require.False(t, held)

		// The resumed runtime restores the reply from its splice and claims it.
		s.Claim(reply.Message.ID)
		r.folded(t, s)
		held, err = r.Replies.Held(ctx, "s1", "call-1", reply.Message.ID)
		require.NoError(t, err)
		require.True(t, held)
		r.refused(t, holdover.CodeReplyQueued, "s1", "call-1", steertest.Skip(qs))
		if r.marking {
			restored := r.lastReply(t, "s1", "call-1")
			require.Equal(t, inbox.Restored, restored.Marker)
			require.Equal(t, reply.Message.ID, restored.Holder())
		}

		s.Admit(reply.Message)
		r.notAnswerable(t, holdover.CodeCallSettled, "s1", "call-1", steertest.Skip(qs), "admitted: settled, no longer continued")
		require.Len(t, r.queued(t, "s1"), 1, "one reply, whatever happened to its reservation")
	})
}

// D6, D8: of 100 late answers to one continued call sent at once, exactly
// one is queued and the other 99 are REPLY_QUEUED.
//
// From a kept View too: each answer starts with the one write, exactly one
// is stored, and the 99 others, refused, are decided again.
func TestD8ConcurrentAnswersQueueOneReply(t *testing.T) {
	t.Run("from the kept View", func(t *testing.T) {
		r, _ := newKeepingRig(t)
		concurrentAnswersQueueOneReply(t, r, func(s *steertest.Session) { r.waitKept(t, s) })
	})
	bothWays(t, func(t *testing.T, r *rig) { concurrentAnswersQueueOneReply(t, r, func(*steertest.Session) {}) })
}

func concurrentAnswersQueueOneReply(t *testing.T, r *rig, ready func(*steertest.Session)) {
	s, qs := r.continuedCall(t)
	ready(s)
	const n = 100
	var wg sync.WaitGroup
	results := make([]holdover.AnswerResult, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { results[i], errs[i] = r.answer(t, "s1", "call-1", steertest.Choose(qs)) })
	}
	wg.Wait()
	var accepted []string
	for i := range n {
		if errs[i] == nil {
			require.True(t, results[i].Accepted)
			accepted = append(accepted, results[i].MessageID)
			continue
		}
		require.Equal(t, holdover.CodeReplyQueued, holdover.CodeOf(errs[i]), "%v", errs[i])
	}
	require.Len(t, accepted, 1)
	q := r.queued(t, "s1")
	require.Len(t, q, 1)
	require.Equal(t, accepted[0], q[0].Message.ID)
}

func TestBadIdsAreBadRequest(t *testing.T) {
	r := newRig(t)
	qs := steertest.Questions("q1")
	for _, sid := range []string{"a.b", "*", ">", "", "a b"} {
		r.refused(t, holdover.CodeBadRequest, sid, "call-1", steertest.Choose(qs))
	}
	r.refused(t, holdover.CodeBadRequest, "s1", "", steertest.Choose(qs))
}

// A call id that is not a plain token (as models produce) still works:
// it is encoded in the reply subject, never used raw.
func TestCallIDsAreTokenised(t *testing.T) {
	r := newRig(t)
	qs := steertest.Questions("q1")
	r.session(t, "s1").Continued("toolu.01*>", qs)
	r.accept(t, "s1", "toolu.01*>", steertest.Choose(qs))
	r.refused(t, holdover.CodeReplyQueued, "s1", "toolu.01*>", steertest.Choose(qs))
}

// D8: a reply that could not be queued reserves nothing (the publish is
// the reservation), so the user can answer again once the inbox is back.
func TestD8FailedPublishReservesNothing(t *testing.T) {
	r := newRig(t)
	qs := steertest.Questions("q1")
	r.session(t, "s1").Continued("call-1", qs)
	ctx := context.Background()
	noReplies := r.Topology.Sessions.CachedInfo().Config
	noReplies.Subjects = []string{streams.AllEvents, streams.AllInboxes} // no stream takes the reply
	_, err := r.JS.UpdateStream(ctx, noReplies)
	require.NoError(t, err)

	r.refused(t, holdover.CodeInternal, "s1", "call-1", steertest.Choose(qs))

	top, err := streams.Provision(ctx, r.JS, streams.Config{Memory: true})
	require.NoError(t, err)
	r.Topology = top
	require.Equal(t, inbox.Last{}, r.lastReply(t, "s1", "call-1"))
	r.accept(t, "s1", "call-1", steertest.Choose(qs))
}

// newKeepingRig is a marking rig whose projection worker the test stops,
// and waitKept waits until the View the worker wrote of s, as of its last
// event, is kept proven (projection.View.SessionSeq): what the one-write
// attempt of a late answer decides from.
func newKeepingRig(t *testing.T) (*rig, func()) {
	r := newRig(t)
	stop := r.RunWorker(t)
	r.marking = true
	return r, stop
}

func (r *rig) waitKept(t *testing.T, s *steertest.Session) projection.View {
	t.Helper()
	var kept projection.View
	require.Eventually(t, func() bool {
		v, ok := r.Views.Kept(s.ID)
		kept = v
		return ok && v.LastSeq == s.Last()
	}, 10*time.Second, 5*time.Millisecond, "the worker keeps a proven View of %s", s.ID)
	return kept
}

// D6: the one write decides from the kept View and expects the Session
// to be as of it; an event appended since (here the agent admitting
// another reply, which settles the call) makes the server refuse it, and
// the answer is decided again on the View caught up to the log: not
// answerable, nothing queued.
func TestD6OneWriteRefusedByAnEventDecidesAgain(t *testing.T) {
	r, stop := newKeepingRig(t)
	s, qs := r.continuedCall(t)
	kept := r.waitKept(t, s)
	stop() // the kept View goes stale from here

	other := steer.New(struct{ steer.Projection }{r.Views}, r.Replies) // another process: no kept View
	res, err := other.Answer(context.Background(), holdover.AnswerRequest{Session: "s1", CallID: "call-1", Answers: steertest.Choose(qs)})
	require.NoError(t, err)
	require.True(t, res.Accepted)
	q := r.queued(t, "s1")
	s.Splice(q[0].Message, q[0].Seq)
	s.Claim(res.MessageID)
	s.Admit(q[0].Message)
	stale, ok := r.Views.Kept("s1")
	require.True(t, ok)
	require.Equal(t, kept.SessionSeq, stale.SessionSeq, "the answer below starts from the stale kept View")
	require.Less(t, stale.SessionSeq, s.Last())

	r.notAnswerable(t, holdover.CodeCallSettled, "s1", "call-1", steertest.Choose(qs), "the call settled after the kept View (D5, D6)")
	require.Len(t, r.queued(t, "s1"), 1, "nothing more queued")
}

// D8: a reply queued since the kept View (by a process that keeps none)
// makes the one write fail, and the answer decided again on the reply
// subject is REPLY_QUEUED.
func TestD8OneWriteRefusedByAReplyIsReplyQueued(t *testing.T) {
	r, stop := newKeepingRig(t)
	s, qs := r.continuedCall(t)
	r.waitKept(t, s)
	stop()

	other := steer.New(struct{ steer.Projection }{r.Views}, r.Replies)
	res, err := other.Answer(context.Background(), holdover.AnswerRequest{Session: "s1", CallID: "call-1", Answers: steertest.Choose(qs)})
	require.NoError(t, err)
	require.True(t, res.Accepted)
	kept, ok := r.Views.Kept("s1")
	require.True(t, ok, "the kept View still says the call is free")
	require.Equal(t, inbox.Last{}, kept.Active[0].Reply)

	r.refused(t, holdover.CodeReplyQueued, "s1", "call-1", steertest.Choose(qs))
	require.Len(t, r.queued(t, "s1"), 1)
}

// D6, D8: a steered message queued since the kept View moves the Session,
// so the one write is refused; the answer read again finds the call still
// free and is accepted, after the steered message.
func TestD6OneWriteRefusedByASteeredMessageIsAcceptedOnRetry(t *testing.T) {
	r, stop := newKeepingRig(t)
	s, qs := r.continuedCall(t)
	r.waitKept(t, s)
	stop()

	steered := events.Message{ID: "steer-1", Role: "user", Content: events.Text("also, use Go"), Source: events.Source{Kind: events.SourceUser}}
	_, err := inbox.Publish(context.Background(), r.JS, "s1", steered)
	require.NoError(t, err)

	id := r.accept(t, "s1", "call-1", steertest.Choose(qs))
	q := r.queued(t, "s1")
	require.Len(t, q, 2)
	require.Equal(t, []string{"steer-1", id}, []string{q[0].Message.ID, q[1].Message.ID})
}

// D6, D8: with a proven View kept, an answer is one write: the stored
// reply expected the whole Session's last message to be the one the View
// is as of, and nothing was read to decide it.
func TestD6OneWriteFromTheKeptView(t *testing.T) {
	r, _ := newKeepingRig(t)
	s, qs := r.continuedCall(t)
	kept := r.waitKept(t, s)

	id := r.accept(t, "s1", "call-1", steertest.Choose(qs))
	subject, err := streams.ReplySubject("s1", "call-1")
	require.NoError(t, err)
	raw, err := r.Topology.Sessions.GetLastMsgForSubject(context.Background(), subject)
	require.NoError(t, err)
	require.Equal(t, id, raw.Header.Get(nats.MsgIdHdr))
	require.Equal(t, "holdover.session.s1.>", raw.Header.Get(jetstream.ExpectedLastSubjSeqSubjHeader))
	require.Equal(t, strconv.FormatUint(kept.SessionSeq, 10), raw.Header.Get(jetstream.ExpectedLastSubjSeqHeader))
}
