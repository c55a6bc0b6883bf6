package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/bridge"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/runtimetest"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
)

// The conformance scenarios (issue 9). Each runs once per runtime in
// confRuntimes and records rows of the table TestMain prints; see
// conformance_harness_test.go for the driver.

const confSession = "conf"

// A Client answers in time: the tool result is the answer batch (M7), the
// model reads it, and the question settles. Every request/header offers
// ask_user_question exactly as the Go tool does.
func TestConformanceAnsweredInTime(t *testing.T) {
	t.Parallel()
	confScenario(t, func(t *testing.T, w *confWorld) {
		w.model.set(func(r *chatRequest) chatReply {
			if res, ok := r.result("call_1"); ok {
				return chatReply{text: "Using " + res}
			}
			return chatReply{calls: []chatCall{askCall("call_1", 30)}}
		})
		settled := w.answerFirst(confSession, sqlite)
		w.session(confSession)
		confRow(t, w.rt, confRows[0], func(t *testing.T) {
			require.NoError(t, <-settled)
			evts := w.turnEnded(t, confSession)
			res, _, ok := toolResult(evts, w.callID(t, confSession, "call_1"))
			require.True(t, ok, runtimetest.Describe(evts))
			require.False(t, res.IsError)
			require.Equal(t, `{"answers":[{"id":"db","selected":["SQLite"]}]}`, events.JoinText(res.Content))
			requireGoSchema(t, evts)
			reqs := w.model.all()
			require.Len(t, reqs, 2)
			seen, _ := reqs[1].result("call_1")
			require.Equal(t, events.JoinText(res.Content), seen, "the model reads the batch")
		})
		w.finish()
	})
}

// A timed question times out: the result is the Go tool's pending text
// (M6) and the agent continues with another model request. A late answer
// is accepted while the agent works; a second one is refused REPLY_QUEUED
// while the first awaits admission (D6, D8); the first is admitted once,
// at the next step boundary, and settles the question late (D5).
func TestConformanceLateAnswer(t *testing.T) {
	t.Parallel()
	confScenario(t, func(t *testing.T, w *confWorld) {
		working := newGate()
		w.model.set(lateAnswerScript(1, working))
		w.session(confSession)
		var accepted holdover.AnswerResult
		callID := "call_1"
		if !confRow(t, w.rt, confRows[1], func(t *testing.T) {
			callID = w.callID(t, confSession, "call_1")
			res, evts := w.awaitResult(t, confSession, callID)
			require.False(t, res.IsError)
			require.Equal(t, goPendingText(t, callID), events.JoinText(res.Content))
			working.await(t, "the next step after pending")
			requireGoSchema(t, evts)
		}) {
			working.release()
			w.finish()
			return
		}
		confRow(t, w.rt, confRows[3], func(t *testing.T) {
			accepted = w.answerLate(t, callID)
			_, err := w.answer(confSession, callID, []holdover.Answer{{ID: "db", Selected: []string{"Postgres"}}})
			require.Equal(t, holdover.CodeReplyQueued, holdover.CodeOf(err), "%v", err)
		})
		working.release()
		confRow(t, w.rt, confRows[2], func(t *testing.T) {
			w.requireAdmittedOnce(t, callID, accepted.MessageID)
		})
		w.finish()
	})
}

// A takeover while the model thinks: the instance that asks is no longer
// the live root, so the service refuses it CALLER_NOT_LIVE (M9).
func TestConformanceStaleInstance(t *testing.T) {
	t.Parallel()
	confScenario(t, func(t *testing.T, w *confWorld) {
		w.model.set(func(r *chatRequest) chatReply {
			if res, ok := r.result("call_1"); ok {
				return chatReply{text: "I cannot ask: " + res}
			}
			if _, ok := r.result("call_0"); !ok && r.offers(bridge.PendingAnswersTool) {
				// A host opens its Session as it starts, aside: once a tool
				// call returned, the host is the live root to take over.
				return chatReply{calls: []chatCall{{id: "call_0", name: bridge.PendingAnswersTool, args: map[string]any{}}}}
			}
			// Another instance takes the Session over before the answer.
			_, err := w.roots.Register(context.Background(), confSession, "intruder")
			if err != nil {
				return chatReply{text: "takeover failed: " + err.Error()}
			}
			return chatReply{calls: []chatCall{askCall("call_1", 5)}}
		})
		w.session(confSession)
		confRow(t, w.rt, confRows[4], func(t *testing.T) {
			res, _ := w.awaitResult(t, confSession, w.callID(t, confSession, "call_1"))
			require.True(t, res.IsError, events.JoinText(res.Content))
			require.NotNil(t, res.Error)
			require.Equal(t, holdover.CodeCallerNotLive, res.Error.Code, events.JoinText(res.Content))
			require.Contains(t, events.JoinText(res.Content), "is not the live runtime root")
		})
		w.finish()
	})
}

