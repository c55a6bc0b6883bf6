package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/runtimetest"
	"github.com/holdover-dev/holdover/worker"
)

// poolBound is the release bound of the pool tests' root leases.
const poolBound = time.Second

// D7, M9: two `holdover agent` pool processes run; the one serving the
// Session is SIGKILLed during independent work after its timed question
// turned continued. Its registry record still names it, but its root lease
// ends the release bound later, so a late answer makes the worker ask the
// pool to resume the Session: the other process registers a new epoch
// (fencing the dead one out), repairs the interrupted work, admits the
// reply and settles the question late. Answered at once, while the dead
// root's lease still exists, the worker follows the lease to its end;
// answered after, it resumes at once.
func TestRestartPoolResumesTheSessionOfAKilledRoot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		leaseEnded bool // answer only once the dead root's lease is gone
	}{
		{"answered while the root lease outlives the process", false},
		{"answered once the root lease ended", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newRestartWorld(t, `ask db "Which database?" options Postgres,SQLite timeout 1
work 1 step of 60s
on late answer say Switching to {answers} for {callId}.
say Done.`)
			first := w.poolAgent("--session", restartSession, "--prompt", "Set up the service.")
			other := w.poolAgent()
			w.Await(restartSession, "independent work after the pending result", sleeping)
			w.awaitView("call_1 continued", callIs("call_1", projection.Continued))
			dead := w.liveRoot()
			require.ElementsMatch(t, []string{liveroot.LeaseName(dead.Instance), w.rootLeaseOf(other)}, w.rootLeases(),
				"each pool process holds its root lease; nats consumer ls CLAIMS shows both")

			first.kill()
			killed := time.Now()
			if tc.leaseEnded {
				require.Eventually(t, func() bool { return len(w.rootLeases()) == 1 }, restartPatience, 10*time.Millisecond)
				t.Logf("root lease ended %v after SIGKILL (release bound %v)", time.Since(killed).Round(time.Millisecond), poolBound)
			}
			res, err := w.user.Answer(w.ctx, holdover.AnswerRequest{Session: restartSession, CallID: "call_1", Answers: sqlite})
			require.NoError(t, err)
			require.True(t, res.Accepted)

			evts := w.awaitLateReaction()
			took := time.Since(killed)
			t.Logf("reply admitted by the other pool process %v after SIGKILL", took.Round(time.Millisecond))
			require.Less(t, took, poolBound+worker.DefaultResumeTimeout, "resumed within the release bound and the resume timeout")
			sleep := runtimetest.Last[*events.ToolCall](t, evts)
			require.Equal(t, runtime.SleepTool, sleep.Name)
			_, repaired := repairedResult(evts, sleep.CallID)
			require.True(t, repaired, "the interrupted sleep is repaired:\n%s", runtimetest.Describe(evts))
			w.requireAdmitted(evts, res.MessageID)
			require.Eventually(t, func() bool {
				return strings.Contains(w.worker.log(), `msg="resumed session for a queued reply" component=userQuestions service=userQuestions session=s1 reason=root_lost lost=`+dead.Instance)
			}, restartPatience, 10*time.Millisecond, "the worker logs why it resumed the Session")
			w.requireSettledLate(evts)

			now := w.liveRoot()
			require.Equal(t, w.rootLeaseOf(other), liveroot.LeaseName(now.Instance), "the other pool process is the live root")
			require.Equal(t, dead.Epoch+1, now.Epoch, "a new epoch fences the dead instance out")
			require.Equal(t, []string{liveroot.LeaseName(now.Instance)}, w.rootLeases())
			w.stop(other)
			w.stop(w.worker)
		})
	}
}

// poolAgent starts `holdover agent` in the resume pool with the tests'
// release bound and waits until it has joined the pool.
func (w *restartWorld) poolAgent(args ...string) *fgProc {
	w.t.Helper()
	p := w.agent(append([]string{"--pool", "--release-bound", poolBound.String()}, args...)...)
	require.Eventually(w.t, func() bool { return strings.Contains(p.log(), "joined the resume pool") },
		restartPatience, 10*time.Millisecond, "the agent never joined the resume pool")
	return p
}

// rootLeaseOf reads the root lease name a pool process logged on joining.
func (w *restartWorld) rootLeaseOf(p *fgProc) string {
	w.t.Helper()
	_, rest, ok := strings.Cut(p.log(), `msg="joined the resume pool"`)
	require.True(w.t, ok)
	_, rest, ok = strings.Cut(rest, "lease=")
	require.True(w.t, ok)
	name, _, _ := strings.Cut(rest, "\n")
	return strings.Fields(name)[0]
}

