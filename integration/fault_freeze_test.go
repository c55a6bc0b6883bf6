package integration

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
)

// Fault tests with frozen processes (issue 8 item 5): a worker, an agent
// or a claim holder (the Answerer a gateway runs) is stopped with SIGSTOP
// while it holds waits, calls or claims, and continued 10 s later. A
// frozen process keeps its TCP connection, and with it every lease and
// claim, until the server's pings close it; a caller's backstop covers
// its owner's deadline meanwhile. These tests do not run in parallel:
// they measure timing against a 200 ms slack.

const (
	fzTimeout = 3 * time.Second
	fzFrozen  = 10 * time.Second
	fzSlack   = 200 * time.Millisecond
	// fzPingDetect is the longest the server takes to close a frozen
	// client: PingInterval × (MaxPingsOut+1).
	fzPingDetect = embedded.LivenessPingInterval * (embedded.LivenessMaxPingsOut + 1)
)

// newFreezeWorld is the foreground world on a server with the ping
// settings `holdover dev` uses, the in-process worker stopped: the worker
// under test is a process with a real clock.
func newFreezeWorld(t *testing.T) *fgWorld {
	t.Helper()
	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), MaxConsumers: -1,
		PingInterval: embedded.LivenessPingInterval, MaxPingsOut: embedded.LivenessMaxPingsOut})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	env := &embeddedtest.Env{Server: srv}
	env.Conn, env.JS = embeddedtest.Connect(t, srv.ClientURL())
	env.Topology, err = streams.Provision(context.Background(), env.JS, streams.Config{Memory: true})
	require.NoError(t, err)
	w := newFGWorldOn(t, env)
	w.worker.Stop()
	return w
}

func (p *fgProc) freeze(t testing.TB) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGSTOP))
}

func (p *fgProc) thaw(t testing.TB) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGCONT))
}

// fzStart starts faultproc like fgStart and hands every line it prints
// after "ready" to the returned channel.
func fzStart(t testing.TB, bin string, args ...string) (*fgProc, <-chan string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	p := fgSpawn(t, "faultproc "+args[0], cmd)
	lines := make(chan string, 1000)
	go func() {
		scan := bufio.NewScanner(stdout)
		for scan.Scan() {
			lines <- scan.Text()
		}
	}()
	select {
	case line := <-lines:
		require.True(t, strings.HasPrefix(line, "ready"), "faultproc said %q", line)
	case <-time.After(fgPatience):
		t.Fatal("faultproc did not get ready")
	}
	return p, lines
}

// sleepUntil positions a fault at a moment of the test's timeline.
func sleepUntil(at time.Time) { time.Sleep(time.Until(at)) }

// endsOnce collects cancel notices until every one of n requests has
// ended at the Clients and no worker lists one live, and checks none
// ended twice. It returns when each ended, by request id.
func (w *fgWorld) endsOnce(t *testing.T, rec *fgRecorder, sid string, n int) map[string]time.Time {
	t.Helper()
	ended := map[string]time.Time{}
	count := map[string]int{}
	require.Eventually(t, func() bool {
		for {
			select {
			case c := <-rec.cancels:
				count[c.requestID]++
				if _, ok := ended[c.requestID]; !ok {
					ended[c.requestID] = time.Now()
				}
				continue
			default:
			}
			break
		}
		live, err := w.agent.Inflight(context.Background(), sid)
		return err == nil && len(live) == 0 && len(ended) == n
	}, 2*fgPatience, 20*time.Millisecond, "every request ends at the Clients and no wait stays live")
	for id, c := range count {
		assert.Equal(t, 1, c, "request %s ended once at the Clients", id)
	}
	return ended
}

// askAll sends n timed calls of fzTimeout in Session s1 from the agent
// Client and returns once rec has seen each published: when they started,
// and where each call's result lands.
func (w *fgWorld) askAll(t *testing.T, rec *fgRecorder, ref *holdover.AgentRef, n int) (time.Time, []<-chan fgResult) {
	t.Helper()
	start := time.Now()
	done := make([]<-chan fgResult, n)
	for i := range n {
		done[i] = w.askTimed(context.Background(), w.agent, holdover.AskTimedRequest{
			Session: "s1", CallID: fmt.Sprintf("call-%d", i), Agent: ref, Questions: fgQuestions, TimeoutMs: fzTimeout.Milliseconds()})
	}
	for range n {
		rec.next(t)
	}
	return start, done
}

// A worker frozen 200 ms before the deadline of the timed calls it owns,
// for 10 s: its callers end those calls pending within the release bound
// of the deadline (the backstop asks the owner, which cannot answer), the
// other worker's calls end at the deadline, and after the thaw every
// request ends once and no wait is left.
func TestFaultFrozenWorkerEndsItsTimedCallsWithinTheBound(t *testing.T) {
	const calls = 20
	w := newFreezeWorld(t)
	bin := fgProcBinary(t)
	url := w.env.Server.ClientURL()
	victim := fgStart(t, bin, "worker", "-nats", url, "-bound", fgBound.String())
	fgStart(t, bin, "worker", "-nats", url, "-bound", fgBound.String())
	rec := w.watch("s1")
	ref := w.live("s1")

	start, done := w.askAll(t, rec, ref, calls)
	sleepUntil(start.Add(fzTimeout - 200*time.Millisecond))
	victim.freeze(t)
	frozeAt := time.Now()

	worst := -fzTimeout
	late := 0
	for i := range calls {
		r := fgWait(t, done[i])
		require.NoError(t, r.err)
		require.True(t, r.out.Pending, "call-%d", i)
		overrun := r.took - fzTimeout
		worst = max(worst, overrun)
		if overrun > fgBound/4 {
			late++
		}
	}
	t.Logf("%d of %d calls were the frozen worker's; the latest ended pending %v after its deadline (release bound %v)", late, calls, worst, fgBound)
	assert.Less(t, worst, fgBound+fzSlack)
	assert.Positive(t, late, "the frozen worker owned some of the calls")

	sleepUntil(frozeAt.Add(fzFrozen))
	victim.thaw(t)
	w.endsOnce(t, rec, "s1", calls)
}