// A child agent's question is refused DELEGATED_CALLER, with the message
// that tells the child to report it instead (M9).
func TestConformanceChildIsDelegated(t *testing.T) {
	t.Parallel()
	confScenario(t, func(t *testing.T, w *confWorld) {
		if w.rt.host {
			confNotApplicable(w.rt, confRows[5]) // a host's subagents are its own
			t.Skip("a host runtime runs no child agents through Holdover")
		}
		w.model.set(func(r *chatRequest) chatReply {
			if r.offers(runtime.SubagentTool) { // the parent
				if res, ok := r.result("call_1"); ok {
					return chatReply{text: "The child reported: " + res}
				}
				return chatReply{calls: []chatCall{{id: "call_1", name: runtime.SubagentTool, args: map[string]string{"task": "Find out which database to use."}}}}
			}
			if res, ok := r.result("child_1"); ok {
				return chatReply{text: "Open question for the user: " + res}
			}
			return chatReply{calls: []chatCall{askCall("child_1", 5)}}
		})
		w.session(confSession)
		child := runtime.ChildSession(confSession, "call_1")
		w.sessions = append(w.sessions, child)
		confRow(t, w.rt, confRows[5], func(t *testing.T) {
			res, _ := w.awaitResult(t, child, "child_1")
			require.True(t, res.IsError)
			require.NotNil(t, res.Error)
			require.Equal(t, holdover.CodeDelegatedCaller, res.Error.Code, events.JoinText(res.Content))
			require.Contains(t, events.JoinText(res.Content), "put the open question in your final result")
			parent := w.logs(t).AwaitCount(confSession, events.TypeTurnEnd, 1)
			final, _, ok := toolResult(parent, "call_1")
			require.True(t, ok)
			require.Contains(t, events.JoinText(final.Content), "Open question for the user: DELEGATED_CALLER")
		})
		w.finish()
	})
}

// The runtime is SIGKILLed while it waits on a timed question: the worker
// ends the orphaned wait (ASK_ABORTED). A pool member takes the resume
// request (D7), registers a new epoch, repairs the interrupted call as the
// Go runtime does (TOOL_OUTCOME_UNKNOWN, D3), so the question turns
// continued; the late answer is queued and admitted there (D8).
func TestConformanceRuntimeKilledMidWait(t *testing.T) {
	t.Parallel()
	confScenario(t, func(t *testing.T, w *confWorld) {
		if w.rt.host {
			hostKilledMidWait(t, w)
			return
		}
		working := newGate()
		w.model.set(lateAnswerScript(600, working))
		rec := w.watch(confSession)
		first := w.session(confSession, "--pool")
		other := w.runner("--pool")
		w.joined(first)
		w.joined(other)
		var was liveroot.Record
		var resumedBy string
		if !confRow(t, w.rt, confRows[6], func(t *testing.T) {
			require.Equal(t, "call_1", rec.next(t).CallID, "the foreground wait is running")
			var err error
			was, _, err = w.roots.Lookup(w.ctx, confSession)
			require.NoError(t, err)
			first.kill()
			require.Equal(t, userquestions.ReasonAborted, rec.cancel(t).reason, "the worker ends the dead runtime's wait")
			ctx, cancel := context.WithTimeout(w.ctx, confPatience)
			defer cancel()
			resumedBy, err = liveroot.RequestResume(ctx, w.env.Conn, confSession)
			require.NoError(t, err)
			now, _, err := w.roots.Lookup(w.ctx, confSession)
			require.NoError(t, err)
			require.Equal(t, resumedBy, now.Instance)
			require.NotEqual(t, was.Instance, now.Instance, "the other pool member took it")
			require.Equal(t, was.Epoch+1, now.Epoch, "a new epoch fences the dead instance out")
		}) {
			working.release()
			w.finish()
			return
		}
		confRow(t, w.rt, confRows[7], func(t *testing.T) {
			res, _ := w.awaitResult(t, confSession, "call_1")
			require.Equal(t, &events.ToolResult{
				Turn: res.Turn, CallID: "call_1", Name: holdover.ToolName, Content: events.Text(runtime.InterruptedText),
				IsError: true, Error: &events.ToolError{Code: holdover.CodeToolOutcomeUnknown},
			}, res)
			working.await(t, "the step after the repair")
			require.Equal(t, projection.Continued, projected(t, w, confSession).Active[0].Status)
			accepted := w.answerLate(t, "call_1")
			working.release()
			w.requireAdmittedOnce(t, "call_1", accepted.MessageID)
		})
		working.release()
		w.finish()
	})
}

