package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/answerer"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/steer/steertest"
	"github.com/holdover-dev/holdover/userquestions"
)

// Fault tests with separate processes: a worker or an agent is SIGKILLed
// mid-wait, so nothing it held is released by a goodbye; only NATS
// noticing its connection is gone ends its leases.

// fgSlack is what the tests allow beyond the release bound for NATS to
// delete a lease and for everyone watching to act on it, on a loaded
// machine under -race. The benchmark reports the actual figure.
const fgSlack = 3 * time.Second

// fgProcBinary builds cmd/faultproc for this test; the build cache makes
// every build after the first one quick.
func fgProcBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "faultproc")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/holdover-dev/holdover/integration/cmd/faultproc").CombinedOutput()
	require.NoError(t, err, "build faultproc:\n%s", out)
	return bin
}

// fgProc is a process a test started: faultproc, or a shipped binary.
type fgProc struct {
	cmd    *exec.Cmd
	said   string // what followed "ready" on its first line
	stderr bytes.Buffer
	mu     sync.Mutex
}

// fgStart starts faultproc with args and waits for its "ready" line. The
// process is killed when the test ends, and its log shown if it failed.
func fgStart(t testing.TB, bin string, args ...string) *fgProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	p := fgSpawn(t, "faultproc "+args[0], cmd)
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		rest, ok := strings.CutPrefix(line, "ready")
		if err == nil && !ok {
			err = fmt.Errorf("faultproc said %q", line)
		}
		p.said = strings.TrimSpace(rest)
		ready <- err
	}()
	select {
	case err := <-ready:
		require.NoError(t, err)
	case <-time.After(fgPatience):
		t.Fatal("faultproc did not get ready")
	}
	return p
}

// fgSpawn starts cmd, keeping what it writes on stderr. The process is
// killed when the test ends, and its log shown under name if it failed.
func fgSpawn(t testing.TB, name string, cmd *exec.Cmd) *fgProc {
	t.Helper()
	p := &fgProc{cmd: cmd}
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, buf: &p.stderr}
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.log())
		}
	})
	return p
}

// log is what the process wrote on stderr so far.
func (p *fgProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// kill SIGKILLs the process: no deferred call, no goodbye to NATS.
func (p *fgProc) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}

