package worker

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/caller"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/streams"
	"github.com/holdover-dev/holdover/userquestions"
	"github.com/holdover-dev/holdover/waiter"
)

// deafen cuts the worker off from claim advisories, as a disconnect would:
// what happens next is only found by reconciliation.
func deafen(t *testing.T, fg *foregroundHalf) {
	t.Helper()
	require.NoError(t, fg.adv.Unsubscribe())
	require.NoError(t, fg.nc.Flush())
}

// A claim whose CREATED advisory was missed is found by the listing and
// gets its one frame; one whose DELETED advisory was missed is released,
// and the overdue wait expires at once (W2, W3).
func TestReconcileFindsClaimsWhoseAdvisoriesWereMissed(t *testing.T) {
	f := newFGTest(t)
	fg := f.svc.foreground
	rec := f.watch("s1")
	done := f.askTimed(f.agent, "s1", "call-1", 5000)
	d := rec.next(t)
	deafen(t, fg)

	claim, err := d.AttachWait(context.Background())
	require.NoError(t, err)
	fg.reconcileClaims(context.Background())
	assert.Equal(t, 5*time.Second, frame(t, claim))
	fg.reconcileClaims(context.Background())
	assert.Equal(t, 1, heldClaims(fg, "s1", "call-1"), "a second listing claims nothing twice")

	f.clock.Advance(time.Minute)
	require.NoError(t, claim.Release(context.Background()))
	select {
	case err := <-done:
		t.Fatalf("the wait ended without the worker hearing of the release: %v", err)
	default:
	}
	fg.reconcileClaims(context.Background())
	require.NoError(t, ended(t, done), "pending")
}

func heldClaims(fg *foregroundHalf, sid, call string) int {
	w, ok := fg.reg.Get(waiter.Key{Session: sid, CallID: call})
	if !ok {
		return 0
	}
	return len(w.ClaimsBefore(math.MaxUint64))
}

// A reconnect reconciles at once.
func TestReconnectReconciles(t *testing.T) {
	f := newFGTest(t)
	fg := f.svc.foreground
	rec := f.watch("s1")
	f.askTimed(f.agent, "s1", "call-1", 5000)
	d := rec.next(t)
	deafen(t, fg)
	claim, err := d.AttachWait(context.Background())
	require.NoError(t, err)

	require.NoError(t, f.env.Conn.ForceReconnect())
	assert.Equal(t, 5*time.Second, frame(t, claim))
}