// hostKilledMidWait is the scenario for a host, which has no resume pool:
// the host is SIGKILLed while its question waits (its holdover mcp sees
// its stdin end, as under a killed Claude Code), and the wait ends. The
// host started again on its transcript (Claude Code's --resume) takes the
// Session over with a new epoch, its holdover mcp repairs the call as it
// starts (TOOL_OUTCOME_UNKNOWN, D3), and the late answer is handed over by
// its next hook, once (D8).
func hostKilledMidWait(t *testing.T, w *confWorld) {
	working := newGate()
	w.model.set(lateAnswerScript(600, working))
	rec := w.watch(confSession)
	transcript := filepath.Join(t.TempDir(), "transcript.json")
	first := w.session(confSession, "--transcript", transcript)
	var callID string
	if !confRow(t, w.rt, confRows[6], func(t *testing.T) {
		delivered := rec.next(t).CallID
		callID = w.callID(t, confSession, "call_1")
		require.Equal(t, callID, delivered, "the foreground wait is running")
		was, _, err := w.roots.Lookup(w.ctx, confSession)
		require.NoError(t, err)
		first.kill()
		require.Equal(t, userquestions.ReasonAborted, rec.cancel(t).reason, "the wait of the killed host ends")
		w.runner("--session", confSession, "--transcript", transcript)
		require.Eventually(t, func() bool {
			now, _, err := w.roots.Lookup(w.ctx, confSession)
			return err == nil && now.Instance != was.Instance && now.Epoch == was.Epoch+1
		}, confPatience, 10*time.Millisecond, "the restarted host took the Session over with a new epoch")
	}) {
		working.release()
		w.finish()
		return
	}
	confRow(t, w.rt, confRows[7], func(t *testing.T) {
		res, _ := w.awaitResult(t, confSession, callID)
		require.Equal(t, &events.ToolResult{
			Turn: res.Turn, CallID: callID, Name: holdover.ToolName, Content: events.Text(runtime.InterruptedText),
			IsError: true, Error: &events.ToolError{Code: holdover.CodeToolOutcomeUnknown},
		}, res)
		working.await(t, "the step after the repair")
		require.Equal(t, projection.Continued, projected(t, w, confSession).Active[0].Status)
		accepted := w.answerLate(t, callID)
		working.release()
		w.requireAdmittedOnce(t, callID, accepted.MessageID)
	})
	working.release()
	w.finish()
}

// The worker owning the wait is SIGKILLed: the runtime's call turns
// pending within the release bound (its caller watches the worker's
// lease), the agent goes on, and the question stays answerable.
func TestConformanceWorkerKilledMidWait(t *testing.T) {
	t.Parallel()
	confScenario(t, func(t *testing.T, w *confWorld) {
		w.model.set(func(r *chatRequest) chatReply {
			if _, ok := r.result("call_1"); ok {
				return chatReply{text: "The question is pending; I went on."}
			}
			return chatReply{calls: []chatCall{askCall("call_1", 600)}}
		})
		rec := w.watch(confSession)
		w.session(confSession)
		confRow(t, w.rt, confRows[8], func(t *testing.T) {
			delivered := rec.next(t).CallID
			callID := w.callID(t, confSession, "call_1")
			require.Equal(t, callID, delivered, "the foreground wait is running")
			w.worker.kill()
			killed := time.Now()
			evts := w.logs(t).Await(confSession, "the pending result", func(evts []events.Event) bool {
				_, _, ok := toolResult(evts, callID)
				return ok
			})
			took := time.Since(killed)
			t.Logf("%s: pending %v after the worker was SIGKILLed (release bound %v)", w.rt.name, took.Round(time.Millisecond), confBound)
			res, _, _ := toolResult(evts, callID)
			require.Equal(t, goPendingText(t, callID), events.JoinText(res.Content))
			require.Less(t, took, confBound+fgSlack)
			w.worker = w.startWorker() // the projection and late answers need a worker again
			w.turnEnded(t, confSession)
			require.Equal(t, projection.Continued, projected(t, w, confSession).Active[0].Status)
		})
		w.finish()
	})
}