// A worker SIGKILLed while it owns 200 live waits leaves no agent call
// hanging: every call ends pending within the release bound, every Client
// drops the dead worker's requests and releases its claims, and every
// question, recorded pending, is answered late through a second worker.
func TestFaultWorkerKilledDuringLiveWaits(t *testing.T) {
	t.Parallel()
	const sessions, calls = 20, 10
	w := newFGWorld(t)
	w.worker.Stop() // the worker under test is a process of its own
	url := w.env.Server.ClientURL()
	victim := fgStart(t, fgProcBinary(t), "worker", "-nats", url, "-creds", w.creds(auth.Worker), "-bound", fgBound.String())

	log := sessionlog.New(w.env.JS, w.env.Topology.Sessions)
	ans := w.answerer(w.as(auth.Gateway))
	qs := steertest.Questions("q1", "q2")
	type call struct {
		s    *steertest.Session
		id   string
		done <-chan fgResult
	}
	var all []call
	recs := make([]*fgRecorder, sessions)
	for i := range sessions {
		sid := fmt.Sprintf("s%d", i)
		recs[i] = w.watchWith(ans, sid)
		ref := w.live(sid)
		s := steertest.NewSession(t, log, sid)
		s.Header(true)
		for j := range calls {
			id := fmt.Sprintf("call-%d", j)
			s.Ask(id, qs) // the agent records the call before it waits on it
			all = append(all, call{s: s, id: id, done: w.askTimed(context.Background(), w.agent,
				holdover.AskTimedRequest{Session: sid, CallID: id, Agent: ref, Questions: qs, TimeoutMs: 3_600_000})})
		}
	}
	var claims []*answerer.Claim
	for _, rec := range recs {
		for j := range calls {
			d := rec.next(t)
			if j%3 == 0 {
				c, _ := fgClaim(t, d)
				claims = append(claims, c)
			}
		}
	}

	killed := time.Now()
	victim.kill()
	var slowest time.Duration
	for _, c := range all {
		r := fgWait(t, c.done)
		require.NoError(t, r.err)
		require.True(t, r.out.Pending, "%s/%s", c.s.ID, c.id)
		slowest = max(slowest, time.Since(killed))
	}
	t.Logf("%d calls pending at most %v after the worker was killed (bound %v)", len(all), slowest, fgBound)
	assert.Less(t, slowest, fgBound+fgSlack)
	for _, rec := range recs {
		for range calls {
			assert.Equal(t, userquestions.ReasonOwnerLost, rec.cancel(t).reason)
		}
	}
	for _, c := range claims {
		require.Eventually(t, func() bool {
			_, err := w.env.JS.Consumer(context.Background(), "CLAIMS", c.Name())
			return err != nil
		}, fgPatience, 10*time.Millisecond, "the Client released its claim on a lost request")
	}

	// The agent records the pending results; a second worker takes the
	// late answers (D6).
	for _, c := range all {
		c.s.Pending(c.id)
	}
	w.startWorker(w.as(auth.Worker))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	user := newUser(t, w.as(auth.Gateway), userquestions.DefaultCallTimeout) // answering is a gateway's right, never an agent's
	for _, c := range all {
		res, err := user.Answer(ctx, holdover.AnswerRequest{Session: c.s.ID, CallID: c.id, Answers: steertest.Choose(qs)})
		require.NoError(t, err, "%s/%s", c.s.ID, c.id)
		require.True(t, res.Accepted, "%s/%s is answerable", c.s.ID, c.id)
	}
}

// An agent SIGKILLed while it waits on timed and keyed calls leaves no
// orphan wait: its lease ends, and the worker ends every one of its waits
// with ASK_ABORTED, closing their claims and leaving no timer.
func TestFaultAgentKilledMidWait(t *testing.T) {
	t.Parallel()
	const timed, keyed = 20, 5
	w := newFGWorld(t)
	rec := w.watch("s1")
	ref := w.live("s1")
	victim := fgStart(t, fgProcBinary(t), "agent", "-nats", w.env.Server.ClientURL(), "-creds", w.creds(auth.Agent), "-bound", fgBound.String(),
		"-session", "s1", "-instance", ref.Instance, "-epoch", fmt.Sprint(ref.Epoch),
		"-timed", fmt.Sprint(timed), "-keyed", fmt.Sprint(keyed))

	var claims []*answerer.Claim
	for i := range timed + keyed {
		d := rec.next(t)
		if i%4 == 0 {
			c, _ := fgClaim(t, d)
			claims = append(claims, c)
		}
	}
	w.waitsAre(w.worker, timed+keyed)

	killed := time.Now()
	victim.kill()
	for range timed + keyed {
		assert.Equal(t, userquestions.ReasonAborted, rec.cancel(t).reason)
	}
	took := time.Since(killed)
	t.Logf("%d waits aborted %v after the agent was killed (bound %v)", timed+keyed, took, fgBound)
	assert.Less(t, took, fgBound+fgSlack)
	for _, c := range claims {
		fgClosed(t, c)
	}
	w.waitsAre(w.worker, 0)
	assert.Equal(t, 0, fgTimers(w.clock), "no deadline timer is left")
}