// A caller whose lease vanished while the worker was not listening leaves
// no wait behind once the worker reconciles (ASK_ABORTED).
func TestReconcileEndsTheWaitsOfAGoneCaller(t *testing.T) {
	f := newFGTest(t)
	fg := f.svc.foreground
	rec := f.watch("s1")
	nc, _ := embeddedtest.Connect(t, f.env.Server.ClientURL())
	agent, err := caller.New(context.Background(), nc, caller.Config{ReleaseBound: time.Second})
	require.NoError(t, err)
	f.askTimed(agent, "s1", "call-1", 5000)
	rec.next(t)
	deafen(t, fg)

	lease := agent.Lease()
	nc.Close()
	require.Eventually(t, func() bool {
		alive, err := leases.Exists(context.Background(), fg.js, lease)
		return err == nil && !alive
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, f.svc.LiveWaits(), "nobody told the worker")
	fg.reconcileClaims(context.Background())
	require.Eventually(t, func() bool { return f.svc.LiveWaits() == 0 }, 10*time.Second, time.Millisecond)
}

// A worker whose own lease is gone has been given up by its callers: it
// ends its waits, and holds its lease again for the next ones.
func TestReconcileHoldsALostWorkerLeaseAgain(t *testing.T) {
	f := newFGTest(t)
	fg := f.svc.foreground
	rec := f.watch("s1")
	done := f.askTimed(f.agent, "s1", "call-1", 5000)
	rec.next(t)
	deafen(t, fg)

	require.NoError(t, f.env.JS.DeleteConsumer(context.Background(), "CLAIMS", fg.leaseName))
	require.NoError(t, ended(t, done), "the caller saw the lease go: pending")
	fg.reconcileClaims(context.Background())
	assert.Equal(t, 0, f.svc.LiveWaits())
	alive, err := leases.Exists(context.Background(), fg.js, fg.leaseName)
	require.NoError(t, err)
	assert.True(t, alive)
}

// probes returns how many claim probes of f's worker ended with result.
func (f *fgTest) probes(result string) float64 {
	var m dto.Metric
	require.NoError(f.t, f.svc.foreground.probed.WithLabelValues(result).Write(&m))
	return m.GetCounter().GetValue()
}

// askStatus asks fg, as a caller past its call's deadline does, whether
// the request is live (caller/backstop.go).
func askStatus(t *testing.T, f *fgTest, requestID string) string {
	t.Helper()
	fg := f.svc.foreground
	reply, err := f.env.Conn.Request(userquestions.WorkerSubject(fg.leaseName, userquestions.VerbStatus), []byte(requestID), 10*time.Second)
	require.NoError(t, err)
	return string(reply.Data)
}

// W2, issue 8: past the deadline, when the caller asks whether its call
// is live, the worker asks each claim's holder whether it is alive; an
// Answerer that answers keeps its claim, and its answer, however late, is
// the call's result.
func TestAClaimHolderThatAnswersTheProbeKeepsTheWait(t *testing.T) {
	f := newFGTest(t)
	fg := f.svc.foreground
	rec := f.watch("s1")
	agent := f.live("s1")
	got := make(chan holdover.Outcome, 1)
	go func() {
		out, err := f.agent.AskTimed(context.Background(), holdover.AskTimedRequest{Session: "s1", CallID: "call-1", Agent: agent, Questions: q1, TimeoutMs: 60_000})
		assert.NoError(t, err)
		got <- out
	}()
	d := rec.next(t)
	claim, err := d.AttachWait(context.Background())
	require.NoError(t, err)
	frame(t, claim)

	assert.Equal(t, "live", askStatus(t, f, d.RequestID))
	assert.Zero(t, f.probes(probeAlive), "before the deadline a claim is not probed")
	f.clock.Advance(2 * time.Minute)
	assert.Equal(t, "live", askStatus(t, f, d.RequestID)) // past the deadline: a probe, answered
	require.Eventually(t, func() bool { return f.probes(probeAlive) >= 1 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, 1, heldClaims(fg, "s1", "call-1"))
	answers := []holdover.Answer{{ID: "q1", Selected: []string{"yes"}}}
	require.NoError(t, d.Settle(answers))
	select {
	case out := <-got:
		assert.False(t, out.Pending)
		assert.Equal(t, answers, out.Answers)
	case <-time.After(10 * time.Second):
		t.Fatal("the answer did not reach the caller")
	}
	assert.Zero(t, f.probes(probeReleased))
}

// W2, issue 8: a holder frozen past the deadline (its connection open, its
// subscription not served) does not answer the probe: its claim is
// released and deleted, and the call ends pending a quarter of a release
// bound after the caller asked.
func TestAFrozenClaimHolderLosesItsClaimPastTheDeadline(t *testing.T) {
	f := newFGTest(t)
	fg := f.svc.foreground
	rec := f.watch("s1")
	done := f.askTimed(f.agent, "s1", "call-1", 60_000)
	d := rec.next(t)

	name, subject, err := userquestions.NewClaimName("s1", "call-1")
	require.NoError(t, err)
	nc, js := embeddedtest.Connect(t, f.env.Server.ClientURL())
	thaw := make(chan struct{})
	frames := make(chan []byte, 4)
	frozen := false // the callbacks run one at a time
	_, err = leases.HoldConsumer(context.Background(), nc, js, name, subject, time.Second, nil, func(m *nats.Msg) {
		if userquestions.IsProbe(m) {
			return // answered by nobody
		}
		frames <- m.Data
		if !frozen {
			frozen = true
			<-thaw // from its first frame on
		}
	})
	require.NoError(t, err)
	select {
	case <-frames: // its remainingMs frame
	case <-time.After(10 * time.Second):
		t.Fatal("no remainingMs frame")
	}
	probes := spyOnProbes(t, f, name)

	f.clock.Advance(2 * time.Minute)
	assert.Equal(t, "live", askStatus(t, f, d.RequestID))
	select {
	case <-probes:
	case <-time.After(10 * time.Second):
		t.Fatal("the holder was not probed past the deadline")
	}
	assert.Equal(t, 1, f.svc.LiveWaits(), "the holder has its patience")
	assert.Less(t, fg.probePatience(), fg.bound/2, "ended before the caller asks again")
	f.clock.Advance(fg.probePatience())
	require.NoError(t, ended(t, done), "pending")
	assert.Equal(t, 1.0, f.probes(probeReleased))
	require.Eventually(t, func() bool {
		alive, err := leases.Exists(context.Background(), f.env.JS, name)
		return err == nil && !alive
	}, 10*time.Second, 5*time.Millisecond, "the released claim is deleted, after the call ended")

	close(thaw) // the thawed holder reads the closing frame: it holds nothing (W4)
	select {
	case data := <-frames:
		assert.JSONEq(t, string(userquestions.ClosingFrame), string(data))
	case <-time.After(10 * time.Second):
		t.Fatal("the thawed holder got no closing frame")
	}
}

// A consumer named like a Client's claim that is not one (here the
// attack of issue 24: a durable pull consumer an agent creates through its
// lease right) never holds the wait: the worker deletes it and the timed
// wait ends at its deadline on the waiter's clock, 0 ms past it.
func TestAForgedClaimHoldsNoWait(t *testing.T) {
	f := newFGTest(t)
	fg := f.svc.foreground
	rec := f.watch("s1")
	done := f.askTimed(f.agent, "s1", "call-1", 20_000)
	rec.next(t)

	name := "claim~s1~call-1~X"
	_, ok := userquestions.ParseClaim(name)
	require.True(t, ok, "named like a claim")
	body := []byte(`{"stream_name":"CLAIMS","config":{"name":"` + name + `","durable_name":"` + name + `","filter_subject":"holdover.claim.lease.caller.x","ack_policy":"explicit"}}`)
	msg, err := f.env.Conn.Request("$JS.API.CONSUMER.CREATE.CLAIMS."+name+".holdover.claim.lease.caller.x", body, 10*time.Second)
	require.NoError(t, err)
	require.NotContains(t, string(msg.Data), `"error"`)

	require.Eventually(t, func() bool {
		alive, err := leases.Exists(context.Background(), f.env.JS, name)
		return err == nil && !alive
	}, 10*time.Second, 5*time.Millisecond, "the forged claim is deleted")
	assert.Equal(t, 0, heldClaims(fg, "s1", "call-1"), "it claims nothing")
	fg.reconcileClaims(context.Background())
	assert.Equal(t, 0, heldClaims(fg, "s1", "call-1"), "nor does a listing")
	var forged dto.Metric
	require.NoError(t, fg.forged.WithLabelValues().Write(&forged))
	assert.Equal(t, 1.0, forged.GetCounter().GetValue())

	f.clock.Advance(20 * time.Second) // exactly the deadline: 0 ms past it
	require.NoError(t, ended(t, done), "pending")
}

// spyOnProbes returns a channel that gets each probe the worker sends the
// holder of the claim name: a second subscriber on the claim's deliver
// subject sees what its frozen holder cannot read.
func spyOnProbes(t *testing.T, f *fgTest, name string) <-chan struct{} {
	t.Helper()
	c, err := f.env.JS.PushConsumer(context.Background(), streams.ClaimsStream, name)
	require.NoError(t, err)
	nc, _ := embeddedtest.Connect(t, f.env.Server.ClientURL())
	probes := make(chan struct{}, 4)
	_, err = nc.Subscribe(c.CachedInfo().Config.DeliverSubject, func(m *nats.Msg) {
		if userquestions.IsProbe(m) {
			probes <- struct{}{}
		}
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	return probes
}