// The indirect attacks on a runtime (auth's TestIndirectDenials has the
// same rows against the Go runtime in process): while the agent is busy
// with a user's message queued behind its model request, a gateway sends
// a discard request for it replying into another Session's reply subject
// (the agent's answer would be stored there), an agent replays a stored
// discard request onto the Session's discard subject by direct get, and
// an operator replays a stored message naming another Session onto the
// resume subject. The runtime refuses all three unanswered, and nothing
// changes: no reply stored, the other Session not taken, and the queued
// message admitted at the next step.
func TestConformanceForgedRequestsRefused(t *testing.T) {
	t.Parallel()
	confScenario(t, func(t *testing.T, w *confWorld) {
		if w.rt.host {
			confNotApplicable(w.rt, confOriginRow) // a host answers no discard or resume request
			t.Skip("a host runtime answers no discard or resume request")
		}
		working := newGate()
		w.model.set(func(r *chatRequest) chatReply {
			working.pass()
			return chatReply{text: "Done."}
		})
		runner := w.session(confSession, "--pool")
		w.joined(runner)
		working.await(t, "the first model request")
		const other, queued = "conf-other", "conf-queued"
		_, err := runtime.Steer(w.ctx, w.env.JS, confSession, queued, "Use SQLite after all.")
		require.NoError(t, err)
		confRow(t, w.rt, confOriginRow, func(t *testing.T) {
			w.logs(t).Await(confSession, "the splice of the queued message", func(evts []events.Event) bool { return spliced(evts, queued) })
			discardSubject, err := runtime.DiscardSubject(confSession)
			require.NoError(t, err)
			into, err := streams.ReplySubject(other, "call_1")
			require.NoError(t, err)
			// What the agent stored in a Session of its own to replay: a
			// discard request, and a message naming the other Session.
			attacker, attackerJS := w.env.As(t, auth.Agent)
			stored := func(body string) uint64 {
				subject, err := streams.EventsSubject("conf-attacker")
				require.NoError(t, err)
				ack, err := attackerJS.Publish(w.ctx, subject, []byte(body))
				require.NoError(t, err)
				return ack.Sequence
			}
			discardAt := stored(fmt.Sprintf(`{"messageId":%q,"reason":"taken back"}`, queued))
			resumeAt := stored(fmt.Sprintf(`{"session":%q}`, other))
			require.NoError(t, w.gateway.PublishRequest(discardSubject, into, fmt.Appendf(nil, `{"session":%q,"messageId":%q}`, confSession, queued)))
			require.NoError(t, attacker.PublishRequest("$JS.API.DIRECT.GET."+streams.SessionsStream, discardSubject, fmt.Appendf(nil, `{"seq":%d}`, discardAt)))
			operator, _ := w.env.As(t, auth.Operator)
			require.NoError(t, operator.PublishRequest("$JS.API.DIRECT.GET."+streams.SessionsStream, streams.ResumeSubject, fmt.Appendf(nil, `{"seq":%d}`, resumeAt)))
			require.Eventually(t, func() bool { return strings.Count(runner.log(), "request refused for its origin") == 3 },
				confPatience, 10*time.Millisecond, "the runtime refused three requests:\n%s", runner.log())

			_, err = w.env.Topology.Sessions.GetLastMsgForSubject(w.ctx, into)
			require.ErrorIs(t, err, jetstream.ErrMsgNotFound, "the agent answered into another Session's reply subject")
			rec, _, err := w.roots.Lookup(w.ctx, other)
			require.NoError(t, err)
			require.Zero(t, rec.Epoch, "the pool took %s over", other)
			working.release()
			evts := w.logs(t).Await(confSession, "the admission of the queued message", func(evts []events.Event) bool {
				for _, e := range evts {
					if m, ok := e.Body.(*events.UserMessage); ok && m.Message.ID == queued {
						return true
					}
				}
				return false
			})
			for _, e := range evts {
				if d, ok := e.Body.(*events.InboxDiscarded); ok {
					require.NotEqual(t, queued, d.MessageID, "the queued message was discarded")
				}
			}
		})
		working.release()
		w.finish()
	})
}