// rootLeases lists the root leases on the claims stream, as `nats
// consumer ls CLAIMS` shows them.
func (w *restartWorld) rootLeases() []string {
	w.t.Helper()
	lister := w.env.Topology.Claims.ConsumerNames(w.ctx)
	var names []string
	for name := range lister.Name() {
		if strings.HasPrefix(name, liveroot.LeaseName("")) {
			names = append(names, name)
		}
	}
	require.NoError(w.t, lister.Err())
	return names
}

// D3, D7, issue 20 item 4: a runtime SIGKILLed mid-wait leaves its
// question open; nobody restarts it by hand. The worker that held the
// wait hears the caller's lease end (ASK_ABORTED), sees the call still
// open and no live root once the dead runtime's root lease ends too, and
// asks the pool to take the Session over: the other pool process repairs
// the call (TOOL_OUTCOME_UNKNOWN), which turns it continued, within the
// release bound and the pool's take-over. A late answer is then admitted
// once and settles it.
func TestRestartPoolRepairsTheCallOfARuntimeKilledMidWait(t *testing.T) {
	t.Parallel()
	w := newRestartWorld(t, `ask db "Which database?" options Postgres,SQLite timeout 60
say I will go on without the answer for now.
on late answer say Switching to {answers} for {callId}.`)
	first := w.poolAgent("--session", restartSession, "--prompt", "Set up the service.")
	other := w.poolAgent()
	w.awaitView("call_1 open", callIs("call_1", projection.Open))
	dead := w.liveRoot()

	first.kill()
	killed := time.Now()
	w.awaitView("call_1 continued", callIs("call_1", projection.Continued))
	took := time.Since(killed)
	t.Logf("call_1 answerable %v after SIGKILL (release bound %v)", took.Round(time.Millisecond), poolBound)
	require.Less(t, took, poolBound+worker.DefaultResumeTimeout, "answerable within the release bound and the pool's take-over")
	evts := w.Events(restartSession)
	result, repaired := repairedResult(evts, "call_1")
	require.True(t, repaired, "the pool process repaired the call:\n%s", runtimetest.Describe(evts))
	for _, e := range evts {
		if e.Body == result {
			t.Logf("the repair recorded %v after SIGKILL; the View continued %v after the repair", e.At.Sub(killed).Round(time.Millisecond), (took - e.At.Sub(killed)).Round(time.Millisecond))
		}
	}
	require.True(t, result.IsError)
	require.Equal(t, interruptedText, events.JoinText(result.Content))
	now := w.liveRoot()
	require.Equal(t, w.rootLeaseOf(other), liveroot.LeaseName(now.Instance), "the other pool process took the Session")
	require.Equal(t, dead.Epoch+1, now.Epoch)
	require.Eventually(t, func() bool {
		return strings.Contains(w.worker.log(), `msg="resumed session for an interrupted call"`)
	}, restartPatience, 10*time.Millisecond, "the worker logs why it resumed the Session")
	gone, resumedAt := logTime(t, w.worker.log(), `msg="caller gone; its waits aborted"`), logTime(t, w.worker.log(), `msg="resumed session for an interrupted call"`)
	t.Logf("the caller lease ended %v after SIGKILL; the pool took the Session over %v later", gone.Sub(killed).Round(time.Millisecond), resumedAt.Sub(gone).Round(time.Millisecond))

	res, err := w.user.Answer(w.ctx, holdover.AnswerRequest{Session: restartSession, CallID: "call_1", Answers: sqlite})
	require.NoError(t, err)
	require.True(t, res.Accepted)
	evts = w.awaitLateReaction()
	w.requireAdmitted(evts, res.MessageID)
	require.Len(t, admissions(evts, "call_1"), 1, "admitted once")
	w.requireSettledLate(evts)
	w.stop(other)
	w.stop(w.worker)
}

// logTime is the time of the first line of a text log that holds msg.
func logTime(t *testing.T, log, msg string) time.Time {
	t.Helper()
	for line := range strings.Lines(log) {
		if !strings.Contains(line, msg) {
			continue
		}
		stamp, ok := strings.CutPrefix(strings.Fields(line)[0], "time=")
		require.True(t, ok, "%q has no time", line)
		at, err := time.Parse(time.RFC3339Nano, stamp)
		require.NoError(t, err)
		return at
	}
	t.Fatalf("no log line holds %s", msg)
	return time.Time{}
}