// fgLeaseless starts a faultproc that asks a keyed blocking ask and an
// askTimed of sid with no caller lease, as the nats CLI would, and returns
// it with what each call was answered.
func fgLeaseless(t *testing.T, bin, url, creds, sid string, ref *holdover.AgentRef) (*fgProc, map[string]holdover.Error) {
	t.Helper()
	p := fgStart(t, bin, "leaseless", "-nats", url, "-creds", creds, "-session", sid, "-instance", ref.Instance, "-epoch", fmt.Sprint(ref.Epoch))
	var said map[string]struct {
		holdover.Error
		TookMs int64 `json:"tookMs"`
	}
	require.NoError(t, json.Unmarshal([]byte(p.said), &said), p.said)
	out := map[string]holdover.Error{}
	for _, op := range []string{userquestions.OpAsk, userquestions.OpAskTimed} {
		a, ok := said[op]
		require.True(t, ok, "%s: %s", op, p.said)
		t.Logf("a lease-less %s was answered %s after %d ms", op, a.Code, a.TookMs)
		// Refused at once: sooner than any lease could tell it of a dead
		// worker, and not at the end of the hour's deadline, nor of a
		// blocking ask that never ends.
		assert.Less(t, time.Duration(a.TookMs)*time.Millisecond, fgBound)
		out[op] = a.Error
	}
	return p, out
}

// Issue 8: a caller without a lease (the nats CLI, a runtime that does not
// know of it) is refused BAD_REQUEST, naming the header, before any wait
// exists. A SIGKILL of it then leaves nothing: no wait, no inflight entry,
// and its call ids are free for the next caller (no DUPLICATE_WAIT).
func TestFaultLeaselessCallerKilled(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	rec := w.watch("s1")
	ref := w.live("s1")
	victim, refused := fgLeaseless(t, fgProcBinary(t), w.env.Server.ClientURL(), w.creds(auth.Agent), "s1", ref)
	for op, e := range refused {
		assert.Equal(t, holdover.CodeBadRequest, e.Code, op)
		assert.Contains(t, e.Message, userquestions.HeaderCallerLease, op)
		assert.Contains(t, e.Message, "caller is gone", op+": the message says why")
	}
	victim.kill()

	w.waitsAre(w.worker, 0)
	listed, err := w.client().Inflight(context.Background(), "s1")
	require.NoError(t, err)
	assert.Empty(t, listed)
	select {
	case d := <-rec.requests:
		t.Fatalf("a refused call reached the Clients: %+v", d.WaterfallRequest)
	default:
	}

	agent := w.client()
	keyed := w.ask(context.Background(), agent, holdover.AskRequest{Session: "s1", CallID: "keyed", Agent: ref, Questions: fgQuestions})
	timed := w.askTimed(context.Background(), agent, fgTimed("s1", "timed", ref, 60_000))
	for range 2 {
		require.NoError(t, rec.next(t).Settle(fgAnswer("yes")))
	}
	assert.NoError(t, fgWait(t, keyed).err, "the call id is free")
	r := fgWait(t, timed)
	require.NoError(t, r.err, "the call id is free")
	assert.Len(t, r.out.Answers, 1)
}

// Issue 8: a lease-less caller learns at once that it was refused, so a
// worker SIGKILLed afterwards leaves it waiting on nothing; a leased
// caller whose worker is SIGKILLed turns pending within the release bound
// (TestFaultWorkerKilledDuringLiveWaits).
func TestFaultLeaselessCallerWhoseWorkerIsKilled(t *testing.T) {
	t.Parallel()
	w := newFGWorld(t)
	w.worker.Stop() // the worker under test is a process of its own
	url := w.env.Server.ClientURL()
	bin := fgProcBinary(t)
	victim := fgStart(t, bin, "worker", "-nats", url, "-creds", w.creds(auth.Worker), "-bound", fgBound.String())
	ref := w.live("s1")

	_, refused := fgLeaseless(t, bin, url, w.creds(auth.Agent), "s1", ref)
	for op, e := range refused {
		assert.Equal(t, holdover.CodeBadRequest, e.Code, op)
		assert.Contains(t, e.Message, userquestions.HeaderCallerLease, op)
	}
	victim.kill() // the caller has its answer already: nothing of it waits on the worker
}