// lateAnswerScript asks call_1 with timeout seconds; once its result is
// in, the next request waits at working (the agent's independent work,
// while the user answers late); once the late reply is in, it thanks.
func lateAnswerScript(timeout int, working *gate) func(r *chatRequest) chatReply {
	return func(r *chatRequest) chatReply {
		switch _, answered := r.result("call_1"); {
		case r.replies(r.askID("call_1")) > 0:
			return chatReply{text: "Thanks, switching to your answer."}
		case answered:
			working.pass()
			return chatReply{text: "I went on with the parts that do not need the answer."}
		}
		return chatReply{calls: []chatCall{askCall("call_1", timeout)}}
	}
}

// answerLate answers callID late with sqlite, requires it accepted, and
// waits until the runtime spliced the reply.
func (w *confWorld) answerLate(t *testing.T, callID string) holdover.AnswerResult {
	t.Helper()
	res, err := w.answer(confSession, callID, sqlite)
	require.NoError(t, err)
	require.True(t, res.Accepted)
	if !w.rt.host { // a host splices the reply at its next hand-over
		w.logs(t).Await(confSession, "the splice of the reply", func(evts []events.Event) bool { return spliced(evts, res.MessageID) })
	}
	return res
}

// requireAdmittedOnce waits for the Turn's end and checks that the late
// reply messageID to callID was claimed and admitted once, at a step
// boundary before the next model request, read by the model once, and
// settled the question late (D5, D8), naming the user who answered as the
// gateway said (issue 10).
func (w *confWorld) requireAdmittedOnce(t *testing.T, callID, messageID string) {
	t.Helper()
	evts := w.turnEnded(t, confSession)
	admitted := admissions(evts, callID)
	require.Len(t, admitted, 1, runtimetest.Describe(evts))
	at := admitted[0]
	admittedMsg := evts[at].Body.(*events.UserMessage).Message
	require.Equal(t, messageID, admittedMsg.ID)
	require.Equal(t, confUser, admittedMsg.Source.User, "the admitted reply names who answered, as the gateway said (issue 10)")
	require.Equal(t, events.TypeInboxClaimed, evts[at-1].Type, "claimed, then admitted")
	if w.rt.host {
		// A host's hook splices, claims and admits in one hand-over; the
		// host's model request that follows is not in the log.
		require.Equal(t, events.TypeInboxSpliced, evts[at-2].Type, "spliced at the hand-over")
	} else {
		require.Equal(t, events.TypeStepEnd, evts[at-2].Type, "at a step boundary")
		require.Equal(t, events.TypeRequestHeader, evts[at+1].Type, "before the next model request")
	}
	require.Equal(t, 1, claims(evts, messageID), "claimed once")
	reqs := w.model.all()
	require.Equal(t, 1, reqs[len(reqs)-1].replies(callID), "the model reads the reply once")
	view := projected(t, w, confSession)
	require.Len(t, view.Settled, 1)
	require.True(t, view.Settled[0].Late)
	require.Equal(t, sqlite, view.Settled[0].Answers)
}

// projected waits until the stored projection of sid equals the fold of
// its log and returns it.
func projected(t *testing.T, w *confWorld, sid string) projection.View {
	t.Helper()
	store := projection.NewStore(w.env.JS, w.env.Topology.Sessions, w.env.Topology.Questions)
	var stored projection.View
	require.Eventually(t, func() bool {
		var equal bool
		var err error
		stored, _, equal, err = store.Check(w.ctx, sid)
		return err == nil && equal
	}, confPatience, 10*time.Millisecond, "the projection of %s never equalled the fold of its log", sid)
	return stored
}