// An agent frozen 200 ms before the deadline of its timed calls, for
// 10 s: the worker ends each wait at its deadline all the same, and after
// the thaw the agent has one outcome per call, pending.
func TestFaultFrozenAgentGetsOneOutcomePerCall(t *testing.T) {
	const calls = 10
	w := newFreezeWorld(t)
	bin := fgProcBinary(t)
	url := w.env.Server.ClientURL()
	fgStart(t, bin, "worker", "-nats", url, "-bound", fgBound.String())
	rec := w.watch("s1")
	ref := w.live("s1")
	victim, lines := fzStart(t, bin, "agent", "-nats", url, "-bound", fgBound.String(),
		"-session", "s1", "-instance", ref.Instance, "-epoch", fmt.Sprint(ref.Epoch),
		"-timed", fmt.Sprint(calls), "-timeout", fzTimeout.String(), "-report")
	started := map[string]time.Time{}
	first := time.Now()
	for range calls {
		d := rec.next(t)
		started[d.RequestID] = time.Now()
	}
	sleepUntil(first.Add(fzTimeout - 200*time.Millisecond))
	victim.freeze(t)
	frozeAt := time.Now()

	worst := -fzTimeout
	for range calls {
		c := rec.cancel(t)
		overrun := time.Since(started[c.requestID]) - fzTimeout
		worst = max(worst, overrun)
		assert.Equal(t, userquestions.ReasonExpired, c.reason)
	}
	t.Logf("the frozen agent's %d waits ended at most %v after their deadline (negative: before it, as seen from the Client)", calls, worst)
	assert.Less(t, worst, fgBound+fzSlack)

	sleepUntil(frozeAt.Add(fzFrozen))
	victim.thaw(t)
	seen := map[string]string{}
	for range calls {
		select {
		case line := <-lines:
			f := strings.Fields(line)
			require.Len(t, f, 4, "outcome line %q", line)
			require.NotContains(t, seen, f[1], "call %s has one outcome", f[1])
			seen[f[1]] = f[2]
		case <-time.After(fgPatience):
			t.Fatalf("the thawed agent reported %d of %d outcomes:\n%s", len(seen), calls, victim.log())
		}
	}
	for id, outcome := range seen {
		assert.Equal(t, "pending", outcome, "call %s", id)
	}
	live, err := w.agent.Inflight(context.Background(), "s1")
	require.NoError(t, err)
	assert.Empty(t, live)
}

// A claim holder (the Answerer a gateway runs) frozen while its claims
// pause the deadline (W2). Frozen early, the server closes its connection
// within fzPingDetect, its claims end a release bound later, and the waits
// run to their original deadline. Frozen just before the deadline, it
// still holds its consumers then; the worker asks it whether it is alive,
// and it cannot answer, so its claims are released and the waits end
// within the bound (issue 8). After the thaw every request ends once.
func TestFaultFrozenClaimHolderReleasesItsClaims(t *testing.T) {
	for _, tc := range []struct {
		name     string
		freezeAt time.Duration // after the calls were sent
	}{
		{"early", 500 * time.Millisecond},
		{"at the deadline", fzTimeout - 200*time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const calls, claimed = 10, 5
			w := newFreezeWorld(t)
			bin := fgProcBinary(t)
			url := w.env.Server.ClientURL()
			fgStart(t, bin, "worker", "-nats", url, "-bound", fgBound.String())
			rec := w.watch("s1")
			ref := w.live("s1")

			start, done := w.askAll(t, rec, ref, calls)
			victim := fgStart(t, bin, "claimer", "-nats", url, "-bound", fgBound.String(), "-session", "s1", "-claims", fmt.Sprint(claimed))
			require.Less(t, time.Since(start), tc.freezeAt, "the claims are held before the freeze")
			sleepUntil(start.Add(tc.freezeAt))
			victim.freeze(t)
			frozeAt := time.Now()

			released := make(chan time.Duration, 1)
			go func() {
				for time.Since(frozeAt) < fgPatience {
					if n := claimCount(t, w); n == 0 {
						released <- time.Since(frozeAt)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
			worst := -fzTimeout
			for i := range calls {
				r := fgWait(t, done[i])
				require.NoError(t, r.err)
				require.True(t, r.out.Pending, "call-%d", i)
				worst = max(worst, r.took-fzTimeout)
			}
			select {
			case took := <-released:
				t.Logf("claims released %v after the freeze (ping detection at most %v, release bound %v); the latest call ended %v after its deadline",
					took, fzPingDetect, fgBound, worst)
				assert.Less(t, took, fzPingDetect+fgBound+fzSlack)
			case <-time.After(fgPatience):
				t.Fatal("the frozen holder's claims were never released")
			}
			assert.Less(t, worst, fgBound+fzSlack)

			sleepUntil(frozeAt.Add(fzFrozen))
			victim.thaw(t)
			w.endsOnce(t, rec, "s1", calls)
		})
	}
}

// claimCount is how many Client claims the CLAIMS stream holds.
func claimCount(t testing.TB, w *fgWorld) int {
	names := w.env.Topology.Claims.ConsumerNames(context.Background())
	n := 0
	for name := range names.Name() {
		if strings.HasPrefix(name, "claim~") {
			n++
		}
	}
	return n
}
